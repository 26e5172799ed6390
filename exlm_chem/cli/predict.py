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

from exlm_chem.cli.base import Subcommand, add_run_options
from exlm_chem.cli.inputs import (
    CliInput,
    add_feature_columns_argument,
    add_input_arguments,
    open_input,
)
from exlm_chem.sklearn.prediction import (
    input_feature_columns,
    load_estimator,
    output_names,
    predict_values,
    saved_feature_columns,
)
from exlm_chem.threads import set_threads

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
        add_run_options(parser, device=None)

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
        # the columns the model was fitted with, from this input (its metadata says which)
        required = input_feature_columns(saved_feature_columns(args.model),
                                         args.feature_columns)
        rows = open_input(args.input, args.smiles_column, args.keep_columns,
                          encoding=args.encoding, more=required)
        keep = [c for c in dict.fromkeys(args.keep_columns) if c != args.smiles_column]
        est = load_estimator(args.model)
        if args.device:
            est.set_params(device=args.device)
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

    with tqdm(total=rows.table.n_rows, unit="mol", desc="predict",
              disable=not args.progress) as bar:
        for frame, smiles in rows.chunks(args.chunk_size):
            columns = frame[features].to_numpy(dtype=object) if features else None
            out = predict_values(est, smiles, columns)  # the chunk's one SMILES check
            yield pd.DataFrame({
                "row": frame.index.to_numpy(dtype=np.int64),
                **{c: frame[c].to_numpy(dtype=object) for c in keep},
                "valid": out.valid,
                "invalid_reason": [r or "" for r in out.reasons],
                **{name: out.values[:, j] for j, name in enumerate(names)},
            })
            bar.update(len(smiles))
