"""``exlm-chem predict``: a saved model + a CSV of SMILES -> one prediction row per input row.

Columns: ``row`` (0-based data row of the input), the ``--keep-columns``, ``valid``,
``invalid_reason``, then one column per target, named after it: the positive-class
probability (classifier) or the predicted value (regressor); NaN on invalid rows. The
CSV is read and written in chunks, atomically (temporary name, renamed at the end).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from exlm_chem.cli.base import Subcommand
from exlm_chem.threads import add_threads_option, set_threads


def load_estimator(model_dir: str | Path) -> Any:
    """The classifier or regressor saved in ``model_dir`` (its metadata says which)."""
    from exlm_chem.errors import CheckpointError
    from exlm_chem.estimator import ExLMMoleculeClassifier, ExLMMoleculeRegressor
    from exlm_chem.model.checkpoint_format import ESTIMATOR_FORMAT, read_metadata

    classes = {c.__name__: c for c in (ExLMMoleculeClassifier, ExLMMoleculeRegressor)}
    meta, _ = read_metadata(Path(model_dir), ESTIMATOR_FORMAT)  # names what is wrong
    kind = meta.get("estimator")
    if kind not in classes:
        raise CheckpointError(f"{Path(model_dir) / 'metadata.json'}: estimator {kind!r} is "
                              f"none of {sorted(classes)}")
    return classes[kind].load(model_dir)


def output_names(est: Any) -> list[str]:
    """One name per output column: the target names the model was fitted with."""
    if est.task_names_:
        return list(est.task_names_)
    if not est.multitask_:  # fitted from Python with a 1-D y
        return ["probability" if hasattr(est, "classes_") else "prediction"]
    return [f"task_{i}" for i in range(est.n_tasks_)]


def predict_values(est: Any, smiles: list[Any]) -> Any:
    """[n, n_outputs] float64: positive probabilities or values; NaN rows where invalid."""
    import numpy as np

    if hasattr(est, "predict_proba"):
        p = est.predict_proba(smiles, on_invalid="nan")
        return p if est.multitask_ else p[:, 1:]  # binary: P(classes_[1])
    values = est.predict(smiles, on_invalid="nan")
    return values.reshape(len(smiles), -1).astype(np.float64)


class PredictCommand(Subcommand):
    name = "predict"
    help = "predict with a model saved by `exlm-chem fit` (one row per input row)"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("model", help="directory written by `exlm-chem fit`")
        parser.add_argument("input", help="CSV file with a SMILES column (.csv or .csv.gz)")
        parser.add_argument("--smiles-column", default="smiles")
        parser.add_argument("--out", required=True, help="output file: .csv or .parquet")
        parser.add_argument("--keep-columns", nargs="+", default=[],
                            help="input columns to copy to the output")
        parser.add_argument("--chunk-size", type=int, default=8192,
                            help="CSV rows read and written at a time")
        parser.add_argument("--device", default=None, help="auto | cpu | cuda[:i]")
        add_threads_option(parser)
        parser.add_argument("--no-progress", dest="progress", action="store_false")

    @classmethod
    def run(cls, args: argparse.Namespace) -> int:
        set_threads(args.threads)
        import numpy as np
        import pandas as pd
        from tqdm.auto import tqdm

        from exlm_chem.cli.embed import (
            RESERVED_COLUMNS,
            TableSink,
            atomic_output,
            count_rows,
            require_columns,
        )
        from exlm_chem.featurize import check_smiles
        from exlm_chem.safe_write import check_output_file

        out = Path(args.out)
        fmt = out.suffix.lower()
        if fmt not in (".csv", ".parquet"):
            raise ValueError(f"--out must end in .csv or .parquet, got {out.name!r}")
        if args.chunk_size < 1:
            raise ValueError(f"--chunk-size must be positive, got {args.chunk_size}")
        keep = list(dict.fromkeys(args.keep_columns))
        check_output_file(out)  # before any work: a result that cannot be written is lost
        require_columns(args.input, [args.smiles_column], "--smiles-column")
        require_columns(args.input, keep, "--keep-columns")
        est = load_estimator(args.model)
        if args.device:
            est.set_params(device=args.device)
        names = output_names(est)
        clash = [c for c in keep if c in (*RESERVED_COLUMNS, *names)]
        if clash:
            raise ValueError(f"--keep-columns {clash} clash with output columns "
                             f"{', '.join((*RESERVED_COLUMNS, *names))}")

        n_rows = count_rows(args.input, args.smiles_column)
        columns = list(dict.fromkeys([args.smiles_column, *keep]))
        reader = pd.read_csv(args.input, usecols=columns, dtype=str, chunksize=args.chunk_size)
        layout = {"row": "int64", **dict.fromkeys(keep, "string"), "valid": "bool",
                  "invalid_reason": "string", **dict.fromkeys(names, "float64")}
        written = 0
        with atomic_output(out) as tmp, tqdm(total=n_rows, unit="mol", desc="predict",
                                             disable=not args.progress) as bar:
            sink = TableSink(tmp, fmt, layout)
            try:
                for frame in reader:
                    smiles = [s if isinstance(s, str) else ""  # empty cell: empty SMILES
                              for s in frame[args.smiles_column]]
                    checked = check_smiles(smiles)
                    values = np.full((len(smiles), len(names)), np.nan)  # [n, tasks]
                    rows = np.flatnonzero(checked.valid)
                    if rows.size:  # reasons come from this check; the model sees valid rows
                        values[rows] = predict_values(est, [smiles[i] for i in rows])
                    table = pd.DataFrame({
                        "row": np.arange(written, written + len(smiles), dtype=np.int64),
                        **{c: frame[c].to_numpy(dtype=object) for c in keep},
                        "valid": checked.valid,
                        "invalid_reason": [r or "" for r in checked.reasons],
                        **{name: values[:, j] for j, name in enumerate(names)},
                    })
                    sink.write(table)
                    written += len(smiles)
                    bar.update(len(smiles))
            finally:
                sink.close()
        print(f"wrote {written} predictions ({', '.join(names)}) to {out}")
        return 0
