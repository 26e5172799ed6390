"""Benchmark tasks prepared on CPU for a machine without RDKit (the GPU machine).

:func:`prepare_splits` loads each MoleculeNet task (RDKit parses and splits it here),
writes every molecule as its RDKit canonical SMILES (the encoders' input protocol,
:data:`~exlm_chem.benchmark.tasks.ENCODER_SMILES`), tokenises it once and writes, per task,
one compressed ``.npz`` (token ids as one flat array plus row offsets, labels, and the
train/valid/test indices of each split seed) and a ``manifest.json`` naming the data
file's checksum, the split, the SMILES form, the vocabulary's checksum and the maximum
length. :class:`PreparedSplits` reads them back as
:class:`~exlm_chem.benchmark.records.TaskData` whose molecules are token id rows, which
fine-tuning takes in place of SMILES; it imports neither RDKit nor pandas.

Layout::

    DIR/manifest.json
    DIR/<task>.npz   ids [sum of lengths] uint8/uint16/int32, offsets [N+1] int64,
                     labels [N, T] float32 (NaN = missing),
                     train_s<seed>, valid_s<seed>, test_s<seed> int64 row indices
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from exlm_chem.benchmark.tasks import TaskData
from exlm_chem.files.checksums import file_sha256, vocab_sha256
from exlm_chem.files.safe_write import atomic_path, write_text_atomic

__all__ = ["FORMAT", "MANIFEST", "PreparedSplits", "prepare_splits"]

#: 3: the vocabulary checksum is :func:`~exlm_chem.files.checksums.vocab_sha256`, as in
#: checkpoints and prepared corpora; 2: it is the sha256 of vocab.txt's text (still read).
#: Since 2, token ids are made from RDKit canonical SMILES (1: from the SMILES as written).
FORMAT = "exlm_chem-splits-3"
_FORMAT_2 = "exlm_chem-splits-2"
MANIFEST = "manifest.json"


def _id_dtype(vocab_size: int) -> np.dtype:
    for dtype in (np.uint8, np.uint16, np.int32):
        if vocab_size <= np.iinfo(dtype).max + 1:
            return np.dtype(dtype)
    raise ValueError(f"vocabulary of {vocab_size} tokens is too large")


def prepare_splits(
    tasks: Sequence[str],
    split: str,
    out: str | os.PathLike[str],
    seeds: Sequence[int] = (0,),
    vocab: str | os.PathLike[str] | None = None,
    max_length: int = 256,
    data_path: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """Write the prepared files of ``tasks`` under ``out``; returns the manifest.

    Parameters
    ----------
    tasks : sequence of str
        MoleculeNet dataset names.
    split : str
        One of :data:`~exlm_chem.data.split_modes.SPLITS`.
    seeds : sequence of int
        Split seeds to store; a seed-independent split stores seed 0 only.
    vocab : path, optional
        The vocabulary the checkpoints were trained with (default: the packaged one;
        ``models/*/vocab.txt`` are copies of it).
    max_length : int
        Tokens per molecule including BOS and EOS (the benchmark's input protocol).
    """
    from exlm_chem.benchmark.tasks import ENCODER_SMILES, load_task, with_canonical_smiles
    from exlm_chem.data.split_modes import split_depends_on_seed
    from exlm_chem.data.tokenizer import SmilesTokenizer
    from exlm_chem.provenance import git_commit, machine

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = SmilesTokenizer(vocab) if vocab is not None else SmilesTokenizer()
    split_seeds = sorted({int(s) for s in seeds}) if split_depends_on_seed(split) else [0]
    manifest: dict[str, Any] = {
        "format": FORMAT,
        "split": split,
        "split_seeds": split_seeds,
        "max_length": max_length,
        "smiles": ENCODER_SMILES,
        "vocab_size": len(tokenizer),
        "vocab_sha256": vocab_sha256(tokenizer.tokens),
        "commit": git_commit(),
        "machine": machine(),
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "tasks": {},
    }
    for task in tasks:
        arrays: dict[str, np.ndarray] = {}
        data = None
        for seed in split_seeds:
            data = load_task(task, split, seed, data_path)
            for part in ("train", "valid", "test"):
                arrays[f"{part}_s{seed}"] = np.asarray(getattr(data, part), dtype=np.int64)
        encoded = tokenizer.batch_encode(with_canonical_smiles(data).smiles,
                                         max_length=max_length)
        lengths = np.asarray(encoded.lengths, dtype=np.int64)  # [N]
        rows = [r[:n] for r, n in zip(encoded.input_ids, lengths, strict=True)]
        arrays["ids"] = np.concatenate(rows).astype(_id_dtype(len(tokenizer)))
        arrays["offsets"] = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        arrays["labels"] = np.asarray(data.labels, dtype=np.float32)
        path = out / f"{task}.npz"
        with atomic_path(path) as tmp, open(tmp, "wb") as handle:
            np.savez_compressed(handle, **arrays)
        manifest["tasks"][task] = {
            "file": path.name,
            "file_sha256": file_sha256(path),
            "data_sha256": data.data_sha256,
            "n_molecules": len(rows),
            "n_tasks": int(data.labels.shape[1]),
            "n_train_valid_test": [len(data.train), len(data.valid), len(data.test)],
            "mean_tokens": round(float(lengths.mean()), 2),
            "truncated": int((lengths >= max_length).sum()),
        }
    write_text_atomic(out / MANIFEST, json.dumps(manifest, indent=2) + "\n")
    return manifest


def _format2_vocab_sha256(tokens: Sequence[str]) -> str:
    """The vocabulary checksum of format 2: sha256 of vocab.txt's text (a token a line)."""
    return hashlib.sha256(("\n".join(tokens) + "\n").encode()).hexdigest()


class PreparedSplits:
    """Prepared tasks, read without RDKit; a drop-in task source for the benchmark runner.

    Parameters
    ----------
    directory : path
        Written by :func:`prepare_splits` (``exlm-chem data prepare-splits``).
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        path = self.directory / MANIFEST
        if not path.is_file():
            raise FileNotFoundError(f"{path} not found; write it with `exlm-chem data "
                                    "prepare-splits --out DIR` on a machine with RDKit")
        self.manifest = json.loads(path.read_text(encoding="utf-8"))
        if self.manifest.get("format") not in (FORMAT, _FORMAT_2):
            raise ValueError(f"{path}: format {self.manifest.get('format')!r}, expected "
                             f"{FORMAT!r} (token ids from canonical SMILES); prepare them "
                             "again with `exlm-chem data prepare-splits`")

    @property
    def tasks(self) -> list[str]:
        return list(self.manifest["tasks"])

    def _entry(self, task: str) -> dict[str, Any]:
        try:
            return self.manifest["tasks"][task]
        except KeyError:
            raise ValueError(f"task {task!r} was not prepared in {self.directory}; "
                             f"prepared: {self.tasks}") from None

    def sha256(self, task: str) -> str:
        """The data file checksum recorded when the task was prepared."""
        return self._entry(task)["data_sha256"]

    def check_vocabulary(self, vocab_file: str | os.PathLike[str]) -> None:
        """Raise unless ``vocab_file`` is the vocabulary the ids were made with."""
        from exlm_chem.data.tokenizer import SmilesTokenizer

        tokens = SmilesTokenizer(vocab_file).tokens
        digest = (vocab_sha256(tokens) if self.manifest["format"] == FORMAT
                  else _format2_vocab_sha256(tokens))
        if digest != self.manifest["vocab_sha256"]:
            raise ValueError(f"{vocab_file} is not the vocabulary of the prepared splits in "
                             f"{self.directory} (sha256 {digest} != "
                             f"{self.manifest['vocab_sha256']}); prepare them with --vocab")

    def load(self, task: str, split: str, seed: int) -> TaskData:
        """One task as :class:`TaskData`; ``smiles`` holds int64 token id rows."""
        entry = self._entry(task)
        if split != self.manifest["split"]:
            raise ValueError(f"{self.directory} holds the {self.manifest['split']!r} split, "
                             f"not {split!r}")
        seeds = self.manifest["split_seeds"]
        seed = seed if len(seeds) > 1 or seed in seeds else seeds[0]
        path = self.directory / entry["file"]
        if file_sha256(path) != entry["file_sha256"]:
            raise ValueError(f"{path} does not match its checksum in {MANIFEST}: damaged or "
                             "replaced; prepare the splits again")
        with np.load(path, allow_pickle=False) as arrays:
            if f"train_s{seed}" not in arrays:
                raise ValueError(f"{path}: split seed {seed} not prepared (have {seeds})")
            ids = arrays["ids"].astype(np.int64)
            offsets = arrays["offsets"]
            rows = [ids[offsets[i] : offsets[i + 1]] for i in range(len(offsets) - 1)]
            return TaskData(task, rows, arrays["labels"].astype(np.float64),
                            arrays[f"train_s{seed}"], arrays[f"valid_s{seed}"],
                            arrays[f"test_s{seed}"], entry["data_sha256"])
