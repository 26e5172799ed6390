"""``exlm-chem data summary``: the 7 MoleculeNet classification sets and the 3 regression
sets at a glance."""

from __future__ import annotations

import argparse

from exlm_chem.cli.base import Subcommand


class DataSummaryCommand(Subcommand):
    group = "data"
    name = "summary"
    help = ("rows, valid molecules, tasks, coverage and default split sizes of the 7 "
            "classification and 3 regression datasets")

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--datasets", nargs="+", default=None, help="subset (default: all 10)")
        parser.add_argument("--csv", default=None, help="also write the table to this CSV file")

    @classmethod
    def run(cls, args: argparse.Namespace) -> int:
        from exlm_chem.benchmark.data_summary import format_summary, summarize_datasets

        rows = summarize_datasets(args.datasets)
        print(format_summary(rows))
        if args.csv:
            import pandas as pd

            pd.DataFrame([r._asdict() for r in rows]).to_csv(args.csv, index=False)
        return 0
