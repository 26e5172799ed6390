"""A pre-training run that fits a wall-clock budget and still decays its learning rate.

``--budget-minutes M`` times a few real steps (after warm-up steps that are not timed),
each on its own, and takes the median step as the run's pace: the first steps of a run
are slow while the DataLoader workers start, each new batch length compiles its kernels
and a partner run on the same GPU initialises CUDA, and a mean over so few steps would
let those stalls plan a run several times shorter than the time allows. It then fixes
``max_steps`` so that warm-up plus the full linear decay end inside the budget, with the
warm-up cut to a tenth of those steps if it was longer. The probe's
updates are undone, so the run that follows is exactly the run ``--max-steps N
--warmup-steps W`` would give with the decided N and W.

The decision is written to ``RUN/budget.json``. ExLM and its twin must get the same
steps (and so, reading the same stream, the same tokens): give each run the other's
directory with ``--budget-from``. Each writes its own measured figure first
(``own_max_steps``), then waits for its partners' files and takes the smallest, so both
settle on the slower run's step count whichever finishes probing first. A run given
only ``--budget-from`` (no budget of its own) adopts its partner's decision.
"""

from __future__ import annotations

import copy
import json
import logging
import math
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from exlm_chem.presets import fitted_warmup

logger = logging.getLogger(__name__)

BUDGET_FILE = "budget.json"


def steps_within(remaining_s: float, seconds_per_step: float, margin: float) -> int:
    """Optimizer steps that fit ``remaining_s`` seconds, keeping a share ``margin`` back
    for validation, checkpoints and logging."""
    if seconds_per_step <= 0:
        raise ValueError(f"seconds_per_step must be > 0, got {seconds_per_step}")
    return max(1, math.floor(remaining_s * (1.0 - margin) / seconds_per_step))


def read_budget(run_dir: str | Path) -> dict[str, Any] | None:
    path = Path(run_dir) / BUDGET_FILE
    return json.loads(path.read_text()) if path.is_file() else None


def write_budget(run_dir: str | Path, record: dict[str, Any]) -> None:
    from exlm_chem.files.safe_write import write_json_atomic

    write_json_atomic(Path(run_dir) / BUDGET_FILE, record)


def await_partners(dirs: Sequence[str], timeout_s: float, poll_s: float = 2.0) -> list[dict]:
    """The budget records of runs ``dirs``, waiting up to ``timeout_s`` for them to appear.

    Raises
    ------
    TimeoutError
        A partner wrote no ``budget.json`` in time (it failed, or was never started):
        training on without it would break the equal-steps comparison.
    """
    deadline = time.monotonic() + timeout_s
    found: dict[str, dict] = {}
    while True:
        for d in dirs:
            record = found.get(d) or read_budget(d)
            if record is not None:
                found[d] = record
        missing = [d for d in dirs if d not in found]
        if not missing:
            return [found[d] for d in dirs]
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {BUDGET_FILE} from {missing} after {timeout_s:.0f} s; "
                               "start the partner runs too, or drop --budget-from")
        time.sleep(poll_s)


def settle(own: dict[str, Any] | None, partners: list[dict], warmup_steps: int) -> dict:
    """The final record: the fewest steps any run measured, with a fitted warm-up."""
    candidates = ([own["own_max_steps"]] if own else []) + [p["own_max_steps"] for p in partners]
    max_steps = min(candidates)
    # an adopting run publishes the adopted figure as its own, for runs that read it in turn
    record = dict(own) if own else {"adopted_from_partner": True, "own_max_steps": max_steps}
    record.update(max_steps=max_steps, warmup_steps=fitted_warmup(warmup_steps, max_steps),
                  partners=[{k: p.get(k) for k in ("run", "objective", "own_max_steps",
                                                   "seconds_per_step")} for p in partners])
    return record


def measure_pace(trainer: Any, progress: dict) -> dict[str, Any]:
    """Seconds per step and tokens per second of ``trainer``'s real steps, then undone.

    Runs ``budget_warmup_steps`` untimed and ``budget_probe_steps`` timed optimizer steps
    on the batches the run starts with, then restores the weights, the optimizer state and
    the torch RNG, so the run afterwards is the one it would have been without the probe.

    Each timed step (fetching its batch included, as in the training loop) is timed on
    its own, synchronised with the GPU before and after, and the pace is the median step:
    a few steps that wait for a worker or compile kernels for a new batch length would
    otherwise set it, and the run would plan far fewer steps than its budget holds.

    Returns
    -------
    dict
        ``probe_steps`` and ``untimed_steps``; ``seconds_per_step``, the median timed
        step; ``tokens_per_second``, the mean tokens of a timed step over that median (the
        token rate at the pace the steps are planned with); ``step_seconds``, each timed
        step's seconds (rounded), to show the spread in ``budget.json``.
    """
    args, device = trainer.args, trainer.device
    model_state = copy.deepcopy(trainer.model.state_dict())
    optimizer_state = copy.deepcopy(trainer.optimizer.state_dict())
    rng_state = torch.get_rng_state()
    cuda_rng = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    batches = trainer.loader(progress)
    n_warm, n_timed = args.budget_warmup_steps, max(1, args.budget_probe_steps)
    step_seconds: list[float] = []
    tokens = 0
    for i in range(n_warm + n_timed):
        timed = i >= n_warm
        if timed:
            sync()  # earlier steps' queued work must not count
            start = time.perf_counter()
        item = next(batches)
        trainer.train_item(item, progress["step"] + i)  # descriptor targets too
        if timed:
            sync()
            step_seconds.append(time.perf_counter() - start)
            tokens += item.n_tokens
    del batches  # stops the workers
    trainer.model.load_state_dict(model_state)
    trainer.optimizer.load_state_dict(optimizer_state)
    torch.set_rng_state(rng_state)
    if cuda_rng is not None:
        torch.cuda.set_rng_state_all(cuda_rng)
    seconds_per_step = statistics.median(step_seconds)
    return {
        "probe_steps": n_timed,
        "untimed_steps": n_warm,
        "seconds_per_step": seconds_per_step,
        "tokens_per_second": tokens / n_timed / seconds_per_step,
        "step_seconds": [round(s, 4) for s in step_seconds],
    }


def _from_rank0(record: dict | None) -> dict:
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        box = [record]
        torch.distributed.broadcast_object_list(box, src=0)
        return box[0]
    return record  # type: ignore[return-value]


def decide_budget(trainer: Any, progress: dict, run_start: float, resume: bool) -> dict:
    """Decide (or, resuming, re-read) the run's steps; returns the budget record.

    The record's ``applied`` entry holds the ``PretrainArgs`` values to use: ``max_steps``,
    ``warmup_steps`` and, unless ``max_minutes`` was given, a hard stop at the time left
    when the decision was made (a safety net should the probe have been optimistic).
    """
    args = trainer.args
    saved = read_budget(trainer.out)
    if resume and saved is not None and saved.get("final"):
        record = saved
        logger.info("budget: resuming with the decided %d steps", record["max_steps"])
    else:
        own = None
        if args.budget_minutes is not None:
            pace = measure_pace(trainer, progress)
            remaining = 60 * args.budget_minutes - (time.monotonic() - run_start)
            own = {"run": str(trainer.out), "objective": args.objective,
                   "budget_minutes": args.budget_minutes, "margin": args.budget_margin, **pace,
                   "remaining_seconds": remaining,
                   "own_max_steps": steps_within(remaining, pace["seconds_per_step"],
                                                 args.budget_margin)}
            if trainer.rank == 0:
                write_budget(trainer.out, own)  # what the partners read
        record = None
        if trainer.rank == 0:
            partners = (await_partners(args.budget_from, 60 * args.budget_wait_minutes)
                        if args.budget_from else [])
            record = settle(own, partners, args.warmup_steps)
            record.update(final=True,
                          loop_minutes=own["remaining_seconds"] / 60 if own else None)
            write_budget(trainer.out, record)
        record = _from_rank0(record)
        logger.info("budget: %d steps (warm-up %d), %.3f s/step measured", record["max_steps"],
                    record["warmup_steps"], record.get("seconds_per_step") or float("nan"))
    applied = {"max_steps": record["max_steps"], "warmup_steps": record["warmup_steps"]}
    if args.max_minutes is None and record.get("loop_minutes"):
        applied["max_minutes"] = record["loop_minutes"]
    return {**record, "applied": applied}


__all__ = ["BUDGET_FILE", "await_partners", "decide_budget", "measure_pace", "read_budget",
           "settle", "steps_within", "write_budget"]
