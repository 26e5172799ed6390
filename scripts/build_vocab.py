#!/usr/bin/env python
"""Build the packaged SMILES vocabulary ``exlm_chem/data/vocab.txt``.

Counts the Schwaller tokens of the pre-training corpus (MOSES train + the ChEMBL mix)
and of the SMILES column of all seven MoleculeNet classification sets (every row, so
that charges, metals and rare atoms that only the benchmarks use are covered; minimum
count 1). The vocabulary is the five special tokens, then every other token by
descending count (ties alphabetical).

Then it proves the vocabulary is complete: ``decode(encode(s)) == s`` with no unknown
token for every RDKit-parsable SMILES of the seven sets, MOSES train and the ChEMBL mix.
It prints the counts checked and failing and exits with status 1 if any fails.

Usage::

    python scripts/build_vocab.py [--data-dir ../shared/data] [--out exlm_chem/data/vocab.txt]
"""

from __future__ import annotations

import argparse
import gzip
import multiprocessing
import os
import sys
import time
from collections import Counter
from collections.abc import Iterator
from itertools import chain
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a checkout without installing

from exlm_chem.data.moleculenet_sets import DATASETS  # noqa: E402
from exlm_chem.data.tokenizer import SPECIAL_TOKENS, SmilesTokenizer, tokenize_smiles  # noqa: E402

# the seven classification sets, in name order: file name -> SMILES column
MOLECULENET = {
    name: spec.smiles_column
    for name, spec in sorted(DATASETS.items())
    if spec.task_type == "classification"
}
PRETRAIN = ("moses_train", "chembl_mix")
CHUNK = 5000


class CheckResult(NamedTuple):
    """Round-trip outcome for one chunk of SMILES."""

    parsable: int
    unparsable: int
    failed: int
    examples: list[str]


def default_data_dir() -> Path:
    env = os.environ.get("EXLM_CHEM_DATA")
    if env:
        return Path(env).resolve().parent
    return REPO.parent / "shared" / "data"


def read_smi(path: Path) -> list[str]:
    """One SMILES per line; the trailing newline of the file is not a molecule."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        lines = handle.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, start=1):
        if line == "" or line != line.strip():
            raise ValueError(f"{path}, line {number}: empty line or surrounding whitespace")
    return lines


def read_moleculenet(path: Path, column: str) -> list[str]:
    import pandas as pd

    # keep_default_na=False: a SMILES must never turn into NaN (pandas treats "NA" etc. as missing)
    frame = pd.read_csv(path, usecols=[column], dtype=str, keep_default_na=False)
    values = frame[column].tolist()
    empty = [row for row, value in enumerate(values) if value == ""]
    if empty:
        raise ValueError(f"{path}: empty SMILES in data rows {empty[:10]}")
    return values


def load_corpora(data_dir: Path) -> dict[str, list[str]]:
    corpora: dict[str, list[str]] = {}
    for name in PRETRAIN:
        corpora[name] = read_smi(data_dir / "pretrain" / f"{name}.smi.gz")
    for name, column in MOLECULENET.items():
        corpora[name] = read_moleculenet(data_dir / "moleculenet" / f"{name}.csv.gz", column)
    return corpora


def count_tokens(smiles: list[str]) -> Counter[str]:
    counts: Counter[str] = Counter()
    counts.update(chain.from_iterable(map(tokenize_smiles, smiles)))
    return counts


def vocabulary(counts: Counter[str]) -> list[str]:
    ordinary = sorted(
        (tok for tok in counts if tok not in SPECIAL_TOKENS), key=lambda tok: (-counts[tok], tok)
    )
    return [*SPECIAL_TOKENS, *ordinary]


# ---------------------------------------------------------------------- round trip
_TOKENIZER: SmilesTokenizer | None = None


def _init_worker(vocab_path: str) -> None:
    from rdkit import RDLogger

    RDLogger.DisableLog("rdApp.*")
    global _TOKENIZER
    _TOKENIZER = SmilesTokenizer.from_file(vocab_path)


def _check_chunk(smiles: list[str]) -> CheckResult:
    from rdkit import Chem

    assert _TOKENIZER is not None
    tok = _TOKENIZER
    parsable = unparsable = failed = 0
    examples: list[str] = []
    for s in smiles:
        if Chem.MolFromSmiles(s) is None:
            unparsable += 1
            continue
        parsable += 1
        try:
            ok = tok.decode(tok.encode(s, strict=True)) == s
        except ValueError:  # strict: an unknown token
            ok = False
        if not ok:
            failed += 1
            if len(examples) < 5:
                examples.append(s)
    return CheckResult(parsable, unparsable, failed, examples)


def _chunks(smiles: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(smiles), CHUNK):
        yield smiles[start : start + CHUNK]


def check_round_trip(
    corpora: dict[str, list[str]], names: list[str], vocab_path: Path, workers: int
) -> int:
    """Print per-corpus round-trip counts; return the total number of failures."""
    context = multiprocessing.get_context("spawn")
    total_checked = total_failed = 0
    print("\nround trip decode(encode(s)) == s over RDKit-parsable SMILES (no [UNK] allowed):")
    print(f"{'corpus':<12} {'rows':>9} {'parsable':>9} {'failed':>7}")
    with context.Pool(workers, initializer=_init_worker, initargs=(str(vocab_path),)) as pool:
        for name in names:
            parsable = unparsable = failed = 0
            examples: list[str] = []
            for result in pool.imap(_check_chunk, _chunks(corpora[name])):
                parsable += result.parsable
                unparsable += result.unparsable
                failed += result.failed
                examples.extend(result.examples)
            print(f"{name:<12} {parsable + unparsable:>9} {parsable:>9} {failed:>7}")
            if examples:
                print(f"  failing examples: {examples[:5]}")
            total_checked += parsable
            total_failed += failed
    print(f"checked {total_checked} RDKit-parsable SMILES, {total_failed} failed")
    return total_failed


# ---------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=default_data_dir(),
        help="folder holding pretrain/ and moleculenet/ "
        "(default: parent of $EXLM_CHEM_DATA, else ../shared/data)",
    )
    parser.add_argument(
        "--out", type=Path, default=REPO / "exlm_chem" / "data" / "vocab.txt", help="vocab file"
    )
    parser.add_argument("--workers", type=int, default=2, help="round-trip check processes")
    parser.add_argument("--skip-check", action="store_true", help="skip the RDKit round trip")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    corpora = load_corpora(args.data_dir)
    total: Counter[str] = Counter()
    print(f"{'corpus':<12} {'molecules':>9} {'tokens':>11} {'distinct':>8} {'new':>4}")
    for name, smiles in corpora.items():
        counts = count_tokens(smiles)
        new = sorted(set(counts) - set(total))
        total.update(counts)
        print(
            f"{name:<12} {len(smiles):>9} {sum(counts.values()):>11} {len(counts):>8} {len(new):>4}"
        )
    print(
        f"{'all':<12} {sum(map(len, corpora.values())):>9} {sum(total.values()):>11} "
        f"{len(total):>8}"
    )

    tokens = vocabulary(total)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(f"{tok}\n" for tok in tokens), encoding="utf-8")
    print(
        f"\nvocabulary size {len(tokens)} ({len(SPECIAL_TOKENS)} special + "
        f"{len(tokens) - len(SPECIAL_TOKENS)} tokens), written to {args.out}"
    )
    singletons = sum(1 for tok in tokens[len(SPECIAL_TOKENS) :] if total[tok] == 1)
    print(
        f"tokens seen once: {singletons}; seen < 10 times: "
        f"{sum(1 for tok in tokens[len(SPECIAL_TOKENS) :] if total[tok] < 10)}"
    )
    print("token counts (id token count):")
    cells = [f"{i:>3} {tok} {total[tok]}" for i, tok in enumerate(tokens) if tok in total]
    for start in range(0, len(cells), 4):
        print("  " + " | ".join(cells[start : start + 4]))

    failed = 0
    if not args.skip_check:
        names = [*MOLECULENET, *PRETRAIN]
        failed = check_round_trip(corpora, names, args.out, args.workers)
    print(f"\ndone in {time.perf_counter() - started:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
