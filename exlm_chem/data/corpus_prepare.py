"""A pre-training corpus prepared once on CPU, read on a GPU machine without RDKit.

``prepare_corpus`` canonicalises every line with RDKit, drops unparsable lines and
duplicates (same canonical SMILES; the first occurrence is kept), removes the valid/test
molecules of every benchmark split mode (:func:`exlm_chem.data.hygiene.runner_split_modes`),
tokenises the rest and fixes the train/valid hold-out. The folder it writes holds::

    manifest.json   format version, sources (sha256, lines), counts, hygiene, vocabulary
                    hash, sha256 of the two array files
    train.npz       ids [total tokens] uint8 (uint16 beyond 256 tokens), every molecule's
    valid.npz       [BOS ... EOS] back to back; lengths [n] uint16 (deflate-compressed)
    descriptors.npz with ``descriptors="rdkit2d"``: scaled RDKit 2D descriptors of every
                    train / valid molecule, float16 [n, D] (the estimators' scaling: a value
                    RDKit cannot compute is 0); names and scaler are in the manifest

The descriptors are physico-chemical targets for pre-training's auxiliary objective,
computed here once so that a GPU run never needs RDKit.

``load_prepared`` reads it back with NumPy alone (no RDKit, no tokenisation) and checks
the checksums and that the vocabulary is the one the trainer uses.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from exlm_chem.data.corpus import TokenizedCorpus, read_smiles_file, split_validation
from exlm_chem.files.checksums import file_sha256, vocab_sha256

if TYPE_CHECKING:
    from exlm_chem.data.tokenizer import SmilesTokenizer

logger = logging.getLogger(__name__)

FORMAT = "exlm_chem.prepared_corpus"
#: 2: the vocabulary checksum is :func:`~exlm_chem.files.checksums.vocab_sha256`, as in
#: checkpoints; version 1 (still read) hashed the tokens joined by newlines.
FORMAT_VERSION = 2
MANIFEST = "manifest.json"
_ENCODE_CHUNK = 50_000  # molecules per batch_encode call: keeps the padded matrix small


class PreparedCorpus(NamedTuple):
    train: TokenizedCorpus
    valid: TokenizedCorpus
    manifest: dict[str, Any]
    # "train"/"valid" -> standardised descriptors [n, D] float32 (NaN: missing), if prepared
    descriptors: dict[str, np.ndarray] | None = None


def _version1_vocab_sha256(tokens: Sequence[str]) -> str:
    """The vocabulary checksum of format version 1."""
    return hashlib.sha256("\n".join(tokens).encode("utf-8")).hexdigest()


def _encode(smiles: list[str], tokenizer: SmilesTokenizer, max_length: int) -> TokenizedCorpus:
    """Like :func:`exlm_chem.data.corpus.tokenize_corpus`, vectorised in chunks; no SMILES kept."""
    dtype = np.uint8 if len(tokenizer) <= 256 else np.uint16
    tokenizer.reset_unknown_counts()
    ids_parts, length_parts = [], []
    for start in range(0, len(smiles), _ENCODE_CHUNK):
        batch = tokenizer.batch_encode(smiles[start : start + _ENCODE_CHUNK], max_length)
        real = np.arange(batch.input_ids.shape[1])[None, :] < batch.lengths[:, None]  # [B, N]
        ids_parts.append(batch.input_ids[real].astype(dtype))  # row-major: molecule order
        length_parts.append(batch.lengths)
    lengths = np.concatenate(length_parts) if length_parts else np.zeros(0, np.int64)
    ids = np.concatenate(ids_parts) if ids_parts else np.zeros(0, dtype)
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    return TokenizedCorpus(ids, offsets, [], sum(tokenizer.unknown_token_counts.values()))


def _deduplicate(smiles: list[str], n_jobs: int) -> tuple[list[str], list[str], dict[str, int]]:
    """Parsable, first-seen-unique lines and their canonical forms, plus the counts."""
    from exlm_chem.data.hygiene import canonicalize

    canon = canonicalize(smiles, n_jobs=n_jobs)
    seen: set[str] = set()
    kept, kept_canon = [], []
    n_bad = 0
    for s, c in zip(smiles, canon, strict=True):
        if c is None:
            n_bad += 1
        elif c not in seen:
            seen.add(c)
            kept.append(s)
            kept_canon.append(c)
    counts = {"unparsable_removed": n_bad, "duplicates_removed": len(smiles) - n_bad - len(kept)}
    return kept, kept_canon, counts


def _hygiene(
    canon: list[str], tasks: Sequence[str] | None, split_seeds: Sequence[int], n_jobs: int
) -> tuple[np.ndarray, dict[str, Any]]:
    from exlm_chem.data.hygiene import benchmark_heldout_molecules, runner_split_modes

    modes = runner_split_modes(split_seeds)
    heldout = benchmark_heldout_molecules(tasks, n_jobs=n_jobs, splits=modes)
    union = set().union(*heldout.values()) if heldout else set()
    keep = np.fromiter((c not in union for c in canon), dtype=bool, count=len(canon))
    present = {c for c, k in zip(canon, keep, strict=True) if not k}
    summary = {
        "split_modes": [list(m) for m in modes],
        "heldout_molecules": {t: len(v) for t, v in heldout.items()},
        "removed_by_task": {t: len(v & present) for t, v in heldout.items()},
    }
    return keep, summary


def prepare_corpus(
    files: Sequence[str | Path],
    out: str | Path,
    *,
    max_length: int = 256,
    valid_size: int = 2000,
    seed: int = 0,
    limit: int | None = None,
    hygiene: bool = True,
    tasks: Sequence[str] | None = None,
    split_seeds: Sequence[int] = (0, 1, 2),
    n_jobs: int = 2,
    descriptors: str | None = None,
) -> dict[str, Any]:
    """Build a prepared corpus folder (see the module docstring); returns its manifest.

    Parameters
    ----------
    files : sequence of path
        SMILES files, one molecule per line (first field), ``.gz`` allowed.
    out : path
        Folder to write; replaced atomically if it exists.
    max_length : int
        Tokens per molecule including BOS/EOS; longer molecules are truncated (EOS kept).
    valid_size : int
        Held-out molecules (at most a tenth of the corpus), drawn with ``seed``.
    limit : int, optional
        Read only the first ``limit`` lines of each file.
    hygiene : bool
        Remove benchmark valid/test molecules (``tasks``: default all; ``split_seeds``:
        the seeds of the seeded split modes).
    n_jobs : int
        Processes for RDKit canonicalisation (and descriptors); ``-1``: every core this
        process may use.
    descriptors : str, optional
        ``"rdkit2d"``: also compute the molecules' standardised RDKit 2D descriptors,
        the targets of pre-training's auxiliary objective (about 13 CPU-ms per molecule).
    """
    from exlm_chem import __version__
    from exlm_chem.data.tokenizer import SmilesTokenizer
    from exlm_chem.files.safe_write import atomic_directory

    tokenizer = SmilesTokenizer()
    sources, smiles = [], []
    for path in files:
        lines = read_smiles_file(path, limit=limit)
        sources.append({"path": str(path), "sha256": file_sha256(path), "lines": len(lines)})
        smiles.extend(lines)
    _, canon, counts = _deduplicate(smiles, n_jobs)
    hygiene_summary: dict[str, Any] = {"enabled": hygiene}
    if hygiene:
        keep, details = _hygiene(canon, tasks, split_seeds, n_jobs)
        canon = [c for c, k in zip(canon, keep, strict=True) if k]
        hygiene_summary.update(details, removed=int((~keep).sum()))
    # the models read canonical SMILES everywhere, so the corpus holds that form
    corpus = _encode(canon, tokenizer, max_length)
    n_valid = min(valid_size, max(1, len(corpus) // 10))
    train_idx, valid_idx = split_validation(len(corpus), n_valid, seed)
    manifest: dict[str, Any] = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "exlm_chem_version": __version__,
        "sources": sources,
        "settings": {"max_length": max_length, "valid_size": valid_size, "seed": seed,
                     "limit": limit},
        "counts": {
            "lines": len(smiles),
            **counts,
            "hygiene_removed": hygiene_summary.get("removed", 0),
            "molecules": len(corpus),
            "train": len(train_idx),
            "valid": len(valid_idx),
            "tokens": int(corpus.offsets[-1]),
            "at_max_length": int((corpus.lengths() >= max_length).sum()),
            "unknown_tokens": corpus.n_unknown_tokens,
        },
        "hygiene": hygiene_summary,
        "vocabulary": {"size": len(tokenizer), "sha256": vocab_sha256(tokenizer.tokens)},
        "files": {},
    }
    targets = None
    if descriptors is not None:
        targets, manifest["descriptors"] = _descriptor_targets(canon, descriptors, train_idx,
                                                               valid_idx, n_jobs)
    with atomic_directory(out) as tmp:
        for name, index in (("train", train_idx), ("valid", valid_idx)):
            part = corpus.subset(index)
            path = tmp / f"{name}.npz"
            np.savez_compressed(path, ids=part.ids, lengths=part.lengths().astype(np.uint16))
            manifest["files"][path.name] = file_sha256(path)
        if targets is not None:
            path = tmp / "descriptors.npz"
            np.savez_compressed(path, **targets)
            manifest["files"][path.name] = file_sha256(path)
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    logger.info("prepared corpus in %s: %s", out, manifest["counts"])
    return manifest


def _descriptor_targets(canon: list[str], kind: str, train_idx: np.ndarray,
                        valid_idx: np.ndarray, n_jobs: int
                        ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Scaled descriptors per split (float16) and their manifest entry. The scaler is the
    estimators' (:class:`~exlm_chem.data.descriptors.FeatureScaler`), fitted on the
    training molecules only."""
    from exlm_chem.data.descriptors import FeatureScaler, rdkit2d_descriptors, rdkit_version

    if kind != "rdkit2d":
        raise ValueError(f"descriptors must be 'rdkit2d', got {kind!r}")
    values, names = rdkit2d_descriptors(canon, n_jobs=n_jobs)  # [n, D], NaN: missing
    scaler = FeatureScaler.fit(values[train_idx])
    targets = {name: scaler.transform(values[index]).astype(np.float16)
               for name, index in (("train", train_idx), ("valid", valid_idx))}
    entry = {"kind": kind, "rdkit_version": rdkit_version(), "count": len(names),
             "names": names, "missing_values": int(np.isnan(values).sum()),
             "scaler": scaler.to_dict()}
    return targets, entry


def load_prepared(directory: str | Path, tokenizer_tokens: Sequence[str]) -> PreparedCorpus:
    """Read a prepared corpus; NumPy only (RDKit is never imported).

    Raises
    ------
    FileNotFoundError
        No ``manifest.json`` in ``directory``.
    ValueError
        Another format or version, a file whose checksum differs from the manifest, or a
        vocabulary other than ``tokenizer_tokens`` (the ids would mean other tokens).
    """
    directory = Path(directory)
    path = directory / MANIFEST
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: is {directory} a prepared corpus "
                                "(exlm-chem corpus prepare --out ...)?")
    manifest = json.loads(path.read_text())
    version = manifest.get("format_version")
    if manifest.get("format") != FORMAT or version not in (1, FORMAT_VERSION):
        raise ValueError(f"{path}: format {manifest.get('format')!r} version "
                         f"{manifest.get('format_version')!r}; this exlm_chem reads {FORMAT!r} "
                         f"version {FORMAT_VERSION}: prepare the corpus again")
    expected = (vocab_sha256(tokenizer_tokens) if version == FORMAT_VERSION
                else _version1_vocab_sha256(tokenizer_tokens))
    if manifest["vocabulary"]["sha256"] != expected:
        raise ValueError(f"{path}: the corpus was tokenised with another vocabulary "
                         f"(sha256 {manifest['vocabulary']['sha256'][:12]}..., trainer's "
                         f"{expected[:12]}...): prepare it again with this vocabulary")
    parts = {}
    for name in ("train", "valid"):
        file = directory / f"{name}.npz"
        if file_sha256(file) != manifest["files"][file.name]:
            raise ValueError(f"{file}: sha256 differs from {MANIFEST} (corrupt or replaced)")
        with np.load(file, allow_pickle=False) as arrays:
            lengths = arrays["lengths"].astype(np.int64)
            ids = arrays["ids"]
        offsets = np.concatenate(([0], np.cumsum(lengths)))
        if offsets[-1] != ids.size:
            raise ValueError(f"{file}: lengths add up to {offsets[-1]} tokens, ids hold "
                             f"{ids.size}")
        parts[name] = TokenizedCorpus(ids, offsets, [], 0)
    targets = None
    if "descriptors" in manifest:
        file = directory / "descriptors.npz"
        if file_sha256(file) != manifest["files"][file.name]:
            raise ValueError(f"{file}: sha256 differs from {MANIFEST} (corrupt or replaced)")
        with np.load(file, allow_pickle=False) as arrays:
            targets = {name: arrays[name].astype(np.float32) for name in ("train", "valid")}
        for name, part in parts.items():
            if len(targets[name]) != len(part):
                raise ValueError(f"{file}: {len(targets[name])} {name} rows for "
                                 f"{len(part)} molecules")
    return PreparedCorpus(parts["train"], parts["valid"], manifest, targets)


__all__ = ["PreparedCorpus", "load_prepared", "prepare_corpus"]
