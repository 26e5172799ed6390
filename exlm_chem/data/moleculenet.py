"""MoleculeNet datasets: file resolution, verification and loading.

The seven classification sets of the ExLM paper (BACE, BBBP, Tox21, ToxCast, SIDER,
ClinTox, MUV) are described in :data:`DATASETS` (:mod:`exlm_chem.data.moleculenet_sets`):
canonical DeepChem URL, accepted local file names, SMILES and task columns, and the
checksums of every known revision. The regression sets ESOL, FreeSolv and Lipophilicity
load the same way (:mod:`exlm_chem.data.moleculenet_regression`, :func:`regression_names`).

A file is looked up in this order (the first hit wins, and it must match a known
revision's checksum):

1. the explicit ``path=`` argument (a file, or a directory holding an accepted name);
2. ``$EXLM_CHEM_DATA`` and ``$EXLM_CHEM_DATA/moleculenet``;
3. the repository's ``data/`` and ``data/moleculenet/`` (only in a source checkout);
4. the user cache (``cache_dir=``, else ``$EXLM_CHEM_CACHE/moleculenet``, else
   ``$XDG_CACHE_HOME/exlm_chem/moleculenet``, default ``~/.cache/exlm_chem/moleculenet``);
5. a download from the canonical URL into the user cache (``download=True``), through
   pooch (:func:`exlm_chem.data.download.download_verified`).

Rows whose SMILES RDKit cannot parse are never dropped silently: they are listed in
:attr:`MoleculeDataset.invalid` with the reason, and a warning gives their count.
"""

from __future__ import annotations

import io
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from exlm_chem.data.download import (
    ChecksumError,
    DownloadError,
    Revision,
    VerifiedFile,
    digest_bytes,
    download_verified,
    read_verified,
)
from exlm_chem.data.moleculenet_regression import REGRESSION_NAMES, REGRESSION_SETS
from exlm_chem.data.moleculenet_sets import DATASETS, DatasetSpec
from exlm_chem.data.rdkit_reasons import parse_failure
from exlm_chem.data.tables import read_error
from exlm_chem.errors import DataFileError, InvalidRow  # row = 0-based data row in the file

__all__ = [
    "DATASETS",
    "ChecksumError",
    "DataFileError",
    "DatasetSpec",
    "InvalidRow",
    "MoleculeDataset",
    "Revision",
    "dataset_names",
    "default_cache_dir",
    "get_spec",
    "load_moleculenet",
    "regression_names",
]

if TYPE_CHECKING:
    import pandas as pd

logger = logging.getLogger(__name__)

# The folder holding the package (exlm_chem/data/moleculenet.py -> parents[2]). A source
# checkout has a build file there; an installed package does not, which keeps an
# unrelated site-packages/data folder out of the search.
_REPO_ROOT = Path(__file__).resolve().parents[2]
_REPO_MARKERS = ("pyproject.toml", "setup.cfg")
EMPTY_REASON = "empty SMILES"
# Label cells read as missing; everything else must be a number (0 or 1).
_LABEL_NA = ["", "nan", "NaN", "NA", "N/A", "null", "None"]
# a MoleculeNet file is UTF-8 text: other bytes mean damage, not another encoding
_DAMAGED = "it is corrupted or not a CSV file"


class MoleculeDataset(NamedTuple):
    """One loaded MoleculeNet dataset (valid molecules only, in file order).

    Attributes
    ----------
    name : str
    smiles : list of str
        SMILES of the N valid molecules as written in the file, without surrounding
        whitespace (not part of a SMILES; 212 rows of ESOL's upstream file end in a space).
    labels : np.ndarray
        float32 [N, n_tasks]; NaN where a label is missing.
    task_names : tuple of str
    invalid : list of InvalidRow
        Rows left out, with the reason.
    source_rows : np.ndarray
        int64 [N]: the file's data-row index of each kept molecule.
    revision : str
        Label of the revision the file matched (``"unverified"`` if not checked).
    path : Path
        The file actually read.
    sha256 : str
        sha256 of the file's decompressed content (names the data revision in cache keys).
    """

    name: str
    smiles: list[str]
    labels: np.ndarray
    task_names: tuple[str, ...]
    invalid: list[InvalidRow]
    source_rows: np.ndarray
    revision: str
    path: Path
    sha256: str = ""


def dataset_names() -> tuple[str, ...]:
    """Registry keys in benchmark order: bace, bbbp, tox21, toxcast, sider, clintox, muv."""
    return tuple(DATASETS)


def regression_names() -> tuple[str, ...]:
    """The regression sets, in benchmark order: esol, freesolv, lipo."""
    return REGRESSION_NAMES


def regression_specs() -> dict[str, DatasetSpec]:
    """``{name: DatasetSpec}`` for the three regression sets, in benchmark order."""
    return dict(REGRESSION_SETS)


def get_spec(name: str) -> DatasetSpec:
    """Look up a dataset by name (case-insensitive), classification or regression.

    Raises
    ------
    ValueError
        For an unknown name; the message lists the valid ones.
    """
    key = str(name).strip().lower()
    spec = DATASETS.get(key) or regression_specs().get(key)
    if spec is None:
        valid = ", ".join(dataset_names() + regression_names())
        raise ValueError(f"unknown MoleculeNet dataset {name!r}; valid names: {valid}")
    return spec


def default_cache_dir() -> Path:
    """Where downloads go: ``$EXLM_CHEM_CACHE/moleculenet`` if set, else
    ``${XDG_CACHE_HOME:-~/.cache}/exlm_chem/moleculenet``."""
    root = os.environ.get("EXLM_CHEM_CACHE")
    if root:
        return Path(root).expanduser() / "moleculenet"
    xdg = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(xdg).expanduser() / "exlm_chem" / "moleculenet"


def _repo_data_dir() -> Path | None:
    data = _REPO_ROOT / "data"
    if data.is_dir() and any((_REPO_ROOT / m).is_file() for m in _REPO_MARKERS):
        return data
    return None


def _search_dirs(cache: Path, folder: str = "moleculenet") -> list[tuple[Path, str]]:
    """Directories to look in, in priority order, each with where it came from."""
    dirs: list[tuple[Path, str]] = []
    env = os.environ.get("EXLM_CHEM_DATA")
    if env:
        base = Path(env).expanduser()
        dirs += [(base, "$EXLM_CHEM_DATA"), (base / folder, "$EXLM_CHEM_DATA")]
        if folder != "moleculenet":  # $EXLM_CHEM_DATA usually names data/moleculenet
            dirs.append((base.parent / folder, "$EXLM_CHEM_DATA/.."))
    repo = _repo_data_dir()
    if repo is not None:
        dirs += [(repo, "repository data/"), (repo / folder, "repository data/")]
    dirs.append((cache, "user cache"))
    return dirs


def _given_dirs(spec: DatasetSpec, given: Path) -> list[tuple[Path, str]]:
    """A ``path=`` directory; for a regression set also its ``regression/`` sub-folder and
    the one beside it (``--data`` usually names the ``moleculenet/`` folder)."""
    dirs = [(given, "path= argument")]
    if spec.folder != "moleculenet":
        dirs += [(given / spec.folder, "path= argument"),
                 (given.parent / spec.folder, "path= argument/..")]
    return dirs


def _find(spec: DatasetSpec, dirs: list[tuple[Path, str]]) -> Path | None:
    for directory, _ in dirs:
        for fname in spec.local_names:
            candidate = directory / fname
            if candidate.is_file():
                return candidate
    return None


def _missing_message(
    spec: DatasetSpec, dirs: list[tuple[Path, str]], url: str, cache: Path, why: str
) -> str:
    lines = [
        f"MoleculeNet dataset {spec.name!r} not found.",
        f"Accepted file names: {', '.join(spec.local_names)}",
        "Directories searched, in order:",
    ]
    for directory, origin in dirs:
        state = "" if directory.is_dir() else ", does not exist"
        lines.append(f"  {directory}  ({origin}{state})")
    origins = {origin for _, origin in dirs}
    if "user cache" in origins and "$EXLM_CHEM_DATA" not in origins:
        lines.append("  ($EXLM_CHEM_DATA is not set)")
    lines += [
        why,
        f"Fetch it from {url}",
        f"  e.g.  curl -L --create-dirs -o {cache / spec.filename} {url}",
        "or put one of the accepted files into one of the directories above, "
        "or pass path= to load_moleculenet.",
    ]
    return "\n".join(lines)


def _label_matrix(df: pd.DataFrame, spec: DatasetSpec, path: Path) -> np.ndarray:
    """Task columns as float32 [rows, n_tasks]; NaN where missing, else exactly 0 or 1
    (regression: any finite number)."""
    import pandas as pd

    raw = df[list(spec.task_columns)]
    values = raw.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=np.float64)
    missing = np.isnan(values)
    if spec.task_type == "regression":
        # "inf" parses as a number; a value beyond float32 would become inf when stored
        wanted, ok = "a finite number or empty", np.abs(values) <= np.finfo(np.float32).max
    else:
        wanted, ok = "0, 1 or empty", (values == 0.0) | (values == 1.0)
    bad = (missing & raw.notna().to_numpy()) | ~(missing | ok)
    if bad.any():
        row, col = (int(i) for i in np.argwhere(bad)[0])
        raise DataFileError(
            f"{spec.name}: {path}, data row {row} (file line {row + 2}), column "
            f"{spec.task_columns[col]!r}: label {str(raw.iat[row, col])!r} is not {wanted}"
        )
    return values.astype(np.float32)


def _read_table(spec: DatasetSpec, verified: VerifiedFile,
                read: Callable[[str], pd.DataFrame]) -> pd.DataFrame:
    """``read(text)`` of the file's decoded content; a :class:`DataFileError` naming the
    file (never a codec or pandas error) when it is empty, not UTF-8 or not a CSV, worded
    by the table reader's :func:`~exlm_chem.data.tables.read_error` as the CLI's inputs."""
    content, path = verified.content, verified.path
    if not content.strip():
        raise DataFileError(f"{spec.name}: {path} is empty")
    try:
        text = content.decode("utf-8-sig")  # a byte-order mark is not part of the header
    except UnicodeDecodeError as err:
        line = content[: err.start].count(b"\n") + 1
        where = f", byte {err.start} (file line {line})"
        raise DataFileError(f"{spec.name}: {read_error(path, err, where, hint=_DAMAGED)}"
                            ) from err
    try:
        return read(text)
    except ValueError as err:  # pandas's ParserError and EmptyDataError are ValueErrors
        raise DataFileError(f"{spec.name}: {read_error(path, err)}") from err


def _parse(spec: DatasetSpec, verified: VerifiedFile) -> MoleculeDataset:
    import pandas as pd

    path = verified.path
    wanted = {spec.smiles_column, *spec.task_columns}
    df = _read_table(spec, verified, lambda text: pd.read_csv(
        io.StringIO(text),
        usecols=lambda c: c in wanted,
        dtype={spec.smiles_column: str},
        # "NA" or "nan" could be a SMILES-like string: only label columns have NA tokens
        keep_default_na=False,
        na_values=dict.fromkeys(spec.task_columns, _LABEL_NA),
        # a blank line stays a row (reported as empty SMILES), so row numbers never shift
        skip_blank_lines=False,
    ))
    missing = [c for c in (spec.smiles_column, *spec.task_columns) if c not in df.columns]
    if missing:
        raise DataFileError(f"{spec.name}: {path} lacks the column(s) {missing}")
    labels = _label_matrix(df, spec, path)

    keep: list[int] = []
    smiles: list[str] = []
    invalid: list[InvalidRow] = []
    for row, cell in enumerate(df[spec.smiles_column].tolist()):
        if not isinstance(cell, str) or not cell.strip():
            # RDKit accepts "" as an empty molecule; it is no molecule here
            invalid.append(InvalidRow(row, cell if isinstance(cell, str) else "", EMPTY_REASON))
        elif (reason := parse_failure(cell)) is not None:
            invalid.append(InvalidRow(row, cell, reason))
        else:
            keep.append(row)
            smiles.append(cell.strip())
    if invalid:
        logger.warning(
            "%s: %d of %d rows left out (empty or unparsable SMILES), listed in "
            "MoleculeDataset.invalid",
            spec.name, len(invalid), len(df),
        )
    source_rows = np.asarray(keep, dtype=np.int64)
    return MoleculeDataset(
        name=spec.name,
        smiles=smiles,
        labels=np.ascontiguousarray(labels[source_rows]),  # [N, n_tasks]
        task_names=spec.task_columns,
        invalid=invalid,
        source_rows=source_rows,
        revision=verified.revision.label if verified.revision else "unverified",
        path=path,
        sha256=verified.digest.sha256_content,
    )


def local_sha256(name: str, path: str | os.PathLike[str] | None = None) -> str | None:
    """Content sha256 of the file :func:`load_moleculenet` would read, without parsing it.

    Looks where the loader looks (``path``, then ``$EXLM_CHEM_DATA``, ``data/``, the user
    cache) but never downloads; None when there is no local file yet. Cheap enough to
    decide from it whether cached results still match the data.
    """
    spec = get_spec(name)
    found: Path | None
    if path is not None:
        given = Path(path).expanduser()
        found = _find(spec, _given_dirs(spec, given)) if given.is_dir() else given
    else:
        found = _find(spec, _search_dirs(default_cache_dir(), spec.folder))
    if found is None or not found.is_file():
        return None
    return digest_bytes(found.read_bytes())[1].sha256_content


def load_moleculenet(
    name: str,
    path: str | os.PathLike[str] | None = None,
    *,
    download: bool = True,
    cache_dir: str | os.PathLike[str] | None = None,
    url: str | None = None,
    verify: bool = True,
) -> MoleculeDataset:
    """Load one MoleculeNet dataset (classification or regression), checksum-verified.

    Parameters
    ----------
    name : str
        One of :func:`dataset_names` (case-insensitive).
    path : path-like, optional
        A file to read, or a directory holding one of the accepted file names. When
        given, nothing else is searched and nothing is downloaded.
    download : bool
        Download from the canonical URL into the cache when no local file is found.
    cache_dir : path-like, optional
        Cache directory (default :func:`default_cache_dir`).
    url : str, optional
        Download from here instead of the registry's URL (mirrors, tests).
    verify : bool
        Refuse a local file that matches no known revision (downloads are always
        verified).

    Returns
    -------
    MoleculeDataset

    Raises
    ------
    ValueError
        Unknown name.
    DataFileError
        The file is empty, truncated, not UTF-8 or not a CSV, lacks a column, or holds a
        label that is not 0, 1 or empty (regression: not a finite number or empty); a
        ValueError naming the file and row.
    ChecksumError
        The file matches no known revision or cannot be decompressed (a DataFileError).
    FileNotFoundError
        No file found and none could be downloaded; the message says what to put where.
    """
    spec = get_spec(name)
    what = f"MoleculeNet file for {spec.name!r}"
    cache = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    source_url = url or spec.url
    if path is not None:
        given = Path(path).expanduser()
        if given.is_dir():
            dirs = _given_dirs(spec, given)
            found = _find(spec, dirs)
            if found is None:
                why = "Nothing else was searched or downloaded because path= was given."
                raise FileNotFoundError(_missing_message(spec, dirs, source_url, cache, why))
        elif given.is_file():
            found = given
        else:
            raise FileNotFoundError(f"MoleculeNet dataset {spec.name!r}: {given} does not exist")
        return _parse(spec, read_verified(found, spec.revisions, verify=verify, what=what))

    dirs = _search_dirs(cache, spec.folder)
    found = _find(spec, dirs)
    if found is not None:
        return _parse(spec, read_verified(found, spec.revisions, verify=verify, what=what))
    if not download:
        why = "Not downloaded because download=False."
        raise FileNotFoundError(_missing_message(spec, dirs, source_url, cache, why))
    try:
        verified = download_verified(source_url, cache / spec.filename, spec.revisions, what=what)
    except DownloadError as exc:
        why = f"Download failed: {exc}"
        raise FileNotFoundError(_missing_message(spec, dirs, source_url, cache, why)) from exc
    return _parse(spec, verified)
