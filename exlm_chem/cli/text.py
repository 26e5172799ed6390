"""``exlm-chem text pretrain`` and ``exlm-chem text glue``: the secondary text path."""

from __future__ import annotations

import argparse
from dataclasses import fields
from typing import ClassVar

from exlm_chem.cli.base import Subcommand


class TextPretrainCommand(Subcommand):
    group = "text"
    name = "pretrain"
    help = "pre-train an encoder (exlm or mlm, k=4 by default) on plain-text files; resumable"

    # set explicitly below, or meaningless for text
    _SKIP: ClassVar[set[str]] = {
        "corpus", "out", "progress", "betas", "extra", "hygiene", "masking", "tokenizer",
        "train_tokenizer", "lowercase", "prepared", "budget_from", "compile",
        "contrast_weight", "contrast_temperature", "translate_weight",
    }

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        from exlm_chem.text.pretrain_args import TextPretrainArgs

        parser.add_argument("--corpus", nargs="+", required=True,
                            help="text files (.txt[.gz]); each non-blank line is running text")
        parser.add_argument("--out", required=True, help="run directory")
        parser.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint")
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--tokenizer", help="tokenizer.json to use (ids 0-4 must be "
                                                "[CLS] [PAD] [SEP] [UNK] [MASK])")
        source.add_argument("--train-tokenizer", action="store_true",
                            help="learn a WordPiece vocabulary on the corpus (--vocab-size)")
        parser.add_argument("--cased", dest="lowercase", action="store_false",
                            help="keep case and accents when training the tokenizer")
        parser.add_argument("--no-progress", dest="progress", action="store_false")
        parser.add_argument("--betas", nargs=2, type=float, default=(0.9, 0.98))
        for f in fields(TextPretrainArgs):
            if f.name in cls._SKIP:
                continue
            annotation = str(f.type)  # a string under `from __future__ import annotations`
            kind = int if "int" in annotation else float if "float" in annotation else str
            parser.add_argument("--" + f.name.replace("_", "-"), type=kind, default=f.default)

    @classmethod
    def run(cls, args: argparse.Namespace) -> int:
        from exlm_chem.text.pretrain import text_pretrain
        from exlm_chem.text.pretrain_args import TextPretrainArgs

        values = {f.name: getattr(args, f.name) for f in fields(TextPretrainArgs)
                  if hasattr(args, f.name)}
        values["betas"] = tuple(values["betas"])
        result = text_pretrain(TextPretrainArgs(**values), resume=args.resume)
        print(f"finished at step {result['step']}; checkpoint in {args.out}/checkpoint")
        return 0


class TextGlueCommand(Subcommand):
    group = "text"
    name = "glue"
    help = "fine-tune a text checkpoint on a GLUE task over seeds; print per-seed and median"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        from exlm_chem.text.glue import BAD_ROW_POLICIES, GLUE_TASKS

        parser.add_argument("--task", required=True,
                            help=f"one of {', '.join(GLUE_TASKS)} (case-insensitive)")
        parser.add_argument("--data-dir", required=True,
                            help="GLUE folder holding RTE/, MRPC/, ... with train.tsv, dev.tsv")
        parser.add_argument("--model", required=True,
                            help="checkpoint (or run) directory from 'exlm-chem text pretrain'")
        parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4],
                            help="one fine-tuning run per seed; the median is reported")
        parser.add_argument("--epochs", type=int, help="default: 3 (large tasks) or 10")
        parser.add_argument("--lr", type=float, help="peak learning rate (default 2e-5)")
        parser.add_argument("--batch-size", type=int, help="default: 32 (large) or 16")
        parser.add_argument("--warmup-ratio", type=float, help="default 0.06")
        parser.add_argument("--weight-decay", type=float, help="default 0.1")
        parser.add_argument("--dropout", type=float, help="encoder dropout (default 0.1)")
        parser.add_argument("--max-train", type=int,
                            help="fine-tune on a random subset of this many training rows "
                                 "(the same subset for every seed)")
        parser.add_argument("--max-length", type=int, default=256,
                            help="word pieces per example, special tokens included")
        parser.add_argument("--on-bad-rows", choices=BAD_ROW_POLICIES, default="error",
                            help="malformed TSV rows: error (default) or skip with a warning")
        parser.add_argument("--device", default="auto")
        parser.add_argument("--json", help="also write the full report (history too) here")
        parser.add_argument("--progress", action="store_true", help="tqdm bars over epochs")

    @classmethod
    def run(cls, args: argparse.Namespace) -> int:
        import dataclasses
        import json

        from exlm_chem.text.finetune import format_glue_report, glue_settings, run_glue

        changes = {name: getattr(args, name) for name in
                   ("epochs", "lr", "batch_size", "warmup_ratio", "weight_decay", "dropout")
                   if getattr(args, name) is not None}
        settings = dataclasses.replace(glue_settings(args.task), **changes)
        report = run_glue(args.task, args.data_dir, args.model, seeds=args.seeds,
                          settings=settings, max_train=args.max_train,
                          max_length=args.max_length, device=args.device,
                          on_bad_rows=args.on_bad_rows, progress=args.progress)
        print(format_glue_report(report))
        if args.json:
            payload = report._asdict()
            payload["seeds"] = [
                {**r._asdict(), "history": [h._asdict() for h in r.history]}
                for r in report.seeds
            ]
            with open(args.json, "w", encoding="utf-8") as fh:
                json.dump(payload, fh, indent=2)
        return 0
