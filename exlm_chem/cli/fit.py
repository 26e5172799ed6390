"""``exlm-chem fit``: fine-tune a molecule classifier or regressor on a table and save it.

Targets are always passed to the estimator as a table (one column per target, empty
cells = missing label), so the saved model knows their names and ``exlm-chem predict``
writes one column per target. Classification targets hold 0/1.
"""

from __future__ import annotations

import argparse
from dataclasses import asdict

from exlm_chem.cli.base import Subcommand, add_run_options
from exlm_chem.cli.inputs import add_input_arguments, open_input
from exlm_chem.model.pooling import DEFAULT_POOLING, POOLINGS
from exlm_chem.threads import set_threads

TASKS = ("classification", "regression")


class FitCommand(Subcommand):
    name = "fit"
    help = "fine-tune a classifier/regressor on a CSV of SMILES and targets; save it"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("train", help="training molecules: .csv[.gz] or .parquet")
        parser.add_argument("--target-columns", nargs="+", required=True,
                            help="one or more label columns (empty cell = missing)")
        parser.add_argument("--out", required=True, help="directory to save the model to")
        add_input_arguments(parser, keep_columns=False)
        parser.add_argument("--task", choices=TASKS, default="classification")
        parser.add_argument("--pretrained", default="default",
                            help="checkpoint directory to fine-tune (default: "
                                 "$EXLM_CHEM_MODEL, then models/exlm-small); 'none' for a "
                                 "randomly initialised --preset")
        parser.add_argument("--preset", default="small", help="model size with --pretrained none")
        parser.add_argument("--settings", default=None, metavar="DATASET",
                            help="start from the paper's fine-tuning settings for a "
                                 "MoleculeNet set (bbbp, bace, ...); flags below override")
        parser.add_argument("--epochs", type=int)
        parser.add_argument("--lr", type=float)
        parser.add_argument("--batch-size", type=int)
        parser.add_argument("--validation-fraction", type=float,
                            help="share held out to pick the best epoch (default 0.1)")
        parser.add_argument("--pooling", choices=POOLINGS,
                            help=f"molecule vector before the head (default {DEFAULT_POOLING})")
        parser.add_argument("--max-length", type=int)
        parser.add_argument("--random-state", type=int, default=0)
        parser.add_argument("--on-invalid", choices=("raise", "drop"), default="raise",
                            help="invalid training SMILES: stop with a list of them, or "
                                 "leave them out with a warning")
        parser.add_argument("--max-minutes", type=float)
        parser.add_argument("--features", nargs="+", choices=("rdkit2d", "morgan", "none"),
                            help="features computed per molecule and fed to the head beside "
                                 "the encoder: RDKit 2D descriptors and/or Morgan counts "
                                 "(scaled on the training rows, saved with the model), or "
                                 "none (default: the estimator's own, rdkit2d for regression "
                                 "and none for classification)")
        parser.add_argument("--feature-columns", nargs="+", default=[], metavar="COLUMN",
                            help="numeric input columns fed to the head as well; `predict` "
                                 "then reads the same columns")
        parser.add_argument("--n-jobs", type=int, default=None,
                            help="processes computing --features (default: all cores)")
        add_run_options(parser)

    @classmethod
    def run(cls, args: argparse.Namespace) -> int:
        from exlm_chem.files.output_owner import ESTIMATOR_FORMAT
        from exlm_chem.files.safe_write import check_output_dir

        # before any training (and heavy import): a refused or unwritable --out would lose
        # the fitted model
        check_output_dir(args.out, ESTIMATOR_FORMAT)
        set_threads(args.threads)

        import pandas as pd

        from exlm_chem.cli.tally import RowTally
        from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier, ExLMMoleculeRegressor

        targets = list(dict.fromkeys(args.target_columns))
        if args.smiles_column in targets:
            raise ValueError(f"--smiles-column {args.smiles_column!r} is also a target column")
        feature_columns = list(dict.fromkeys(args.feature_columns))
        clash = [c for c in feature_columns if c in (args.smiles_column, *targets)]
        if clash:
            raise ValueError(f"--feature-columns {clash} are also the SMILES or a target column")
        frame, smiles = open_input(args.train, args.smiles_column, targets,
                                   option="--target-columns", encoding=args.encoding,
                                   more={"--feature-columns": feature_columns}).read()
        y = frame[targets].apply(pd.to_numeric, errors="coerce")
        unparsable = frame[targets].notna() & y.isna()
        if unparsable.any().any():
            col = str(unparsable.any()[lambda s: s].index[0])
            row = int(unparsable[col].to_numpy().argmax())
            raise ValueError(f"{args.train}: target column {col!r} holds a non-numeric value "
                             f"at data row {row}: {frame[col].iloc[row]!r}")

        params = asdict(_settings(args.settings)) if args.settings else {}
        chosen = {"epochs": args.epochs, "lr": args.lr, "batch_size": args.batch_size,
                  "validation_fraction": args.validation_fraction, "pooling": args.pooling,
                  "max_length": args.max_length, "max_minutes": args.max_minutes}
        params.update({k: v for k, v in chosen.items() if v is not None})
        pretrained = None if args.pretrained.lower() == "none" else args.pretrained
        estimator_class = (ExLMMoleculeClassifier if args.task == "classification"
                           else ExLMMoleculeRegressor)
        if args.features and "none" in args.features and len(set(args.features)) > 1:
            raise ValueError(f"--features none cannot go with other kinds: {args.features}")
        computed = (estimator_class.AUTO_FEATURES if args.features is None
                    else [k for k in dict.fromkeys(args.features) if k != "none"])
        features = [*computed, *(["columns"] if feature_columns else [])]
        est = estimator_class(pretrained, preset=args.preset, random_state=args.random_state,
                              on_invalid=args.on_invalid, device=args.device,
                              progress=args.progress, features=features or None,
                              n_jobs=args.n_jobs, **params)
        # with feature columns: the table, SMILES first (see ExLMMoleculeClassifier)
        X = (frame.assign(**{args.smiles_column: smiles})[[args.smiles_column, *feature_columns]]
             if feature_columns else smiles)
        est.fit(X, y)
        est.save(args.out)
        tally = RowTally("fit")
        tally.add(len(smiles), int((~est.fit_invalid_mask_).sum()), est.fit_invalid_reasons_)
        print(tally.line(args.train, f"trained on {tally.written} rows and saved "
                                     f"{type(est).__name__} ({est.n_tasks_} task(s): "
                                     f"{', '.join(targets)}) to {args.out}, best epoch "
                                     f"{est.best_epoch_} ({est.selection_metric_} "
                                     f"{est.best_score_:.4f})"))
        return tally.exit_code(args.fail_on_invalid)


def _settings(name: str):
    from exlm_chem.presets import finetune_preset

    return finetune_preset(name)
