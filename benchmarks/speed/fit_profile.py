"""Where a default fit's CPU time goes, on a TDC ADMET task's training part.

Fits the default estimator of the task's kind (classifier for AUROC/AUPRC tasks, regressor
for MAE/Spearman ones), as the TDC runner's ``exlm_defaults`` row does for one seed, under
:mod:`cProfile` with a CPU-time clock, and prints one JSON line: the fit's CPU and wall
seconds and the CPU seconds spent inside each phase of ``fit`` (cumulative time of the
function that does it; a phase nested in another is counted in both, so the phases need not
sum to the whole). Work the fit hands to worker processes (joblib's, for the descriptors of
a large set) is not in the phases: ``children_cpu_s`` counts it, polled while the fit runs
(the workers exit when idle, before the fit returns).

- ``check_smiles``: parsing and canonicalising each molecule once;
- ``raw_features``: RDKit descriptors (and any other feature kinds the defaults read);
- ``load_backbone``: reading the pre-trained weights;
- ``encoder inference``: every run of the encoder without gradients: the pooled states of
  every molecule before fine-tuning, and the held-out molecules' outputs at each epoch;
- ``boosted trees`` / ``forest``: the tree head's two members;
- ``finetune``: the network's epochs, head-first phase and per-epoch validation included;
- ``held-out choices``: tree weight, calibration, conformity scores.

Usage::

    python benchmarks/speed/fit_profile.py cyp2d6_veith --seed 1 --threads 1 \
        --out benchmarks/results/tdc_admet/fit_profile.jsonl
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import sys
import threading
import time
from pathlib import Path

#: phase name -> (file suffix, function, caller or None): the phase's CPU time is the
#: function's cumulative time, counting only the calls made from ``caller`` when one is named
PHASES = {
    "check_smiles": ("data/featurize.py", "check_smiles", None),
    "raw_features": ("data/feature_spec.py", "raw_features", None),
    "load_backbone": ("model/pretrained.py", "load_backbone", None),
    "encoder inference": ("model/molecule_model.py", "run", None),
    "boosted trees": ("model/tree_head.py", "fit", "fit"),  # TreeHead.fit, from FrozenTrees
    "forest": ("model/tree_head.py", "fit", None),
    "finetune": ("train/finetune.py", "finetune", None),
    "held-out choices": ("sklearn/base.py", "_fit_held_out", None),
}


def _cumulative(stats: pstats.Stats, suffix: str, name: str,
                caller: str | None) -> list[tuple[int, float]]:
    """(line, cumulative seconds) of every profiled function ``name`` in a file ending with
    ``suffix``, from the calls of functions named ``caller`` only when one is given."""
    found = []
    for (path, line, func), (_, _, _, cumulative, callers) in stats.stats.items():
        if func != name or not path.endswith(suffix):
            continue
        if caller is not None:
            cumulative = sum(entry[3] for key, entry in callers.items() if key[2] == caller)
        found.append((line, cumulative))
    return sorted(found)


class ChildCPU:
    """CPU seconds (user + system) of this process's descendants, polled every ``every``
    seconds from a thread: the most seen of each process, summed."""

    def __init__(self, every: float = 0.5) -> None:
        import psutil

        self._me, self._every = psutil.Process(), every
        self._seen: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        import psutil

        while not self._stop.wait(self._every):
            for child in self._me.children(recursive=True):
                try:
                    times = child.cpu_times()
                except psutil.Error:  # it exited between the listing and the read
                    continue
                self._seen[child.pid] = max(self._seen.get(child.pid, 0.0),
                                            times.user + times.system)

    def __enter__(self) -> ChildCPU:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def seconds(self) -> float:
        return sum(self._seen.values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("task", help="a TDC ADMET task name, e.g. cyp2d6_veith")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--model", default="models/exlm-small")
    parser.add_argument("--out", type=Path, default=None, help="append the line to this file")
    args = parser.parse_args()

    import torch

    from exlm_chem.benchmark.tdc import load_tdc_task
    from exlm_chem.data.tdc_admet import TDC_ADMET_TASKS
    from exlm_chem.provenance import git_commit, machine
    from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier, ExLMMoleculeRegressor

    torch.set_num_threads(args.threads)
    spec = TDC_ADMET_TASKS[args.task]
    data = load_tdc_task(args.task, args.seed)
    smiles = [data.smiles[i] for i in data.train]
    labels = data.labels[data.train]
    kind = ExLMMoleculeClassifier if spec.task_type == "classification" else ExLMMoleculeRegressor
    estimator = kind(args.model, random_state=args.seed, device="cpu")

    profile = cProfile.Profile(time.process_time)
    wall, cpu = time.perf_counter(), time.process_time()
    with ChildCPU() as children:
        profile.runcall(estimator.fit, smiles, labels if labels.shape[1] > 1 else labels[:, 0])
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    stats = pstats.Stats(profile)
    phases = {}
    for phase, (suffix, name, caller) in PHASES.items():
        found = _cumulative(stats, suffix, name, caller)
        if phase == "boosted trees":  # TreeHead.fit is defined before ForestHead.fit
            found = found[:1]
        elif phase == "forest":
            found = found[1:2]
        phases[phase] = round(sum(seconds for _, seconds in found), 1)
    record = {
        "task": args.task, "seed": args.seed, "n_train": len(smiles),
        "estimator": kind.__name__, "threads": args.threads,
        "fit_cpu_s": round(cpu, 1), "children_cpu_s": round(children.seconds, 1),
        "fit_wall_s": round(wall, 1),
        "load_1min_at_end": round(os.getloadavg()[0], 2), "phases_cpu_s": phases,
        "best_epoch": int(estimator.best_epoch_), "epochs_run": len(estimator.history_),
        "commit": git_commit(), "machine": machine(),
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": " ".join(["python", "benchmarks/speed/fit_profile.py", *sys.argv[1:]]),
    }
    line = json.dumps(record)
    print(line, flush=True)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
