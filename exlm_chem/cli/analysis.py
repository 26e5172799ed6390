"""``exlm-chem explain`` and ``exlm-chem entropy``: the paper's analyses as commands."""

from __future__ import annotations

import argparse
from pathlib import Path

from exlm_chem.cli.base import MODEL_HELP, Subcommand


def read_smiles_input(path: str | Path, smiles_column: str = "smiles",
                      limit: int | None = None) -> list[str]:
    """The first ``limit`` SMILES of a CSV, Parquet or ``.smi`` file (see
    :mod:`exlm_chem.data.tables`); an empty SMILES cell is an error naming the data row."""
    from exlm_chem.cli.inputs import open_input

    rows = open_input(path, smiles_column)
    first, _ = next(rows.chunks(limit or rows.table.n_rows))
    for row, value in first[smiles_column].items():
        if value is None or not value.strip():
            raise ValueError(f"{path}, data row {row}: empty SMILES cell")
    return [v.strip() for v in first[smiles_column]]


class ExplainCommand(Subcommand):
    name = "explain"
    help = "case-study figure: transitions, top tokens and best path for a masked SMILES"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("smiles", help='SMILES with [MASK] placeholders, e.g. '
                                           '"CC(=O)[MASK]c1ccccc1[MASK]"')
        parser.add_argument("--model", default="default", help=MODEL_HELP)
        parser.add_argument("--out", required=True, help="figure file (.png, .pdf, .svg)")
        parser.add_argument("--json", default=None, help="also write the numbers here")
        parser.add_argument("--top-k", type=int, default=3, help="tokens shown per state")
        parser.add_argument("--device", default="cpu")

    @classmethod
    def run(cls, args: argparse.Namespace) -> int:
        from exlm_chem.analysis.explanation import explain
        from exlm_chem.analysis.explanation_plot import plot_explanation

        explanation = explain(args.smiles, model=args.model, top_k=args.top_k,
                              device=args.device)
        plot_explanation(explanation, args.out)
        if args.json:
            explanation.write_json(args.json)
        fill = " | ".join(" ".join(f) or "(nothing)" for f in explanation.fill_in)
        print(f"Viterbi fill-in per [MASK]: {fill}")
        print(f"filled SMILES: {explanation.filled_smiles} "
              f"(valid: {explanation.filled_smiles_valid})")
        print(f"one token per [MASK]: {explanation.one_per_mask_smiles}")
        print(f"wrote {args.out}" + (f" and {args.json}" if args.json else ""))
        return 0


class EntropyCommand(Subcommand):
    name = "entropy"
    help = "prediction entropy at masked positions vs mask ratio (ExLM and MLM checkpoints)"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--models", nargs="+", required=True,
                            help="checkpoint directories (ExLM and/or MLM)")
        parser.add_argument("--labels", nargs="+", default=None,
                            help="names for the models in the table (default: dir names)")
        parser.add_argument("--smiles", required=True,
                            help=".smi (one per line), .csv or .parquet file of molecules")
        parser.add_argument("--smiles-column", default="smiles",
                            help="column of a .csv or .parquet file")
        parser.add_argument("--limit", type=int, default=1000,
                            help="use the first N molecules (default 1000)")
        parser.add_argument("--mask-ratios", nargs="+", type=float, default=[0.15, 0.3, 0.5])
        parser.add_argument("--seed", type=int, default=0, help="mask seed (same for all)")
        parser.add_argument("--batch-size", type=int, default=32)
        parser.add_argument("--max-length", type=int, default=256)
        parser.add_argument("--nats", action="store_true", help="natural log instead of bits")
        parser.add_argument("--device", default="cpu")
        parser.add_argument("--out", required=True,
                            help="output folder: entropy.md, entropy.csv, entropy.png")

    @classmethod
    def run(cls, args: argparse.Namespace) -> int:
        import math

        from exlm_chem.analysis.entropy import (
            entropy_frame,
            entropy_markdown,
            masked_entropy,
            plot_entropy,
        )

        if args.labels is not None and len(args.labels) != len(args.models):
            raise ValueError(f"--labels gives {len(args.labels)} names for "
                             f"{len(args.models)} --models")
        if args.limit is not None and args.limit < 1:
            raise ValueError(f"--limit must be positive, got {args.limit}")
        smiles = read_smiles_input(args.smiles, args.smiles_column, args.limit)
        if not smiles:
            raise ValueError(f"{args.smiles} holds no SMILES")
        rows = []
        for i, model in enumerate(args.models):
            label = args.labels[i] if args.labels else None
            rows += masked_entropy(model, smiles, args.mask_ratios, seed=args.seed,
                                   batch_size=args.batch_size, max_length=args.max_length,
                                   base=math.e if args.nats else 2.0, device=args.device,
                                   label=label)
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        table = entropy_markdown(rows)
        (out / "entropy.md").write_text(
            f"Prediction entropy at masked positions; {len(smiles)} molecules from "
            f"{args.smiles}, mask seed {args.seed}.\n\n{table}", encoding="utf-8")
        entropy_frame(rows).to_csv(out / "entropy.csv", index=False)
        plot_entropy(rows, out / "entropy.png")
        print(table, end="")
        print(f"wrote entropy.md, entropy.csv and entropy.png to {out}")
        return 0
