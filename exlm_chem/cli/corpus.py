"""``exlm-chem corpus prepare``: hygiene, deduplication and tokens, once, on CPU; ``exlm-chem
corpus descriptors``: descriptor targets added to a folder prepared without them."""

from __future__ import annotations

import argparse

from exlm_chem.cli.base import Subcommand


class CorpusPrepareCommand(Subcommand):
    group = "corpus"
    name = "prepare"
    help = ("prepare a pre-training corpus (canonical SMILES, benchmark hygiene over every "
            "split mode, deduplication, tokens, train/valid hold-out) for `pretrain "
            "--prepared`; `pretrain --corpus` does the same into OUT/corpus")

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--corpus", nargs="+", required=True, help="SMILES files (.smi[.gz])")
        parser.add_argument("--out", required=True,
                            help="folder to write: new or empty (a corpus there is never "
                                 "overwritten)")
        parser.add_argument("--max-length", type=int, default=256,
                            help="tokens per molecule incl. BOS/EOS (longer: truncated)")
        parser.add_argument("--valid-size", type=int, default=2000,
                            help="held-out molecules for validation (at most a tenth)")
        parser.add_argument("--seed", type=int, default=0, help="draws the held-out molecules")
        parser.add_argument("--limit", type=int, default=None,
                            help="read only the first N lines of each file")
        parser.add_argument("--tasks", nargs="+", default=None,
                            help="benchmark tasks whose valid/test molecules are removed "
                                 "(default: all)")
        parser.add_argument("--split-seeds", nargs="+", type=int, default=[0, 1, 2],
                            help="seeds of the seeded split modes (scaffold_balanced) to clean")
        parser.add_argument("--no-hygiene", dest="hygiene", action="store_false",
                            help="keep benchmark valid/test molecules")
        parser.add_argument("--n-jobs", type=int, default=2,
                            help="processes for RDKit (-1: all cores)")
        parser.add_argument("--descriptors", choices=["rdkit2d", "rdkit2d_fast", "morgan"],
                            default=None,
                            help="also store standardised descriptors, the targets of "
                                 "`pretrain --aux-weight`: rdkit2d all 217 RDKit 2D ones "
                                 "(about 13 CPU-ms a molecule), rdkit2d_fast 35 cheap ones "
                                 "(under 1 CPU-ms a molecule), morgan 2048 Morgan counts "
                                 "(radius 2; 0.3 CPU-ms a molecule, but about 8 GB of "
                                 "pre-training memory per million molecules)")

    @classmethod
    def run(cls, args: argparse.Namespace) -> int:
        from exlm_chem.data.corpus_prepare import PreparationSettings, prepare_corpus

        settings = PreparationSettings(
            max_length=args.max_length, valid_size=args.valid_size, seed=args.seed,
            limit=args.limit, hygiene=args.hygiene, tasks=args.tasks,
            split_seeds=tuple(args.split_seeds), descriptors=args.descriptors,
        )
        manifest = prepare_corpus(args.corpus, args.out, settings, n_jobs=args.n_jobs)
        counts = manifest["counts"]
        print(f"{counts['train']} train / {counts['valid']} valid molecules "
              f"({counts['tokens']} tokens) in {args.out}; removed: "
              f"{counts['duplicates_removed']} duplicates, {counts['hygiene_removed']} "
              f"benchmark molecules, {counts['unparsable_removed']} unparsable")
        return 0


class CorpusDescriptorsCommand(Subcommand):
    group = "corpus"
    name = "descriptors"
    help = ("add (or replace) the descriptor targets of `pretrain --aux-weight` in a prepared "
            "corpus folder, computed from its token ids (no SMILES files needed)")

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--prepared", required=True,
                            help="folder written by `exlm-chem corpus prepare`")
        parser.add_argument("--kind", choices=["rdkit2d", "rdkit2d_fast", "morgan"],
                            default="rdkit2d_fast",
                            help="rdkit2d_fast: 35 cheap RDKit 2D descriptors (under 1 CPU-ms "
                                 "a molecule; default); rdkit2d: all 217 (about 13 CPU-ms); "
                                 "morgan: 2048 Morgan counts, radius 2 (0.3 CPU-ms; about 8 "
                                 "GB of pre-training memory and 17 GB while computed per "
                                 "million molecules)")
        parser.add_argument("--n-jobs", type=int, default=-1,
                            help="processes for RDKit (-1: all cores)")

    @classmethod
    def run(cls, args: argparse.Namespace) -> int:
        import time

        from exlm_chem.data.corpus_prepare import add_descriptors

        start = time.perf_counter()
        manifest = add_descriptors(args.prepared, args.kind, n_jobs=args.n_jobs)
        entry, counts = manifest["descriptors"], manifest["counts"]
        print(f"{args.kind} descriptors of {counts['molecules']} molecules in {args.prepared}: "
              f"{entry['count']} descriptors, {entry['undecodable']} undecodable rows, "
              f"{entry['missing_values']} missing values, "
              f"{time.perf_counter() - start:.1f} s")
        return 0
