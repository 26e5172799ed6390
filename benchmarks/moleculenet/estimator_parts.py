"""The default regressor taken apart: the network alone, the trees alone, and averages.

Fits ``ExLMMoleculeRegressor`` (its defaults, or the settings given as JSON) on a
regression task's train + valid rows of the scaffold split, as the benchmark runner does,
and prints one JSON line: the test RMSE and the RMSE on the estimator's own held-out share
(rebuilt from its seed as ``fit`` draws it) of the network alone, the tree head alone, and
their averages with the trees weighing 0.25, 0.5 and 0.75; the ``tree_weight_`` fit chose.

Usage::

    EXLM_CHEM_DATA=../shared/data/moleculenet \
        python benchmarks/moleculenet/estimator_parts.py lipo 0
    python benchmarks/moleculenet/estimator_parts.py lipo 0 '{"features": "rdkit2d"}'
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np


def _rmse(values: np.ndarray, labels: np.ndarray) -> float:
    return round(float(np.sqrt(np.nanmean((values - labels) ** 2))), 4)


def main() -> int:
    from exlm_chem.benchmark.tasks import load_task
    from exlm_chem.sklearn.estimator import ExLMMoleculeRegressor

    task, seed = sys.argv[1], int(sys.argv[2])
    settings = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
    data = load_task(task, "scaffold", 0)
    rows = np.concatenate([data.train, data.valid])  # the estimator holds out its own
    smiles = [data.smiles[i] for i in rows]
    cpu = time.process_time()
    est = ExLMMoleculeRegressor("models/exlm-small", random_state=seed, device="cpu",
                                **settings).fit(smiles, data.labels[rows])
    out = {"task": task, "seed": seed, "settings": settings,
           "fit_cpu_s": round(time.process_time() - cpu, 1),
           "tree_weight_": est.tree_weight_}
    held_out = np.flatnonzero(est.held_out_mask_)  # rows of `smiles`
    parts = {"held_out": ([smiles[i] for i in held_out], data.labels[rows][held_out]),
             "test": ([data.smiles[i] for i in data.test], data.labels[data.test])}
    for name, (part, y) in parts.items():
        inputs = est._prepared(part, "raise")
        samples, trees = est._all_outputs(inputs.smiles, inputs.features)
        net = samples.mean(axis=(0, 1))  # [n, T]
        out[name] = {"network": _rmse(net, y), "trees": _rmse(trees, y),
                     **{f"trees {w}": _rmse(w * trees + (1 - w) * net, y)
                        for w in (0.25, 0.5, 0.75)}}
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
