"""A pre-training corpus prepared once on CPU, read on a GPU machine without RDKit.

This is the one way SMILES files become pre-training data: ``exlm-chem corpus prepare``
writes a folder for ``pretrain --prepared``, and ``pretrain --corpus`` prepares its files
into ``OUT/corpus`` the same way (:func:`preparation_differences` tells whether a folder
already there can be reused), so both train on the same molecules.

``prepare_corpus`` canonicalises every line with RDKit, drops unparsable lines and
duplicates (same canonical SMILES; the first occurrence is kept), removes the valid/test
molecules of every benchmark split mode (:func:`exlm_chem.data.hygiene.runner_split_modes`),
tokenises the rest and fixes the train/valid hold-out. The folder it writes holds::

    manifest.json   format version, sources (sha256, lines), counts, hygiene, vocabulary
                    hash, sha256 of the two array files
    train.npz       ids [total tokens] uint8 (uint16 beyond 256 tokens), every molecule's
    valid.npz       [BOS ... EOS] back to back; lengths [n] uint16 (deflate-compressed)
    descriptors.npz with ``descriptors="rdkit2d"`` (all 217 RDKit 2D descriptors),
                    ``"rdkit2d_fast"`` (35 cheap ones) or ``"morgan"`` (2048 Morgan
                    counts, radius 2): scaled descriptors of every train / valid
                    molecule, float16 [n, D] (the estimators' scaling: a value RDKit
                    cannot compute is 0); kind, names and scaler are in the manifest

The descriptors are physico-chemical targets for pre-training's auxiliary objective,
computed here once so that a GPU run never needs RDKit. :func:`add_descriptors` (``exlm-chem
corpus descriptors``) adds or replaces them in a folder prepared without them: the folder
holds token ids only, which it decodes back to the canonical SMILES.

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

from exlm_chem.data.corpus import (
    TokenizedCorpus,
    read_smiles_file,
    split_validation,
    tokenize_corpus,
)
from exlm_chem.files.checksums import file_sha256, vocab_sha256

if TYPE_CHECKING:
    from exlm_chem.data.feature_spec import FeatureScaler

logger = logging.getLogger(__name__)

FORMAT = "exlm_chem.prepared_corpus"
#: 2: the vocabulary checksum is :func:`~exlm_chem.files.checksums.vocab_sha256`, as in
#: checkpoints; version 1 (still read) hashed the tokens joined by newlines.
FORMAT_VERSION = 2
MANIFEST = "manifest.json"
DESCRIPTORS = "descriptors.npz"
#: feature kinds (:mod:`exlm_chem.data.descriptors`) a prepared corpus stores as targets
DESCRIPTOR_KINDS = ("rdkit2d", "rdkit2d_fast", "morgan")
# the settings the manifest's "settings" entry holds; hygiene's are under "hygiene"
_MANIFEST_SETTINGS = ("max_length", "valid_size", "seed", "limit")


class PreparationSettings(NamedTuple):
    """Everything besides the source files that decides which molecules a prepared corpus
    holds: :func:`prepare_corpus` builds from it, the manifest records it, and
    :func:`preparation_differences` compares a folder against it."""

    max_length: int = 256  # tokens per molecule incl. BOS/EOS; longer: truncated, EOS kept
    valid_size: int = 2000  # held-out molecules (at most a tenth of the corpus)
    seed: int = 0  # draws the held-out molecules
    limit: int | None = None  # read only the first `limit` lines of each file
    hygiene: bool = True  # remove the valid/test molecules of the benchmark splits
    tasks: Sequence[str] | None = None  # hygiene's benchmark tasks; None: all of them
    split_seeds: Sequence[int] = (0, 1, 2)  # seeds of the seeded split modes hygiene cleans
    # "rdkit2d", "rdkit2d_fast" or "morgan" (DESCRIPTOR_KINDS): also store the auxiliary
    # objective's targets, computed with that feature kind of exlm_chem.data.descriptors
    descriptors: str | None = None


DEFAULT_SETTINGS = PreparationSettings()


class PreparedCorpus(NamedTuple):
    train: TokenizedCorpus
    valid: TokenizedCorpus
    manifest: dict[str, Any]
    # "train"/"valid" -> standardised descriptors [n, D] float32 (a missing value is the
    # training median, 0, as the scaler makes it), if prepared
    descriptors: dict[str, np.ndarray] | None = None


def _version1_vocab_sha256(tokens: Sequence[str]) -> str:
    """The vocabulary checksum of format version 1."""
    return hashlib.sha256("\n".join(tokens).encode("utf-8")).hexdigest()


def _deduplicate(smiles: list[str], n_jobs: int) -> tuple[list[str], dict[str, int]]:
    """Canonical forms of the parsable lines, first occurrence of each, and the counts."""
    from exlm_chem.data.hygiene import canonicalize

    canon = canonicalize(smiles, n_jobs=n_jobs)
    kept = list(dict.fromkeys(c for c in canon if c is not None))
    n_bad = sum(c is None for c in canon)
    counts = {"unparsable_removed": n_bad, "duplicates_removed": len(smiles) - n_bad - len(kept)}
    return kept, counts


def _hygiene(
    canon: list[str], heldout: dict[str, set[str]], modes: Sequence[tuple[str, int]]
) -> tuple[np.ndarray, dict[str, Any]]:
    """Which corpus molecules to keep (not held out by any task) and the summary."""
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
    settings: PreparationSettings = DEFAULT_SETTINGS,
    *,
    n_jobs: int = 2,
) -> dict[str, Any]:
    """Build a prepared corpus folder (see the module docstring); returns its manifest.

    Parameters
    ----------
    files : sequence of path
        SMILES files, one molecule per line (first field), ``.gz`` allowed.
    out : path
        Folder to write, new or empty: it is built under a temporary name and published in
        one step, and an existing corpus is never overwritten.
    settings : PreparationSettings
        Truncation, hold-out, line limit, hygiene and descriptor targets (its fields say
        what each does). ``descriptors="rdkit2d"`` costs about 13 CPU-ms per molecule,
        ``"rdkit2d_fast"`` under 1.
    n_jobs : int
        Processes for RDKit canonicalisation (and descriptors); ``-1``: every core this
        process may use.
    """
    from exlm_chem import __version__
    from exlm_chem.data.tokenizer import SmilesTokenizer
    from exlm_chem.files.safe_write import atomic_directory

    if settings.descriptors is not None:
        _check_descriptor_kind(settings.descriptors)  # before the long canonicalisation
    if settings.hygiene:
        # the benchmark files are located (or downloaded) before the long canonicalisation,
        # so a missing one fails in seconds, not after minutes of RDKit work
        from exlm_chem.data.hygiene import benchmark_heldout_molecules, runner_split_modes

        modes = runner_split_modes(settings.split_seeds)
        heldout = benchmark_heldout_molecules(settings.tasks, n_jobs=n_jobs, splits=modes)
    tokenizer = SmilesTokenizer()
    sources, smiles = [], []
    for path in files:
        lines = read_smiles_file(path, limit=settings.limit)
        sources.append({"path": str(path), "sha256": file_sha256(path), "lines": len(lines)})
        smiles.extend(lines)
    canon, counts = _deduplicate(smiles, n_jobs)
    hygiene_summary: dict[str, Any] = {"enabled": settings.hygiene}
    if settings.hygiene:
        keep, details = _hygiene(canon, heldout, modes)
        canon = [c for c, k in zip(canon, keep, strict=True) if k]
        hygiene_summary.update(details, removed=int((~keep).sum()))
    # the models read canonical SMILES everywhere, so the corpus holds that form
    corpus = tokenize_corpus(canon, tokenizer, settings.max_length)
    n_valid = min(settings.valid_size, max(1, len(corpus) // 10))
    train_idx, valid_idx = split_validation(len(corpus), n_valid, settings.seed)
    manifest: dict[str, Any] = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "exlm_chem_version": __version__,
        "sources": sources,
        "settings": {k: getattr(settings, k) for k in _MANIFEST_SETTINGS},
        "counts": {
            "lines": len(smiles),
            **counts,
            "hygiene_removed": hygiene_summary.get("removed", 0),
            "molecules": len(corpus),
            "train": len(train_idx),
            "valid": len(valid_idx),
            "tokens": int(corpus.offsets[-1]),
            "at_max_length": int((corpus.lengths() >= settings.max_length).sum()),
            "unknown_tokens": corpus.n_unknown_tokens,
        },
        "hygiene": hygiene_summary,
        "vocabulary": {"size": len(tokenizer), "sha256": vocab_sha256(tokenizer.tokens)},
        "files": {},
    }
    targets = None
    if settings.descriptors is not None:
        targets, manifest["descriptors"] = _descriptor_targets(
            canon, settings.descriptors, train_idx, valid_idx, n_jobs)
    with atomic_directory(out) as tmp:
        for name, index in (("train", train_idx), ("valid", valid_idx)):
            part = corpus.subset(index)
            path = tmp / f"{name}.npz"
            np.savez_compressed(path, ids=part.ids, lengths=part.lengths().astype(np.uint16))
            manifest["files"][path.name] = file_sha256(path)
        if targets is not None:
            path = tmp / DESCRIPTORS
            np.savez_compressed(path, **targets)
            manifest["files"][path.name] = file_sha256(path)
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    logger.info("prepared corpus in %s: %s", out, manifest["counts"])
    return manifest


def _check_descriptor_kind(kind: str) -> None:
    if kind not in DESCRIPTOR_KINDS:
        raise ValueError(f"descriptors must be one of {', '.join(DESCRIPTOR_KINDS)}, "
                         f"got {kind!r}")


def _descriptor_targets(smiles: Sequence[str | None], kind: str, train_idx: np.ndarray,
                        valid_idx: np.ndarray, n_jobs: int
                        ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Scaled descriptors per split (float16) and their manifest entry. The scaler is the
    estimators' (:class:`~exlm_chem.data.feature_spec.FeatureScaler`), fitted on the
    training molecules only. A None molecule (unknown) gets an all-NaN row, so all 0
    (the training median) once scaled."""
    from exlm_chem.data.descriptors import descriptor_values, rdkit_version

    _check_descriptor_kind(kind)
    known = np.fromiter((s is not None for s in smiles), dtype=bool, count=len(smiles))
    present, names = descriptor_values(kind, [s for s in smiles if s is not None],
                                       n_jobs=n_jobs)  # [n known, D], NaN: missing
    if known.all():
        values = present
    else:
        values = np.full((len(smiles), len(names)), np.nan, dtype=present.dtype)
        values[known] = present
    del present  # a copy when some rows are unknown: 8 GB per million rows of Morgan counts
    scaler, targets = _scaled(values, train_idx, valid_idx)
    entry = {"kind": kind, "rdkit_version": rdkit_version(), "count": len(names),
             "names": names, "missing_values": int(np.isnan(values).sum()),
             "scaler": scaler.to_dict()}
    return targets, entry


def _scaled(values: np.ndarray, train_idx: np.ndarray, valid_idx: np.ndarray
            ) -> tuple[FeatureScaler, dict[str, np.ndarray]]:
    """:class:`~exlm_chem.data.feature_spec.FeatureScaler` fitted on the training rows of
    raw ``values`` [n, D], and the scaled rows of each split as float16."""
    from exlm_chem.data.feature_spec import FeatureScaler

    scaler = FeatureScaler.fit(values, rows=train_idx)
    return scaler, {name: scaler.transform(values, rows=index, dtype=np.float16)
                    for name, index in (("train", train_idx), ("valid", valid_idx))}


def _read_manifest(directory: Path) -> dict[str, Any]:
    """The manifest of a prepared corpus of a format version this module reads."""
    path = directory / MANIFEST
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: is {directory} a prepared corpus "
                                "(exlm-chem corpus prepare --out ...)?")
    manifest = json.loads(path.read_text())
    if manifest.get("format") != FORMAT or manifest.get("format_version") not in (
            1, FORMAT_VERSION):
        raise ValueError(f"{path}: format {manifest.get('format')!r} version "
                         f"{manifest.get('format_version')!r}; this exlm_chem reads {FORMAT!r} "
                         f"version {FORMAT_VERSION}: prepare the corpus again")
    return manifest


def preparation_differences(
    directory: str | Path,
    files: Sequence[str | Path],
    settings: PreparationSettings = DEFAULT_SETTINGS,
) -> list[str]:
    """How the prepared corpus in ``directory`` differs from what :func:`prepare_corpus`
    would build from ``files`` and ``settings``; empty when it is that corpus.

    Sources are compared by content (sha256, in order), so a file given by another path
    still matches. Stored descriptors that were not asked for are no difference.

    Raises
    ------
    FileNotFoundError, ValueError
        ``directory`` holds no prepared corpus of a format this module reads.
    """
    manifest = _read_manifest(Path(directory))
    differ = []
    there = [f"{s['path']} ({s['sha256'][:12]}...)" for s in manifest["sources"]]
    hashes = [file_sha256(f) for f in files]
    if [s["sha256"] for s in manifest["sources"]] != hashes:
        here = [f"{f} ({h[:12]}...)" for f, h in zip(files, hashes, strict=True)]
        differ.append(f"sources: {', '.join(there)} there, {', '.join(here)} here")
    differ += [f"{k}: {manifest['settings'].get(k)!r} there, {getattr(settings, k)!r} here"
               for k in _MANIFEST_SETTINGS if manifest["settings"].get(k) != getattr(settings, k)]
    saved = manifest["hygiene"]
    if saved["enabled"] != settings.hygiene:
        differ.append(f"hygiene: {saved['enabled']} there, {settings.hygiene} here")
    elif settings.hygiene:  # the same held-out molecules: the same split modes of the same tasks
        from exlm_chem.data.hygiene import runner_split_modes
        from exlm_chem.data.moleculenet import dataset_names

        modes = [list(m) for m in runner_split_modes(settings.split_seeds)]
        if saved["split_modes"] != modes:
            differ.append(f"hygiene split modes: {saved['split_modes']} there, {modes} here")
        wanted = sorted(settings.tasks or dataset_names())
        if sorted(saved["heldout_molecules"]) != wanted:
            differ.append(f"hygiene tasks: {sorted(saved['heldout_molecules'])} there, "
                          f"{wanted} here")
    stored = manifest.get("descriptors", {}).get("kind")
    if settings.descriptors is not None and stored != settings.descriptors:
        differ.append(f"descriptors: {stored} there, {settings.descriptors} here")
    return differ


def add_descriptors(directory: str | Path, kind: str, *, n_jobs: int = -1) -> dict[str, Any]:
    """Add (or replace) the descriptor targets of an already prepared corpus folder.

    The folder stores token ids only: each molecule is decoded back to the canonical
    SMILES it was tokenised from (:func:`~exlm_chem.data.corpus.decode_corpus`), and the
    targets are then computed exactly as :func:`prepare_corpus` computes them (scaler
    fitted on the training molecules), so preparing with ``descriptors=kind`` gives the
    same ``descriptors.npz`` when every molecule decodes. A molecule that cannot be
    decoded faithfully (truncated at ``max_length``, or holding an out-of-vocabulary
    token) gets an all-NaN row, i.e. 0 (the training median) once scaled, and is counted
    in the manifest entry's ``"undecodable"`` (:func:`prepare_corpus`, which reads the
    SMILES, computes those rows from the whole molecule).

    Every file is replaced atomically and ``manifest.json`` last, so an interruption
    leaves a valid folder: the old targets, none, or the new ones.

    Parameters
    ----------
    directory : path
        A prepared corpus (:func:`prepare_corpus`, ``exlm-chem corpus prepare``).
    kind : str
        One of :data:`DESCRIPTOR_KINDS`.
    n_jobs : int
        Processes for RDKit; ``-1``: every core this process may use.

    Returns
    -------
    dict
        The updated manifest (its ``"descriptors"`` entry: kind, RDKit version, count,
        names, missing values, undecodable molecules and scaler).

    Raises
    ------
    FileNotFoundError, ValueError
        No prepared corpus in ``directory`` (or a damaged one), or an unknown ``kind``.
    """
    from exlm_chem.data.corpus import decode_corpus
    from exlm_chem.data.tokenizer import SmilesTokenizer
    from exlm_chem.files.safe_write import atomic_path, write_text_atomic

    _check_descriptor_kind(kind)
    directory = Path(directory)
    tokenizer = SmilesTokenizer()
    prepared = load_prepared(directory, tokenizer.tokens, descriptors=False)
    manifest = prepared.manifest
    max_length = int(manifest["settings"]["max_length"])
    smiles = [*decode_corpus(prepared.train, tokenizer, max_length),
              *decode_corpus(prepared.valid, tokenizer, max_length)]
    n_train = len(prepared.train)
    train_idx, valid_idx = np.arange(n_train), np.arange(n_train, len(smiles))
    targets, entry = _descriptor_targets(smiles, kind, train_idx, valid_idx, n_jobs)
    entry["undecodable"] = sum(s is None for s in smiles)

    def write_manifest() -> None:
        write_text_atomic(directory / MANIFEST, json.dumps(manifest, indent=1) + "\n",
                          durable=True)

    if "descriptors" in manifest:  # while the file is replaced, the folder holds none
        del manifest["descriptors"]
        manifest["files"].pop(DESCRIPTORS, None)
        write_manifest()
    with atomic_path(directory / DESCRIPTORS, durable=True) as tmp:
        with open(tmp, "wb") as handle:  # an open file: savez would add ".npz" to a name
            np.savez_compressed(handle, **targets)
    manifest["descriptors"] = entry
    manifest["files"][DESCRIPTORS] = file_sha256(directory / DESCRIPTORS)
    write_manifest()
    logger.info("%s descriptors (%d) of %d molecules in %s; %d undecodable", kind,
                entry["count"], len(smiles), directory, entry["undecodable"])
    return manifest


def load_prepared(directory: str | Path, tokenizer_tokens: Sequence[str], *,
                  descriptors: bool = True) -> PreparedCorpus:
    """Read a prepared corpus; NumPy only (RDKit is never imported).

    ``descriptors=False`` leaves the descriptor targets unread (and unchecked):
    ``PreparedCorpus.descriptors`` is then None.

    Raises
    ------
    FileNotFoundError
        No ``manifest.json`` in ``directory``.
    ValueError
        Another format or version, a file whose checksum differs from the manifest, or a
        vocabulary other than ``tokenizer_tokens`` (the ids would mean other tokens).
    """
    directory = Path(directory)
    manifest = _read_manifest(directory)
    path, version = directory / MANIFEST, manifest["format_version"]
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
        parts[name] = TokenizedCorpus(ids, offsets, 0)
    targets = None
    if descriptors and "descriptors" in manifest:
        file = directory / DESCRIPTORS
        if file_sha256(file) != manifest["files"][file.name]:
            raise ValueError(f"{file}: sha256 differs from {MANIFEST} (corrupt or replaced)")
        with np.load(file, allow_pickle=False) as arrays:
            targets = {name: arrays[name].astype(np.float32) for name in ("train", "valid")}
        for name, part in parts.items():
            if len(targets[name]) != len(part):
                raise ValueError(f"{file}: {len(targets[name])} {name} rows for "
                                 f"{len(part)} molecules")
    return PreparedCorpus(parts["train"], parts["valid"], manifest, targets)


__all__ = ["DESCRIPTOR_KINDS", "PreparationSettings", "PreparedCorpus", "add_descriptors",
           "load_prepared", "preparation_differences", "prepare_corpus"]
