"""``exlm-chem benchmark``: MoleculeNet cells side by side, resumable, with a report."""

from __future__ import annotations

import argparse
import shlex
import sys

from exlm_chem.cli.base import Subcommand
from exlm_chem.threads import add_threads_option, set_threads


def parse_budget(text: str):
    """``"epochs=5,minutes=3"`` (either part optional) or ``"none"`` → Budget."""
    from exlm_chem.benchmark.records import Budget

    if text.strip().lower() in ("", "none"):
        return Budget()
    values: dict = {}
    for part in text.split(","):
        key, _, value = part.partition("=")
        key = key.strip().lower()
        try:
            if key == "epochs":
                values["max_epochs"] = int(value)
                ok = values["max_epochs"] >= 1
            elif key == "minutes":
                values["max_minutes"] = float(value)
                ok = values["max_minutes"] > 0
            else:
                ok = False
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f"--budget {text!r}: expected epochs=N (N >= 1) and/or "
                             f"minutes=M (M > 0), comma-separated, or 'none'")
    return Budget(**values)


SUITES = ("moleculenet", "tdc-admet", "cross-source")


def parse_estimator_params(items: list[str]) -> dict:
    """``["target_transform=auto", "pretrained=None"]`` → ``{"target_transform": "auto",
    "pretrained": None}``: Python literals where they parse, else the text."""
    import ast

    params = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip().isidentifier():
            raise ValueError(f"--estimator-params {item!r}: expected NAME=VALUE")
        try:
            params[key.strip()] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            params[key.strip()] = value.strip()
    return params


class BenchmarkCommand(Subcommand):
    name = "benchmark"
    help = ("MoleculeNet, TDC ADMET or cross-source benchmark: methods x tasks x seeds, "
            "resumable, report with plot")

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        from exlm_chem.benchmark.methods import METHODS
        from exlm_chem.benchmark.tasks import CLUSTER_SPLIT
        from exlm_chem.data.split_modes import SPLITS

        parser.add_argument("--suite", choices=SUITES, default="moleculenet",
                            help="moleculenet: the paper's tasks and split; tdc-admet: the 22 "
                                 "tasks of TDC's ADMET benchmark group, TDC's seeds (1-5), "
                                 "test parts and metrics, the report placing each row among "
                                 "the published leaderboard entries; cross-source: models "
                                 "fitted on one source's labels scored on another lab's "
                                 "molecules of the same target that the first lacks "
                                 "(exlm_chem.benchmark.cross_source)")
        parser.add_argument("--tasks", nargs="+", default=["all"],
                            help="dataset names, 'all' (moleculenet: the 7 classification "
                                 "sets; tdc-admet: the 22 tasks; cross-source: its pairs) or "
                                 "'regression' (esol freesolv lipo: RMSE and MAE; tdc-admet: "
                                 "its 9 regression tasks; cross-source: its regression "
                                 "pairs)")
        parser.add_argument("--seeds", nargs="+", type=int, default=None,
                            help="one cell per seed (initialisation, batch order; the split "
                                 "too for scaffold_balanced and tdc-admet); default 0 1 2, "
                                 "tdc-admet 1 2 3 4 5")
        parser.add_argument("--model", default="default",
                            help="ExLM checkpoint directory ('default': the shipped one)")
        parser.add_argument("--twin", default=None,
                            help="MLM twin checkpoint (default: mlm-X next to exlm-X)")
        parser.add_argument("--methods", nargs="+", default=list(METHODS[:4]), choices=METHODS,
                            help="rows to run: the checkpoint, its MLM twin, a random forest "
                                 "on ECFP4, AttentiveFP, chemprop (default: these but "
                                 "chemprop); with RDKit 2D descriptors: rf_rdkit2d (a forest "
                                 "on them alone), exlm_rdkit2d (the checkpoint in --mode "
                                 "with them beside its state), exlm_defaults[_rdkit2d] (the "
                                 "scikit-learn estimator's defaults, without/with them), "
                                 "chemprop_rdkit2d (chemprop's descriptor featurizer); gbt "
                                 "(gradient boosting at scikit-learn's defaults on Morgan "
                                 "counts + RDKit 2D)")
        parser.add_argument("--estimator-params", nargs="+", default=[], metavar="NAME=VALUE",
                            help="set on the exlm_defaults rows' estimators beside their "
                                 "defaults, named in the row's label: an option measured "
                                 "before it becomes a default (target_transform=auto), or "
                                 "pretrained=None (the same estimator from random weights)")
        parser.add_argument("--mode", choices=("finetune", "probe"), default="finetune",
                            help="how encoders are evaluated (baselines always train)")
        parser.add_argument("--split", choices=(*SPLITS, CLUSTER_SPLIT), default=None,
                            help="moleculenet: its split (default scaffold); tdc-admet "
                                 "re-splits train_val by scaffold per seed (0.875 / 0.125); "
                                 "'cluster' (both suites) holds out whole similarity "
                                 "clusters of all the task's molecules as the test part, "
                                 "the least like the rest first, no valid part (the "
                                 "out-of-distribution benchmark; tdc-admet's report: "
                                 "report_ood.md); cross-source pairs have their own split")
        parser.add_argument("--fit-on", choices=("train", "train_val"), default=None,
                            help="train: fit on the train part; the valid part is held out "
                                 "of every fit and scored beside the test part, for choosing "
                                 "defaults (tdc-admet's default); train_val: the estimators "
                                 "fit on train + valid (moleculenet's default), tdc-admet "
                                 "cells on all of train_val, as the leaderboard's entries "
                                 "fit (the rows to compare with them)")
        parser.add_argument("--budget", default="none",
                            help="per trained cell, e.g. 'epochs=10,minutes=5' (default: "
                                 "the paper's epochs, no time limit)")
        parser.add_argument("--out", required=True, help="results folder (resumes if it exists)")
        parser.add_argument("--data", default=None,
                            help="MoleculeNet folder, or for tdc-admet admet_group.zip or its "
                                 "folder (default: $EXLM_CHEM_DATA, data/, cache)")
        parser.add_argument("--device", default="auto", help="for the encoders: auto, cpu, cuda")
        add_threads_option(parser)
        parser.add_argument("--report-only", action="store_true",
                            help="only rebuild the report from the results file")
        parser.add_argument("--merge", nargs="+", default=[], metavar="FOLDER",
                            help="more results folders whose records join the report (runs "
                                 "split over processes, each with its own --out)")
        parser.add_argument("--no-progress", action="store_true",
                            help="log one line per cell instead of progress bars")

    @classmethod
    def run(cls, args: argparse.Namespace) -> int:
        set_threads(args.threads)
        from pathlib import Path

        from exlm_chem.benchmark.records import RESULTS_FILE, ResultsFile

        tdc = args.suite == "tdc-admet"
        cross = args.suite == "cross-source"
        if tdc and args.split not in (None, "cluster"):
            raise ValueError("tdc-admet re-splits train_val by scaffold for each seed, as TDC "
                             "does, or holds out similarity clusters with --split cluster")
        if cross and (args.split is not None or args.fit_on is not None):
            raise ValueError("a cross-source pair fits on every labelled molecule of its "
                             "source and tests the target's molecules the source lacks; "
                             "--split and --fit-on do not apply")
        if args.split == "cluster" and args.fit_on is not None:
            raise ValueError("--split cluster fits on every molecule outside the held-out "
                             "clusters; --fit-on does not apply")
        if args.seeds is None:
            from exlm_chem.benchmark.tdc import TDC_SEEDS

            args.seeds = list(TDC_SEEDS) if tdc else [0, 1, 2]
        if any(seed < 0 for seed in args.seeds):
            raise ValueError(f"--seeds must be non-negative, got {args.seeds}")
        tasks = cls._tasks(args.tasks, args.suite)
        budget = parse_budget(args.budget)
        out = Path(args.out)
        command = "exlm-chem " + shlex.join(sys.argv[1:]) if sys.argv[0].endswith(
            "exlm-chem") else None
        if not args.report_only:
            cls._run_cells(args, tasks, budget, out)
        records = [r for folder in [out, *map(Path, args.merge)]
                   # reruns supersede older records
                   for r in ResultsFile(folder / RESULTS_FILE).latest()]
        if not records:
            raise ValueError(f"no results in {out / RESULTS_FILE}")
        if (tdc and args.split == "cluster") or cross:  # the estimators' members as rows
            from exlm_chem.benchmark.report_ood import member_records

            records += member_records([out, *map(Path, args.merge)])
        if tdc and args.split == "cluster":
            from exlm_chem.benchmark.report_ood import markdown_report, write_report
        elif tdc:
            from exlm_chem.benchmark.report_tdc import markdown_report, write_report
        elif cross:
            from functools import partial

            from exlm_chem.benchmark import report_cross_source

            markdown_report = partial(report_cross_source.markdown_report, data=args.data)
            write_report = partial(report_cross_source.write_report, data=args.data)
        else:
            from exlm_chem.benchmark.report import markdown_report, write_report
        paths = write_report(records, out, command=command)
        print(markdown_report(records, command=command))
        print("report: " + ", ".join(str(p) for p in paths.values()))
        return 0

    @staticmethod
    def _tasks(names: list[str], suite: str) -> list[str]:
        """Task names with 'all' and 'regression' expanded; an unknown name is an error
        listing the suite's tasks."""
        if suite == "cross-source":
            from exlm_chem.data.cross_source import CROSS_SOURCE_PAIRS

            known = tuple(CROSS_SOURCE_PAIRS)
            groups = {"all": list(known),
                      "regression": [n for n, p in CROSS_SOURCE_PAIRS.items()
                                     if p.task_type == "regression"]}
        elif suite == "tdc-admet":
            from exlm_chem.data.tdc_admet import TDC_ADMET_TASKS

            known = tuple(TDC_ADMET_TASKS)
            groups = {"all": list(known),
                      "regression": [n for n, s in TDC_ADMET_TASKS.items()
                                     if s.task_type == "regression"]}
        else:
            from exlm_chem.data.moleculenet import dataset_names, regression_names

            known = dataset_names() + regression_names()
            groups = {"all": list(dataset_names()), "regression": list(regression_names())}
        tasks = [n for t in names for n in groups.get(t.lower(), [t.lower()])]
        unknown = sorted(set(tasks) - set(known))
        if unknown:
            raise ValueError(f"unknown task(s) {unknown}; choose from {list(known)}")
        return tasks

    @classmethod
    def _run_cells(cls, args: argparse.Namespace, tasks: list[str], budget, out) -> None:
        from exlm_chem.benchmark.methods import MODEL_METHODS, build_methods, default_twin
        from exlm_chem.benchmark.runner import run_benchmark

        model = twin = None
        if {"twin", *MODEL_METHODS} & set(args.methods):
            from exlm_chem.model.pretrained import resolve_pretrained

            model = resolve_pretrained(args.model)
            twin = args.twin if args.twin is not None else default_twin(model)
        methods = build_methods(args.methods, model, twin, args.mode,
                                cache_dir=out / "embeddings", device=args.device,
                                budget=budget, feature_cache=out / "features",
                                chemprop_state=out / "chemprop_state",
                                estimator_params=parse_estimator_params(args.estimator_params))
        if args.suite == "tdc-admet":
            from exlm_chem.benchmark.tdc import TDC_CLUSTER_SPLIT, TDC_SPLITS, TDCSource

            split = (TDC_CLUSTER_SPLIT if args.split == "cluster"
                     else TDC_SPLITS[args.fit_on or "train"])
            run_benchmark(methods, tasks, args.seeds, split, budget, out,
                          progress=not args.no_progress, source=TDCSource(args.data))
        elif args.suite == "cross-source":
            from exlm_chem.benchmark.cross_source import CROSS_SOURCE_SPLIT, CrossSourceTasks

            run_benchmark(methods, tasks, args.seeds, CROSS_SOURCE_SPLIT, budget, out,
                          progress=not args.no_progress, source=CrossSourceTasks(args.data))
        else:
            from exlm_chem.benchmark.runner import MoleculeNetSource

            run_benchmark(methods, tasks, args.seeds, args.split or "scaffold", budget, out,
                          progress=not args.no_progress,
                          source=MoleculeNetSource(args.data, args.fit_on == "train"))
