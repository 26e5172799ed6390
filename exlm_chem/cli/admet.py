"""``exlm-chem admet``: score a file of molecules on the ADMET panel; ``admet build``: fit it.

``exlm-chem admet IN --out OUT`` is short for ``exlm-chem admet predict IN --out OUT``. The
molecules go through the screening path (:func:`exlm_chem.screening.run.screen`: Parquet
parts in ``OUT.parts/`` and a manifest, computed by a local Dask cluster or the one
``--scheduler`` names), so an interrupted run resumes where it stopped; the parts are
joined into ``OUT`` (CSV or Parquet) in input order and then removed.
"""

from __future__ import annotations

import argparse

from exlm_chem.cli.base import Subcommand

__all__ = ["AdmetBuildCommand", "AdmetPredictCommand"]

#: rows per screened part: small enough that two workers share a file of a few thousand
PANEL_CHUNK_ROWS = 1000


class AdmetPredictCommand(Subcommand):
    group = "admet"
    name = "predict"
    help = ("score molecules on every endpoint of the ADMET panel (`exlm-chem admet IN --out "
            "OUT` for short)")

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("input", help="molecules: .csv[.gz], .smi[.gz], .parquet or "
                                          ".sdf[.gz]")
        parser.add_argument("--out", required=True, help="output file: .csv or .parquet")
        parser.add_argument("--report", default=None,
                            help="also write a one-file HTML report (no server, no network)")
        parser.add_argument("--panel", default=None,
                            help="panel folder (default: $EXLM_CHEM_ADMET, then the shipped "
                                 "models/admet)")
        parser.add_argument("--smiles-column", default="smiles",
                            help="SMILES column of a CSV or Parquet input")
        where = parser.add_mutually_exclusive_group()
        where.add_argument("--workers", type=int, default=None,
                           help="local Dask worker processes, 0 for none (default: none "
                                "for a file of one part, else one per CPU core)")
        where.add_argument("--scheduler", default=None,
                           help="address of a running Dask scheduler (large libraries)")
        parser.add_argument("--chunk-rows", type=int, default=PANEL_CHUNK_ROWS,
                            help="rows per resumable part (default %(default)s)")
        parser.add_argument("--fail-on-invalid", action="store_true",
                            help="exit with status 1 if any row is invalid (the output is "
                                 "still written, invalid rows marked)")
        parser.add_argument("--no-progress", dest="progress", action="store_false")

    @classmethod
    def run(cls, args: argparse.Namespace) -> int:
        import shutil
        from pathlib import Path

        import pandas as pd

        from exlm_chem.admet.panel import Panel, default_panel_dir, is_panel
        from exlm_chem.cli.outputs import output_format
        from exlm_chem.cli.tally import RowTally
        from exlm_chem.files.safe_write import atomic_path, check_output_file
        from exlm_chem.screening.feed import quiet_dask
        from exlm_chem.screening.run import screen

        panel = Path(args.panel).expanduser() if args.panel else default_panel_dir()
        if not is_panel(panel):
            Panel.load(panel)  # raises the error that says where a panel comes from
        out = Path(args.out)
        fmt = output_format(out, (".csv", ".parquet"))
        check_output_file(out)  # before any work: a result that cannot be written is lost
        if args.report:
            check_output_file(args.report)
        parts = out.with_name(out.name + ".parts")
        workers = args.workers
        if workers is None and args.scheduler is None:
            from exlm_chem.data.tables import open_table

            rows = open_table(args.input).n_rows
            workers = 0 if rows <= args.chunk_rows else None
        if workers != 0:
            quiet_dask()
        result = screen(panel, [args.input], parts, workers=workers,
                        scheduler=args.scheduler, chunk_rows=args.chunk_rows,
                        smiles_column=args.smiles_column, progress=args.progress)
        table = pd.read_parquet(parts).sort_values("row", kind="stable").drop(columns="file")
        table = table.reset_index(drop=True)
        with atomic_path(out) as tmp:
            if fmt == ".csv":
                table.to_csv(tmp, index=False)
            else:
                table.to_parquet(tmp, index=False)
        if args.report:
            from exlm_chem.admet.report import write_report

            write_report(table, Panel.load(panel), args.report)
        shutil.rmtree(parts)
        tally = RowTally("admet")
        tally.add(len(table), len(table), table["invalid_reason"].fillna(""))
        s = result.summary
        print(tally.line(args.input, f"wrote {len(table)} rows to {out}"
                         + (f" and the report {args.report}" if args.report else "")
                         + f"; {s.rows_computed} scored now in {s.seconds:.1f} s "
                           f"({s.mol_per_s:.1f} mol/s)"))
        return tally.exit_code(args.fail_on_invalid)


class AdmetBuildCommand(Subcommand):
    group = "admet"
    name = "build"
    help = ("fit the ADMET panel from the data, one endpoint at a time (resumable), or add "
            "your own endpoint to a copy of it (--add)")

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--out", default=None,
                            help="panel folder to write (default: the shipped models/admet; "
                                 "with --add a new folder is required)")
        parser.add_argument("--endpoints", nargs="+", default=None,
                            help="shipped endpoints to fit (default: all)")
        parser.add_argument("--add", nargs=2, metavar=("NAME", "FILE"), default=None,
                            help="fit your own endpoint NAME from FILE (CSV, .smi, Parquet "
                                 "or SDF with a SMILES and a target column) into a copy of "
                                 "--panel at --out")
        parser.add_argument("--panel", default=None,
                            help="with --add: the panel to copy (default: the shipped one)")
        parser.add_argument("--smiles-column", default="smiles", help="with --add")
        parser.add_argument("--target-column", default=None,
                            help="with --add: the labels' column (default: the only column "
                                 "besides the SMILES)")
        parser.add_argument("--task", choices=("auto", "classification", "regression"),
                            default="auto", help="with --add: auto = classification when "
                                                 "every label is 0 or 1")
        parser.add_argument("--unit", default=None, help="with --add: the values' unit")
        parser.add_argument("--direction", default=None,
                            help="with --add: what a higher value means")
        parser.add_argument("--group", default="user",
                            help="with --add: the report group (default %(default)s)")
        parser.add_argument("--no-progress", dest="progress", action="store_false")

    @classmethod
    def run(cls, args: argparse.Namespace) -> int:
        from pathlib import Path

        from exlm_chem.admet.assemble import assemble_panel
        from exlm_chem.admet.build import build_endpoints
        from exlm_chem.admet.card import write_model_card
        from exlm_chem.admet.endpoints import ENDPOINTS, get_endpoint
        from exlm_chem.admet.panel import default_panel_dir

        if args.add:
            from exlm_chem.admet.user import add_endpoint

            if args.out is None:
                raise ValueError("--add writes a copy of the panel: give it a folder with --out")
            path = add_endpoint(args.add[0], args.add[1], args.out, panel=args.panel,
                                smiles_column=args.smiles_column,
                                target_column=args.target_column, task=args.task,
                                unit=args.unit, direction=args.direction, group=args.group)
            print(f"admet build: added {args.add[0]} to the panel at {path}")
            return 0
        out = Path(args.out) if args.out else default_panel_dir()
        endpoints = ([get_endpoint(n) for n in args.endpoints] if args.endpoints
                     else list(ENDPOINTS))
        records = build_endpoints(out, endpoints, progress=args.progress)
        assemble_panel(out)
        card = write_model_card(out)
        cpu = sum(r["cpu_s"] for r in records)
        print(f"admet build: {len(records)} endpoints in {out} ({cpu:.0f} CPU-s of fits); "
              f"model card {card}")
        return 0
