"""The output directory of a screen: its manifest, its parts and what counts as done.

``_manifest.json`` names what the parts were computed from: the model's SHA-256, the mode
(predict or embed), the settings that change the output and the input files (path, size,
modification time). A rerun with the same identity resumes; any difference is an error
that lists it, so that one directory never mixes two models or two settings.

Each part is ``part-FFFFFF-CCCCCCCC.parquet`` (input file F, chunk C), written under a
hidden temporary name and renamed, so a part either exists whole or not at all. Its
footer carries the run's identity hash and its row counts: a part is complete when both
match, and anything else (a leftover temporary, a truncated copy) is redone. Files whose
names start with ``_`` or ``.`` are skipped by Parquet dataset readers, so
``pandas.read_parquet(out)`` reads exactly the parts.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, NamedTuple

from exlm_chem.files.safe_write import write_json_atomic
from exlm_chem.screening.inputs import Chunk, InputFile

MANIFEST = "_manifest.json"
FORMAT = "exlm_chem-screen-1"
PART_KEY = b"exlm_chem.screen"  # Parquet footer key of a part's JSON record


class PartInfo(NamedTuple):
    rows: int
    invalid: int


def model_sha256(path: str | Path) -> str:
    """SHA-256 over the model directory's files (names and contents, sorted by name)."""
    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"model {str(path)!r} is not a directory")
    digest = hashlib.sha256()
    for file in sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith(".")):
        digest.update(file.name.encode() + b"\0")
        with open(file, "rb") as fh:
            while block := fh.read(1 << 20):
                digest.update(block)
    return digest.hexdigest()


def check_model_kind(path: str | Path, embed: bool) -> None:
    """A clear error when ``path`` is not the kind of model the mode needs."""
    meta_file = Path(path) / "metadata.json"
    if not meta_file.is_file():
        raise FileNotFoundError(f"{path} is not an exlm_chem model directory (no "
                                "metadata.json)")
    estimator = json.loads(meta_file.read_text(encoding="utf-8")).get("estimator")
    if embed and estimator:
        raise ValueError(f"{path} holds a fitted {estimator}; --embed needs a pre-trained "
                         "checkpoint (e.g. models/exlm-small)")
    if not embed and not estimator:
        raise ValueError(f"{path} is a pre-trained checkpoint, not a fitted estimator: "
                         "pass --embed to embed with it, or fit a model with `exlm-chem fit`")


def identity(model_hash: str, mode: str, settings: dict[str, Any],
             inputs: list[InputFile]) -> dict[str, Any]:
    """What the parts depend on; two runs may share a directory only if this is equal."""
    return {"format": FORMAT, "mode": mode, "model_sha256": model_hash,
            "settings": dict(settings), "inputs": [f._asdict() for f in inputs]}


def run_id(ident: dict[str, Any]) -> str:
    """Short hash of an identity, stamped into every part's footer."""
    text = json.dumps(ident, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    diffs = [f"{key}: {old.get(key)!r} there, {new[key]!r} now"
             for key in ("format", "mode", "model_sha256") if old.get(key) != new[key]]
    ours, theirs = new["settings"], old.get("settings", {})
    diffs += [f"setting {key}: {theirs.get(key)!r} there, {ours.get(key)!r} now"
              for key in sorted(set(theirs) | set(ours)) if theirs.get(key) != ours.get(key)]
    old_inputs = [(f["path"], f["size"], f["mtime_ns"]) for f in old.get("inputs", [])]
    new_inputs = [(f["path"], f["size"], f["mtime_ns"]) for f in new["inputs"]]
    if old_inputs != new_inputs:
        changed = sorted({p for p, *_ in set(old_inputs) ^ set(new_inputs)})
        diffs.append(f"inputs differ (added, removed, reordered or modified: "
                     f"{', '.join(changed[:5]) or 'order only'})")
    return diffs


def open_output(out: Path, ident: dict[str, Any], extra: dict[str, Any]) -> None:
    """Create ``out`` for this identity, or check that it already belongs to it.

    ``extra`` (model path, batch size, device, ...) is recorded but not compared.
    """
    manifest = out / MANIFEST
    if manifest.is_file():
        old = json.loads(manifest.read_text(encoding="utf-8"))
        diffs = _differences(old, ident)
        if diffs:
            raise ValueError(f"{out} holds a screen with another model or settings, and one "
                             f"directory never mixes two: {'; '.join(diffs)}. Use a new "
                             "--out, or delete the directory to start over.")
        return
    if out.exists() and any(p for p in out.iterdir() if not p.name.startswith(".")):
        raise ValueError(f"{out} is not empty and has no {MANIFEST}: not a screen output; "
                         "choose an empty or new directory")
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(manifest, {**ident, **extra})


def part_name(chunk: Chunk) -> str:
    return f"part-{chunk.file_index:06d}-{chunk.index:08d}.parquet"


def completed_part(path: Path, rows: int, run: str) -> PartInfo | None:
    """The part's counts if it is complete for this run (``rows`` rows, stamped ``run``)."""
    import pyarrow.parquet as pq

    if not path.is_file():
        return None
    try:
        meta = pq.read_metadata(path)
        record = json.loads((meta.metadata or {}).get(PART_KEY, b"{}"))
    except (OSError, ValueError):  # truncated or foreign file: redo it
        return None
    if record.get("run_id") != run or meta.num_rows != rows or record.get("rows") != rows:
        return None
    return PartInfo(rows, int(record["invalid"]))


def remove_temporaries(out: Path) -> int:
    """Delete leftovers of parts whose writer died (hidden ``.part-*`` files)."""
    stale = list(out.glob(".part-*"))
    for path in stale:
        path.unlink(missing_ok=True)
    return len(stale)
