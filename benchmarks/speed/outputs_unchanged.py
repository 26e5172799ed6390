"""Outputs of the shipped models before and after a refactoring: record once, compare after.

``record OUT`` writes, for 50 BBBP SMILES (one of them invalid, one repeated):

- ``embed`` of ``models/exlm-small`` and ``models/mlm-small``, ``bos`` and ``mean`` pooling,
  and ``ExLMEmbedder.transform`` (``mean``);
- a classifier (2 members, isotonic calibration) and a regressor (``rdkit2d`` features,
  ``tta=1``), fine-tuned from ``exlm-small`` for 2 epochs with a fixed seed: their
  ``predict_proba`` / ``predict``, ``transform``, ``predict_uncertainty`` and
  ``predict_interval``; the fitted models are saved (``save``) and pickled beside.

``compare OUT`` computes the same again with the ``exlm_chem`` now imported (fitting anew
with the same seed), loads the saved and pickled models of the recording and checks every
array against the recording within float tolerance.

``time OUT --baseline SRC`` times ``embed`` (2048 MOSES molecules) and the recorded
classifier's ``predict_proba`` side by side: one worker process imports this checkout's
``exlm_chem``, another the one under ``SRC`` (for example ``git worktree add SRC REV``),
and the calls alternate between them round by round, so both see the same load.

Usage::

    python benchmarks/speed/outputs_unchanged.py record /tmp/outputs
    python benchmarks/speed/outputs_unchanged.py compare /tmp/outputs
    python benchmarks/speed/outputs_unchanged.py time /tmp/outputs --baseline ../before --n 2048
"""

from __future__ import annotations

import argparse
import gzip
import os
import pickle
import sys
import time
import warnings
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]  # benchmarks/<group>/NAME.py
MODELS = {"exlm": REPO / "models" / "exlm-small", "mlm": REPO / "models" / "mlm-small"}
INVALID = "C1CC(N"  # unclosed ring and branch: RDKit rejects it


def _data() -> tuple[list[str], tuple[list[str], np.ndarray, np.ndarray]]:
    """(50 SMILES to predict, 80 training SMILES, their labels and a numeric target)."""
    import pandas as pd

    root = Path(os.environ.get("EXLM_CHEM_DATA", REPO.parent / "shared" / "data" / "moleculenet"))
    frame = pd.read_csv(root / "bbbp.csv.gz")
    smiles = frame["smiles"].tolist()
    train = smiles[100:180]
    labels = frame["p_np"].to_numpy()[100:180]
    size = np.array([len(s) for s in train], dtype=np.float64)  # a target any model can learn
    test = [*smiles[:48], INVALID, smiles[3]]
    return test, (train, labels, size)


def _outputs(test: list[str], train: tuple, out: Path | None) -> dict[str, np.ndarray]:
    import torch

    from exlm_chem import ExLMEmbedder, embed
    from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier, ExLMMoleculeRegressor

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    result: dict[str, np.ndarray] = {}
    for name, path in MODELS.items():
        for pooling in ("bos", "mean"):
            emb, valid = embed(test, model=path, pooling=pooling, device="cpu")
            result[f"embed_{name}_{pooling}"] = emb
            result[f"valid_{name}_{pooling}"] = valid
    result["embedder_exlm_mean"] = ExLMEmbedder(MODELS["exlm"], device="cpu").fit(
        test).transform(test)
    smiles, labels, size = train
    common = {"epochs": 2, "batch_size": 16, "random_state": 0, "device": "cpu",
              "validation_fraction": 0.25, "pretrained": str(MODELS["exlm"])}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = ExLMMoleculeClassifier(n_models=2, calibrate="isotonic", **common).fit(
            smiles, labels)
        reg = ExLMMoleculeRegressor(features="rdkit2d", tta=1, **common).fit(smiles, size)
        models = {"clf": clf, "reg": reg}
        result.update(_model_outputs(models, test, "fit"))
        if out is not None:
            for name, est in models.items():
                est.save(out / name)
                (out / f"{name}.pkl").write_bytes(pickle.dumps(est))
    return result


def _model_outputs(models: dict, test: list[str], tag: str) -> dict[str, np.ndarray]:
    clf, reg = models["clf"], models["reg"]
    return {
        f"{tag}_clf_proba": clf.predict_proba(test),
        f"{tag}_clf_transform": clf.transform(test),
        f"{tag}_clf_spread": np.stack(clf.predict_uncertainty(test)),
        f"{tag}_reg_predict": reg.predict(test),
        f"{tag}_reg_transform": reg.transform(test),
        f"{tag}_reg_interval": np.stack(reg.predict_interval(test)),
        f"{tag}_reg_spread": np.stack(reg.predict_uncertainty(test)),
    }


def record(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    test, train = _data()
    result = _outputs(test, train, out)
    np.savez(out / "outputs.npz", **result)
    print(f"recorded {len(result)} arrays in {out}")


def compare(out: Path, atol: float = 1e-5) -> int:
    from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier, ExLMMoleculeRegressor

    recorded = dict(np.load(out / "outputs.npz"))
    test, train = _data()
    now = _outputs(test, train, None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        saved = {"clf": ExLMMoleculeClassifier.load(out / "clf"),
                 "reg": ExLMMoleculeRegressor.load(out / "reg")}
        pickled = {n: pickle.loads((out / f"{n}.pkl").read_bytes()) for n in ("clf", "reg")}
        for tag, models in (("saved", saved), ("pickled", pickled)):
            for key, value in _model_outputs(models, test, tag).items():
                now[key] = value
    failures = 0
    for key, value in now.items():
        expected = recorded[key.replace("saved_", "fit_").replace("pickled_", "fit_")]
        ok = expected.shape == value.shape and np.allclose(
            np.asarray(expected, dtype=np.float64), np.asarray(value, dtype=np.float64),
            atol=atol, rtol=1e-5, equal_nan=True)
        if not ok:
            failures += 1
            diff = (np.nanmax(np.abs(np.asarray(expected, float) - np.asarray(value, float)))
                    if expected.shape == value.shape else f"shape {value.shape}")
            print(f"DIFFERS {key}: {diff}")
    print(f"{len(now) - failures} of {len(now)} arrays unchanged (atol {atol})")
    return 1 if failures else 0


def _worker(out: Path, n: int) -> None:
    """Load the data and the saved classifier, then time one call per line read on stdin
    (``embed`` or ``predict``) and answer with its seconds: the parent alternates two of
    these, one per checkout, so both see the same machine load."""
    import torch

    from exlm_chem import embed
    from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    root = Path(os.environ.get("EXLM_CHEM_DATA", REPO.parent / "shared" / "data" / "moleculenet"))
    with gzip.open(root.parent / "pretrain" / "moses_test.smi.gz", "rt") as fh:
        smiles = [line.split()[0] for line in fh if line.strip()][1 : n + 1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = ExLMMoleculeClassifier.load(out / "clf")
    calls = {"embed": lambda: embed(smiles, model=MODELS["exlm"], device="cpu", pooling="mean"),
             "predict": lambda: clf.predict_proba(smiles)}
    for call in calls.values():
        call()  # warm-up: first allocations, lazy imports
    print("ready", flush=True)
    for line in sys.stdin:
        began = time.perf_counter()
        calls[line.strip()]()
        print(f"{time.perf_counter() - began:.6f}", flush=True)


def timing(out: Path, n: int, rounds: int, baseline: Path, result: Path | None) -> None:
    """Molecules per second of ``embed`` and a saved classifier's ``predict_proba`` for this
    checkout and the ``baseline`` source tree, in alternating rounds (ABBA order)."""
    import statistics
    import subprocess

    sides = {"before": baseline.resolve(), "after": REPO}
    workers = {}
    for side, src in sides.items():
        env = {**os.environ, "PYTHONPATH": str(src)}
        workers[side] = subprocess.Popen(
            [sys.executable, __file__, "_worker", str(out), "--n", str(n)], env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert workers[side].stdout.readline().strip() == "ready", side
    seconds = {(side, call): [] for side in sides for call in ("embed", "predict")}
    for r in range(rounds):
        order = list(sides) if r % 2 == 0 else list(reversed(sides))
        for side in order:
            for call in ("embed", "predict"):
                workers[side].stdin.write(call + "\n")
                workers[side].stdin.flush()
                seconds[side, call].append(float(workers[side].stdout.readline()))
    for worker in workers.values():
        worker.stdin.close()
        worker.wait()
    rate = {key: n / statistics.median(values) for key, values in seconds.items()}
    lines = [f"{n} MOSES test molecules, {rounds} alternating rounds, OMP_NUM_THREADS="
             f"{os.environ.get('OMP_NUM_THREADS', '2')}; median molecules per second",
             "", "| call | before | after | after / before |", "|---|---:|---:|---:|"]
    for call, title in (("embed", "embed (mean)"), ("predict", "predict_proba (2 members)")):
        before, after = rate["before", call], rate["after", call]
        lines.append(f"| {title} | {before:.1f} | {after:.1f} | {after / before:.3f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if result is not None:
        result.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("record", "compare", "time", "_worker"))
    parser.add_argument("out", type=Path)
    parser.add_argument("--n", type=int, default=2048)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--baseline", type=Path,
                        help="time: source tree of the code before (holds exlm_chem/)")
    parser.add_argument("--result", type=Path, help="time: also write the table here")
    args = parser.parse_args(argv)
    if args.mode == "record":
        record(args.out)
        return 0
    if args.mode == "compare":
        return compare(args.out)
    if args.mode == "_worker":
        _worker(args.out, args.n)
        return 0
    if args.baseline is None:
        parser.error("time needs --baseline")
    timing(args.out, args.n, args.rounds, args.baseline, args.result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
