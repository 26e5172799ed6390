"""``exlm-chem pretrain``: ExLM or its MLM twin on a SMILES corpus, resumable."""

from __future__ import annotations

import argparse
from dataclasses import fields
from pathlib import Path

from exlm_chem.cli.base import Subcommand


class PretrainCommand(Subcommand):
    name = "pretrain"
    help = "pre-train an encoder (objective exlm or mlm) on SMILES files; resumable"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        from exlm_chem.train.pretrain_args import PretrainArgs

        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--corpus", nargs="+",
                            help="SMILES files (.smi[.gz]), prepared into OUT/corpus as "
                                 "`exlm-chem corpus prepare` does (canonical SMILES, "
                                 "deduplicated, hygiene; RDKit), reused on --resume")
        source.add_argument("--prepared", help="folder from `exlm-chem corpus prepare` "
                                               "(no RDKit needed)")
        parser.add_argument("--out", required=True, help="run directory")
        parser.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint")
        parser.add_argument(
            "--no-hygiene",
            dest="hygiene",
            action="store_false",
            help="keep benchmark valid/test molecules in the --corpus files",
        )
        parser.add_argument("--no-progress", dest="progress", action="store_false")
        parser.add_argument("--betas", nargs=2, type=float, default=(0.9, 0.98))
        parser.add_argument("--budget-from", nargs="+", default=None, metavar="RUN_DIR",
                            help="partner runs (the twin): every run takes the fewest steps "
                                 "any of them measured (see exlm_chem.train.budget)")
        parser.add_argument("--compile", action="store_true", help="torch.compile the encoder")
        skip = {"corpus", "prepared", "out", "hygiene", "progress", "betas", "extra",
                "budget_from", "compile"}
        for f in fields(PretrainArgs):
            if f.name in skip:
                continue
            flag = "--" + f.name.replace("_", "-")
            annotation = str(f.type)  # a string under `from __future__ import annotations`
            kind = int if "int" in annotation else float if "float" in annotation else str
            parser.add_argument(flag, type=kind, default=f.default, help=f.metadata.get("help"))

    @classmethod
    def run(cls, args: argparse.Namespace) -> int:
        from exlm_chem.files.safe_write import check_output_dir
        from exlm_chem.model.checkpoint_format import FORMAT
        from exlm_chem.train.pretrain import pretrain
        from exlm_chem.train.pretrain_args import PretrainArgs

        # before any training: a checkpoint that cannot be written would lose the run
        check_output_dir(Path(args.out) / "checkpoint", FORMAT)
        values = {
            f.name: getattr(args, f.name) for f in fields(PretrainArgs) if hasattr(args, f.name)
        }
        values["betas"] = tuple(values["betas"])
        result = pretrain(PretrainArgs(**values), resume=args.resume)
        print(f"finished at step {result['step']}; checkpoint in {args.out}/checkpoint")
        return 0
