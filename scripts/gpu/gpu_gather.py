"""Gather a GPU session's results into one small folder, and unpack it on the CPU side.

The device tool brings back at most 8 files of at most 16 MiB, 64 MiB together, at most two
folders deep. ``gather`` writes one weights file per arm, two more, and as many snapshots as
fit; an arm's weights that would pass the 64 MiB are left for a further call (``gather
--arms NAME ...``, which brings only those arms' weights):

    <arm>-<preset>/model.safetensors  each arm's weights in fp16 (the latest checkpoint)
    <arm>-<preset>-s<step>/model.safetensors   snapshots (``pretrain --snapshot-every``),
                      spread over each arm's run and over the arms, while files are left
    details.tar.gz    each checkpoint's config/vocab/metadata, run logs (log.jsonl, stdout),
                      benchmark tables and JSON, plan, status, env, progress samples, and
                      report.md (environment, benchmark table, training summary; also
                      printed) and curves.png (training and validation loss, tokens/s)
    manifest.json     every file's size and sha256, the commit and what is missing

``unpack`` rebuilds ``DEST/<name>/checkpoint/`` (a complete checkpoint directory, what
``scripts/ship_checkpoint.py --run DEST/<name>`` reads) and ``DEST/<name>/log.jsonl``.
"""

from __future__ import annotations

import hashlib
import io
import shutil
import tarfile
import tempfile
from pathlib import Path

from gpu_common import Work, arm_names, read_json, read_run_log, write_json

MAX_FILE_BYTES = 16 * 2**20
WEIGHTS = "model.safetensors"
SMALL_FILES = ("config.json", "vocab.txt", "metadata.json")
MAX_FILES = 8  # what the device tool brings back
MAX_TOTAL_BYTES = 64 * 2**20  # all files together
OTHER_FILES = 2  # details.tar.gz and manifest.json
# room kept for details.tar.gz and manifest.json (logs of many arms stay well under it)
OTHER_BYTES = 2 * 2**20


def fits(taken: int, size: int) -> bool:
    """Whether a weights file of ``size`` bytes still fits beside ``taken`` bytes of weights
    and the two other files, within one call's return."""
    return size <= MAX_FILE_BYTES and taken + size <= MAX_TOTAL_BYTES - OTHER_BYTES


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _fp16_checkpoint(source: Path, dest: Path, extra: dict) -> str | None:
    """Save the checkpoint folder ``source`` in fp16 into ``dest``; None, or why not."""
    import torch

    from exlm_chem.model.checkpoint import load_checkpoint, save_checkpoint

    for _ in range(3):  # a save in progress renames the folder aside for an instant
        try:
            model, config, meta = load_checkpoint(source)
            break
        except FileNotFoundError as err:
            reason = str(err)
            import time

            time.sleep(2)
    else:
        return reason
    for key in ("format", "package_version", "objective", "num_parameters", "dtype"):
        meta.pop(key, None)  # save_checkpoint writes these itself
    meta.update(extra)
    vocab = (source / "vocab.txt").read_text().splitlines()
    save_checkpoint(dest, model, config, vocab, meta, dtype=torch.float16)
    return None


def _add_file(tar: tarfile.TarFile, path: Path, name: str, max_lines: int = 0) -> None:
    if not path.is_file():
        return
    if max_lines:  # stdout logs: the end is what matters
        lines = path.read_text(errors="replace").splitlines()[-max_lines:]
        data = ("\n".join(lines) + "\n").encode()
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    else:
        tar.add(path, arcname=name)


def _step(snapshot: Path) -> int:
    return int(snapshot.name.split("_")[1])


def _snapshots_before_checkpoint(run: Path) -> list[Path]:
    """The run's snapshots, less those at or past its checkpoint's step (already brought)."""
    last = read_json(run / "checkpoint" / "metadata.json", {}).get("steps", float("inf"))
    return [p for p in sorted((run / "snapshots").glob("step_*")) if _step(p) < last]


def _spread_order(paths: list[Path]) -> list[Path]:
    """The latest, then the middle one, then the quarters, ...: every prefix of the order
    spreads over the run."""
    n, order = len(paths), []
    fractions, denominator = [1.0], 2
    while denominator <= 2 * n:
        fractions += [k / denominator for k in range(1, denominator, 2)]
        denominator *= 2
    for index in [round(f * (n - 1)) for f in fractions] + list(range(n)):
        if paths[index] not in order:
            order.append(paths[index])
    return order


def _spread(snapshots: dict[str, list[Path]], room: int) -> list[tuple[str, Path]]:
    """Up to ``room`` (arm, snapshot) pairs, the arms in turn, each in its spread order."""
    queues = {arm: _spread_order(paths) for arm, paths in snapshots.items() if paths}
    picks: list[tuple[str, Path]] = []
    while len(picks) < room and any(queues.values()):
        for arm, queue in queues.items():
            if queue and len(picks) < room:
                picks.append((arm, queue.pop(0)))
    return picks


def gather(work: Work, out: Path, preset: str, report: str, curves,
           only: list[str] | None = None) -> dict:
    """Write the result folder; returns the manifest (also written as manifest.json).
    ``only``: these arms' weights alone (no snapshots), for a call after one whose return
    had no room for them."""
    out.mkdir(parents=True, exist_ok=True)
    manifest = {"commit": read_json(work.env, {}).get("commit"), "files": {}, "missing": []}
    taken = 0  # bytes of weights in out
    env = read_json(work.env, {})
    extra = {"gpu_env": env, "source": "scripts/gpu/gpu_pretrain.py"}
    with tempfile.TemporaryDirectory() as tmp:
        details = tarfile.open(out / "details.tar.gz", "w:gz")

        def bring(source: Path, name: str, arm: str) -> None:
            nonlocal taken
            staged = Path(tmp) / name
            why = _fp16_checkpoint(source, staged, extra)
            if why is not None:
                manifest["missing"].append(f"{name}: no checkpoint ({why})")
                return
            size = (staged / WEIGHTS).stat().st_size
            if fits(taken, size):
                (out / name).mkdir(exist_ok=True)
                shutil.copyfile(staged / WEIGHTS, out / name / WEIGHTS)
                taken += size
            elif size > MAX_FILE_BYTES:
                manifest["missing"].append(f"{name}/{WEIGHTS}: {size} bytes in fp16 > 16 MiB")
            else:
                manifest["missing"].append(f"{name}/{WEIGHTS}: no room in 64 MiB (gather "
                                           f"--arms {arm} brings it)")
            for small in SMALL_FILES:
                _add_file(details, staged / small, f"{name}/checkpoint/{small}")

        arms = arm_names(work)
        unknown = sorted(set(only or ()) - set(arms))
        if unknown:
            raise SystemExit(f"gather --arms: no such arm {unknown}; arms: {arms}")
        for objective in arms:
            name = f"{objective}-{preset}"
            if only is None or objective in only:
                bring(work.run(objective) / "checkpoint", name, objective)
            _add_file(details, work.run(objective) / "log.jsonl", f"{name}/log.jsonl")
            _add_file(details, work.logs / f"{objective}.log", f"logs/{objective}.log", 3000)
        snapshots = {arm: _snapshots_before_checkpoint(work.run(arm)) for arm in arms}
        room = 0 if only is not None else MAX_FILES - OTHER_FILES - len(arms)
        picks = _spread(snapshots, room)
        for arm, path in picks:
            bring(path, f"{arm}-{preset}-s{_step(path)}", arm)
        left = sum(len(p) for p in snapshots.values()) - len(picks)
        if left:
            manifest["missing"].append(f"{left} snapshots: no room in {MAX_FILES} files")
        for path in sorted(work.logs.glob("*.log")):
            if path.stem not in arms:
                _add_file(details, path, f"logs/{path.name}", 3000)
        for path in sorted(work.bench.glob("*")):
            _add_file(details, path, f"bench/{path.name}")
        for path in (work.plan, work.status, work.env, work.progress):
            _add_file(details, path, path.name)
        (Path(tmp) / "report.md").write_text(report)
        _add_file(details, Path(tmp) / "report.md", "report.md")
        try:
            curves(work, Path(tmp) / "curves.png")
            _add_file(details, Path(tmp) / "curves.png", "curves.png")
        except Exception as err:  # a missing plot must not cost the checkpoints
            manifest["missing"].append(f"curves.png: {type(err).__name__}: {err}")
        details.close()
    for path in sorted(out.rglob("*")):
        if path.is_file() and path.name != "manifest.json":
            manifest["files"][str(path.relative_to(out))] = {
                "bytes": path.stat().st_size,
                "sha256": _sha256(path),
            }
    write_json(out / "manifest.json", manifest)
    return manifest


def plot_curves(work: Work, path: Path) -> None:
    """Training loss (and validation points) and tokens/s of both runs against steps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_loss, ax_rate) = plt.subplots(1, 2, figsize=(11, 4))
    for index, objective in enumerate(arm_names(work)):
        color = f"C{index}"
        train, valid = read_run_log(work.run(objective))
        steps = [r["step"] for r in train]
        ax_loss.plot(steps, [r["loss"] for r in train], color=color, lw=0.8, label=objective)
        ax_loss.plot(
            [r["step"] for r in valid],
            [r["valid_loss"] for r in valid],
            "o",
            color=color,
            label=f"{objective} valid",
        )
        ax_rate.plot(steps, [r.get("tokens_per_s", 0) for r in train], color=color, label=objective)
    ax_loss.set(xlabel="step", ylabel="loss (ExLM: DAG NLL per target; MLM: CE)")
    ax_rate.set(xlabel="step", ylabel="tokens/s (unexpanded)")
    for ax in (ax_loss, ax_rate):
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def unpack(source: Path, dest: Path) -> list[Path]:
    """Check the manifest's checksums and rebuild the checkpoint folders under ``dest``."""
    manifest = read_json(source / "manifest.json")
    if manifest is None:
        raise SystemExit(f"{source}/manifest.json not found: not a gathered folder")
    for name, entry in manifest["files"].items():
        if _sha256(source / name) != entry["sha256"]:
            raise SystemExit(f"{source / name}: sha256 differs from the manifest")
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(source / "details.tar.gz") as tar:
        tar.extractall(dest, filter="data")
    runs = []
    for weights in sorted(source.glob(f"*/{WEIGHTS}")):
        target = dest / weights.parent.name / "checkpoint"
        target.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(weights, target / WEIGHTS)
        runs.append(target.parent)
    return runs
