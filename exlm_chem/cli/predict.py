"""``exlm-chem predict``: a saved model + a table of SMILES -> one prediction row per input row.

Columns: ``row`` (0-based data row of the input), the ``--keep-columns``, ``valid``,
``invalid_reason`` (RDKit's own message), then one column per target, named after it: the
positive-class probability (classifier) or the predicted value (regressor); NaN on invalid
rows. The input (CSV, ``.smi`` or Parquet) is read and the output written in chunks,
atomically (temporary name, renamed at the end).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from exlm_chem.cli.base import Subcommand
from exlm_chem.cli.inputs import (
    CliInput,
    add_feature_columns_argument,
    add_input_arguments,
    open_input,
)
from exlm_chem.sklearn.prediction import (
    feature_columns,
    input_feature_columns,
    load_estimator,
    output_names,
    predict_values,
)
from exlm_chem.threads import add_threads_option, set_threads

__all__ = ["PredictCommand", "load_estimator", "output_names", "predict_values"]


class PredictCommand(Subcommand):
    name = "predict"
    help = "predict with a model saved by `exlm-chem fit` (one row per input row)"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("model", help="directory written by `exlm-chem fit`")
        parser.add_argument("input", help="molecules: .csv[.gz], .smi[.gz] or .parquet")
        parser.add_argument("--out", required=True, help="output file: .csv or .parquet")
        add_input_arguments(parser)
        add_feature_columns_argument(parser)
        parser.add_argument("--chunk-size", type=int, default=8192,
                            help="input rows read and written at a time")
        parser.add_argument("--device", default=None, help="auto | cpu | cuda[:i]")
        add_threads_option(parser)
        parser.add_argument("--no-progress", dest="progress", action="store_false")

    @classmethod
    def run(cls, args: argparse.Namespace) -> int:
        set_threads(args.threads)
        from exlm_chem.cli.outputs import RESERVED_COLUMNS, TableSink, output_format
        from exlm_chem.cli.tally import RowTally
        from exlm_chem.files.safe_write import atomic_path, check_output_file

        out = Path(args.out)
        fmt = output_format(out, (".csv", ".parquet"))
        if args.chunk_size < 1:
            raise ValueError(f"--chunk-size must be positive, got {args.chunk_size}")
        check_output_file(out)  # before any work: a result that cannot be written is lost
        rows = open_input(args.input, args.smiles_column, args.keep_columns,
                          encoding=args.encoding)
        keep = rows.columns
        est = load_estimator(args.model)
        if args.device:
            est.set_params(device=args.device)
        required = input_feature_columns(feature_columns(est), args.feature_columns)
        if required:  # the columns the model was fitted with, from this input
            rows = open_input(args.input, args.smiles_column, keep, encoding=args.encoding,
                              more=required)
        features = [c for cols in required.values() for c in cols]
        names = output_names(est)
        clash = [c for c in keep if c in (*RESERVED_COLUMNS, *names)]
        if clash:
            raise ValueError(f"--keep-columns {clash} clash with output columns "
                             f"{', '.join((*RESERVED_COLUMNS, *names))}")

        layout = {"row": "int64", **dict.fromkeys(keep, "string"), "valid": "bool",
                  "invalid_reason": "string", **dict.fromkeys(names, "float64")}
        tally = RowTally("predict")
        with atomic_path(out) as tmp:
            sink = TableSink(tmp, fmt, layout)
            try:
                for frame in _predicted_chunks(est, rows, args, names, keep, features):
                    sink.write(frame)
                    tally.add(len(frame), len(frame), frame["invalid_reason"])
            finally:
                sink.close()
        print(tally.line(args.input, f"wrote {tally.written} rows ({', '.join(names)}) "
                                     f"to {out}"))
        return tally.exit_code(args.fail_on_invalid)


def _predicted_chunks(est: Any, rows: CliInput, args: argparse.Namespace,
                      names: list[str], keep: list[str], features: list[str]
                      ) -> Iterator[Any]:
    """Output DataFrames, one per input chunk, in the output's column order; ``features``:
    the input columns holding the model's feature columns, in its order."""
    import numpy as np
    import pandas as pd
    from tqdm.auto import tqdm

    from exlm_chem.data.featurize import check_smiles

    with tqdm(total=rows.table.n_rows, unit="mol", desc="predict",
              disable=not args.progress) as bar:
        for frame, smiles in rows.chunks(args.chunk_size):
            checked = check_smiles(smiles)
            values = np.full((len(smiles), len(names)), np.nan)  # [n, tasks]
            valid = np.flatnonzero(checked.valid)
            if valid.size:  # reasons come from this check; the model sees valid rows
                columns = frame[features].to_numpy(dtype=object)[valid] if features else None
                values[valid] = predict_values(est, [smiles[i] for i in valid], columns)
            yield pd.DataFrame({
                "row": frame.index.to_numpy(dtype=np.int64),
                **{c: frame[c].to_numpy(dtype=object) for c in keep},
                "valid": checked.valid,
                "invalid_reason": [r or "" for r in checked.reasons],
                **{name: values[:, j] for j, name in enumerate(names)},
            })
            bar.update(len(smiles))
