"""``exlm-chem data prepare-splits``: benchmark tasks as token ids for a machine without RDKit."""

from __future__ import annotations

import argparse
import json

from exlm_chem.cli.base import Subcommand


class PrepareSplitsCommand(Subcommand):
    group = "data"
    name = "prepare-splits"
    help = ("tokenise and split MoleculeNet tasks once (RDKit here), for fine-tuning cells "
            "on the GPU machine (scripts/gpu/finetune_cells.py)")

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        from exlm_chem.data.split_modes import SPLITS

        parser.add_argument("--tasks", nargs="+", default=["all"],
                            help="dataset names or 'all' (the 7 classification sets)")
        parser.add_argument("--split", choices=SPLITS, default="scaffold")
        parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2],
                            help="split seeds to store (only scaffold_balanced uses them)")
        parser.add_argument("--out", required=True, help="folder for manifest.json and .npz")
        parser.add_argument("--vocab", default=None,
                            help="vocabulary of the checkpoints (default: the packaged one)")
        parser.add_argument("--max-length", type=int, default=256,
                            help="tokens per molecule incl. BOS/EOS (the benchmark's)")
        parser.add_argument("--data", default=None,
                            help="MoleculeNet folder (default: $EXLM_CHEM_DATA, data/, cache)")

    @classmethod
    def run(cls, args: argparse.Namespace) -> int:
        from exlm_chem.benchmark.prepared import prepare_splits
        from exlm_chem.data.moleculenet import dataset_names

        names = list(dataset_names())
        tasks = names if args.tasks == ["all"] else [t.lower() for t in args.tasks]
        unknown = sorted(set(tasks) - set(names))
        if unknown:
            raise ValueError(f"unknown task(s) {unknown}; choose from {names}")
        manifest = prepare_splits(tasks, args.split, args.out, args.seeds, args.vocab,
                                  args.max_length, args.data)
        print(json.dumps(manifest["tasks"], indent=1))
        print(f"prepared {len(tasks)} task(s) in {args.out}")
        return 0
