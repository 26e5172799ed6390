"""``exlm-chem pretrain``: ExLM or its MLM twin on a SMILES corpus, resumable."""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import fields
from pathlib import Path

from exlm_chem.cli.base import Subcommand

_HELP = {
    "preset": "model tiny | small | base, or 'paper': the base model with the paper's "
              "schedule (120K steps, 10K warm-up, 64K tokens per step over all GPUs, which "
              "was the paper's per-GPU batch; see exlm_chem.presets)",
    "max_steps": "optimizer steps (default: the preset's)",
    "max_tokens": "padded, unexpanded tokens per optimizer step, all ranks together "
                  "(default: the preset's)",
    "warmup_steps": "linear warm-up steps (default: the preset's)",
    "budget_minutes": "time the first steps, then fit max_steps (warm-up plus full decay) "
                      "into this many minutes; the decision goes to OUT/budget.json",
    "num_workers": "DataLoader processes that mask and collate batches",
}


def _field_comments(cls: type) -> dict[str, str]:
    """Each field's same-line comment in ``cls``'s module: the dataclass documents its
    fields once, and ``--help`` shows those words (a plain read, run on every CLI call)."""
    try:
        source = Path(sys.modules[cls.__module__].__file__).read_text(encoding="utf-8")
    except (OSError, TypeError, KeyError):  # no source shipped
        return {}
    body = source[source.find(f"class {cls.__name__}"):]
    comments: dict[str, str] = {}
    for m in re.finditer(r"^    (?P<name>\w+):[^#\n]*#(?P<text>[^\n]*)$", body, re.M):
        # the class's own line comes first; "%" would be a format code to argparse
        comments.setdefault(m["name"], m["text"].strip().replace("%", "%%"))
    return comments


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
        comments = _field_comments(PretrainArgs)
        skip = {"corpus", "prepared", "out", "hygiene", "progress", "betas", "extra",
                "budget_from", "compile"}
        for f in fields(PretrainArgs):
            if f.name in skip:
                continue
            flag = "--" + f.name.replace("_", "-")
            annotation = str(f.type)  # a string under `from __future__ import annotations`
            kind = int if "int" in annotation else float if "float" in annotation else str
            text = _HELP.get(f.name, comments.get(f.name))
            parser.add_argument(flag, type=kind, default=f.default, help=text)

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
