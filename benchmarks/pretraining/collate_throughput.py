"""Collate time of one 64K-token pre-training batch on one CPU core: per molecule vs vectorised.

"per molecule" is the path the trainer had before: a Python loop that gathers each
molecule, masks it with ``rng.choice`` (kept here as it was) and expands it, then pads
row by row. "vectorised" is what DataLoader workers run now: one gather, one draw, one
sort (:mod:`exlm_chem.data.collate_flat`). Target: <= 20 ms, so that 8 workers outpace a GPU
step. Prints a markdown table (median wall and CPU time over the repeats).

    python benchmarks/pretraining/collate_throughput.py [--data DIR] [--max-tokens 65536] \
        [--repeats 20]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import torch

from exlm_chem.data.batching import token_budget_batches
from exlm_chem.data.collate import MaskedSample, SpecialIds, collate_exlm, collate_mlm
from exlm_chem.data.collate_flat import collate_exlm_flat, collate_mlm_flat, mask_flat
from exlm_chem.data.corpus import read_smiles_file, tokenize_corpus
from exlm_chem.data.tokenizer import SmilesTokenizer
from exlm_chem.provenance import git_commit, load_average, machine

DATA = Path(os.environ.get("EXLM_CHEM_PRETRAIN_DATA",
                         Path(__file__).resolve().parents[3] / "shared/data/pretrain"))


def mask_tokens_before(ids, ratio, rng, special) -> MaskedSample:
    """``exlm_chem.data.collate.mask_tokens`` as it was before the vectorised path."""
    n_ordinary = ids.size - 2
    n_mask = min(max(1, int(ratio * n_ordinary + rng.random())), n_ordinary)
    positions = np.sort(rng.choice(n_ordinary, size=n_mask, replace=False)) + 1
    masked = ids.copy()
    masked[positions] = special.mask
    return MaskedSample(masked, positions.astype(np.int64), ids[positions])


def per_molecule(corpus, indices, rng, special, objective):
    samples = [mask_tokens_before(corpus.get(int(i)), 0.15, rng, special) for i in indices]
    return collate_exlm(samples, 2, special) if objective == "exlm" else collate_mlm(samples,
                                                                                     special)


def vectorised(corpus, indices, rng, special, objective):
    ids, lengths = corpus.tokens(indices)
    flat = mask_flat(ids, lengths, 0.15, rng, special)
    return collate_exlm_flat(flat, 2, special) if objective == "exlm" else collate_mlm_flat(
        flat, special)


def timed(fn, repeats: int) -> tuple[float, float]:
    """Median wall and CPU milliseconds of ``fn()`` after one warm-up call."""
    fn()
    wall, cpu = [], []
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return 1000 * float(np.median(wall)), 1000 * float(np.median(cpu))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=DATA, help="folder of the MOSES/ChEMBL "
                        "files (default: $EXLM_CHEM_PRETRAIN_DATA or ../shared/data/pretrain)")
    parser.add_argument("--max-tokens", type=int, default=65536)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--molecules", type=int, default=20000, help="read per corpus file")
    args = parser.parse_args()
    torch.set_num_threads(1)

    tok = SmilesTokenizer()
    special = SpecialIds(tok.bos_id, tok.pad_id, tok.eos_id, tok.mask_id)
    smiles = [s for name in ("moses_train.smi.gz", "chembl_mix.smi.gz")
              for s in read_smiles_file(args.data / name, limit=args.molecules)]
    corpus = tokenize_corpus(smiles, tok)
    batches = token_budget_batches(corpus.lengths(), args.max_tokens,
                                   np.random.default_rng([0, 0]))
    # a batch near the median size in molecules, so neither extreme is timed
    indices = sorted(batches, key=len)[len(batches) // 2]
    lengths = corpus.lengths()[indices]
    padded = int(lengths.max()) * len(indices)

    rows = []
    for objective in ("exlm", "mlm"):
        times = {}
        for name, fn in (("per molecule", per_molecule), ("vectorised", vectorised)):
            rng = np.random.default_rng(0)
            times[name] = timed(lambda fn=fn, rng=rng, objective=objective: fn(
                corpus, indices, rng, special, objective), args.repeats)
        rows.append((objective, times))

    print(f"commit {git_commit()}; machine: {machine()}; load average at the end "
          f"{load_average()}")
    print(f"batch: {len(indices)} molecules (MOSES + ChEMBL mix), {int(lengths.sum())} tokens, "
          f"{padded} padded (budget {args.max_tokens}); median of {args.repeats} calls after "
          "one warm-up, one thread\n")
    print("| objective | per molecule: wall ms | CPU ms | vectorised: wall ms | CPU ms | "
          "speed-up (CPU) |")
    print("|---|---|---|---|---|---|")
    for objective, t in rows:
        label = "exlm k=2" if objective == "exlm" else "mlm"
        (ow, oc), (nw, nc) = t["per molecule"], t["vectorised"]
        print(f"| {label} | {ow:.1f} | {oc:.1f} | {nw:.1f} | {nc:.1f} | {oc / nc:.1f}x |")


if __name__ == "__main__":
    main()
