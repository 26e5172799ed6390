"""``exlm-chem screen``: predict or embed whole libraries on a Dask cluster.

The output is a directory of Parquet parts, one per input chunk, and a manifest; rerun
the same command to resume after a crash. See :func:`exlm_chem.screening.run.screen`.
"""

from __future__ import annotations

import argparse

from exlm_chem.cli.base import Subcommand
from exlm_chem.cli.inputs import add_feature_columns_argument
from exlm_chem.model.pooling import DEFAULT_POOLING, POOLINGS


class ScreenCommand(Subcommand):
    name = "screen"
    help = "predict or embed SMILES libraries on a Dask cluster (partitioned Parquet, resumable)"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("model", help="fitted estimator directory (`exlm-chem fit`), or a "
                                          "pre-trained checkpoint with --embed")
        parser.add_argument("inputs", nargs="+",
                            help="files or globs (quoted) of .smi, .csv(.gz) or .parquet")
        parser.add_argument("--out", required=True, help="output directory (parts + manifest)")
        parser.add_argument("--embed", action="store_true",
                            help="write embeddings emb_0.. instead of predictions")
        where = parser.add_mutually_exclusive_group()
        where.add_argument("--scheduler", default=None,
                           help="address of a running Dask scheduler, e.g. tcp://host:8786")
        where.add_argument("--workers", type=int, default=None,
                           help="start a local cluster of N single-threaded worker processes "
                                "(default: one per CPU core)")
        parser.add_argument("--chunk-rows", type=int, default=None,
                            help="rows per chunk and output part (default 10000); a killed "
                                 "worker loses at most one chunk of work")
        parser.add_argument("--smiles-column", default="smiles",
                            help="SMILES column of .csv and .parquet inputs")
        add_feature_columns_argument(parser)
        parser.add_argument("--pooling", choices=POOLINGS, default=DEFAULT_POOLING,
                            help="embedding pooling (--embed; default %(default)s)")
        parser.add_argument("--max-length", type=int, default=256,
                            help="tokens per molecule incl. BOS/EOS (--embed)")
        parser.add_argument("--batch-size", type=int, default=None,
                            help="molecules per forward pass")
        parser.add_argument("--device", default="auto",
                            help="worker device: auto | cpu | cuda[:i]")
        parser.add_argument("--no-progress", dest="progress", action="store_false")

    @classmethod
    def run(cls, args: argparse.Namespace) -> int:
        from exlm_chem.screening.feed import quiet_dask
        from exlm_chem.screening.run import screen

        quiet_dask()

        chunking = {} if args.chunk_rows is None else {"chunk_rows": args.chunk_rows}
        result = screen(args.model, args.inputs, args.out, embed=args.embed,
                        scheduler=args.scheduler, workers=args.workers, **chunking,
                        smiles_column=args.smiles_column,
                        feature_columns=args.feature_columns,
                        pooling=args.pooling, batch_size=args.batch_size,
                        max_length=args.max_length, device=args.device,
                        progress=args.progress)
        s = result.summary
        print(f"{result.path}: {s.rows} rows ({s.invalid_rows} invalid) in "
              f"{s.parts_written + s.parts_skipped} parts; this run computed "
              f"{s.rows_computed} rows in {s.parts_written} parts (skipped "
              f"{s.parts_skipped} complete) in {s.seconds:.1f} s, {s.mol_per_s:.1f} mol/s")
        for address, w in sorted(s.workers.items()):
            print(f"  worker {address}: {w.rows} rows, {w.mol_per_s:.1f} mol/s "
                  f"({w.mol_per_cpu_s:.1f} per CPU second), peak RSS {w.peak_rss_mb:.0f} MB")
        return 0
