"""The TDC ADMET benchmark group: its 22 tasks, their metrics, and a verified loader.

The Therapeutics Data Commons serves the whole group as one file, ``admet_group.zip``
(Harvard Dataverse file 4426004), which unpacks to ``admet_group/<task>/train_val.csv`` and
``test.csv`` with columns ``Drug_ID, Drug, Y`` (``Drug`` is the SMILES). The test part of
each task is fixed; models are fitted on ``train_val`` (re-split per seed into train and
valid) and scored on the test part with the task's metric (:data:`TDC_ADMET_TASKS`).

The file is found the way MoleculeNet files are (:mod:`exlm_chem.data.moleculenet`): the
``path=`` argument (the zip or its folder), ``$EXLM_CHEM_DATA`` (and the ``tdc_admet/``
folder in it or beside it), the repository's ``data/``, the user cache; then, with
``download=True``, Dataverse, keeping the file only if its md5 is the one TDC pins.
"""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path
from typing import NamedTuple

import numpy as np

from exlm_chem.data.download import (
    DownloadError,
    Revision,
    download_verified,
    read_verified,
)
from exlm_chem.errors import DataFileError

__all__ = [
    "ADMET_GROUP_URL",
    "TDC_ADMET_TASKS",
    "TDCPart",
    "TDCTask",
    "TDCTaskSpec",
    "find_admet_group",
    "load_tdc_admet",
    "tdc_admet_names",
]

FILENAME = "admet_group.zip"
FOLDER = "tdc_admet"
#: TDC's own source for the group (``tdc.utils.load``: Dataverse file id 4426004)
ADMET_GROUP_URL = "https://dataverse.harvard.edu/api/access/datafile/4426004"
REVISIONS = (
    Revision("dataverse-4426004",
             "bd0005246cb6f1672333c28ad202112a8bf071ab65d847848715030308faf1f1",
             "e3e4dda2f7f62268448fc813ceefccd5",
             "the file TDC's admet_group() downloads; md5 as TDC pins it"),
)


class TDCTaskSpec(NamedTuple):
    """How one task is scored on the leaderboard."""

    metric: str  # "mae" | "spearman" | "roc_auc" | "prc_auc" (TDC: average precision)
    task_type: str  # "regression" | "classification"
    group: str  # absorption, distribution, metabolism, excretion, toxicity

    @property
    def higher_is_better(self) -> bool:
        return self.metric != "mae"


_R, _C = "regression", "classification"
#: The 22 tasks under TDC's names, in TDC's order, with the metric TDC scores them by.
TDC_ADMET_TASKS: dict[str, TDCTaskSpec] = {
    "caco2_wang": TDCTaskSpec("mae", _R, "absorption"),
    "hia_hou": TDCTaskSpec("roc_auc", _C, "absorption"),
    "pgp_broccatelli": TDCTaskSpec("roc_auc", _C, "absorption"),
    "bioavailability_ma": TDCTaskSpec("roc_auc", _C, "absorption"),
    "lipophilicity_astrazeneca": TDCTaskSpec("mae", _R, "absorption"),
    "solubility_aqsoldb": TDCTaskSpec("mae", _R, "absorption"),
    "bbb_martins": TDCTaskSpec("roc_auc", _C, "distribution"),
    "ppbr_az": TDCTaskSpec("mae", _R, "distribution"),
    "vdss_lombardo": TDCTaskSpec("spearman", _R, "distribution"),
    "cyp2d6_veith": TDCTaskSpec("prc_auc", _C, "metabolism"),
    "cyp3a4_veith": TDCTaskSpec("prc_auc", _C, "metabolism"),
    "cyp2c9_veith": TDCTaskSpec("prc_auc", _C, "metabolism"),
    "cyp2d6_substrate_carbonmangels": TDCTaskSpec("prc_auc", _C, "metabolism"),
    "cyp3a4_substrate_carbonmangels": TDCTaskSpec("roc_auc", _C, "metabolism"),
    "cyp2c9_substrate_carbonmangels": TDCTaskSpec("prc_auc", _C, "metabolism"),
    "half_life_obach": TDCTaskSpec("spearman", _R, "excretion"),
    "clearance_microsome_az": TDCTaskSpec("spearman", _R, "excretion"),
    "clearance_hepatocyte_az": TDCTaskSpec("spearman", _R, "excretion"),
    "herg": TDCTaskSpec("roc_auc", _C, "toxicity"),
    "ames": TDCTaskSpec("roc_auc", _C, "toxicity"),
    "dili": TDCTaskSpec("roc_auc", _C, "toxicity"),
    "ld50_zhu": TDCTaskSpec("mae", _R, "toxicity"),
}


def tdc_admet_names() -> tuple[str, ...]:
    """The 22 task names, in TDC's order."""
    return tuple(TDC_ADMET_TASKS)


def get_tdc_spec(name: str) -> TDCTaskSpec:
    """The task's metric and kind; an unknown name is a ``ValueError`` listing the 22."""
    try:
        return TDC_ADMET_TASKS[name]
    except KeyError:
        raise ValueError(f"unknown TDC ADMET task {name!r}; valid names: "
                         f"{', '.join(TDC_ADMET_TASKS)}") from None


class TDCPart(NamedTuple):
    """One part of a task as TDC gives it (no transform of ``y``)."""

    ids: list[str]  # Drug_ID
    smiles: list[str]  # Drug
    y: np.ndarray  # [n] float64: values (regression) or 0/1


class TDCTask(NamedTuple):
    """One task: the part models are fitted on and the fixed test part."""

    name: str
    spec: TDCTaskSpec
    train_val: TDCPart
    test: TDCPart
    sha256: str  # sha256 of admet_group.zip (the data revision)
    revision: str  # the revision label the file matched


def _cache_dir() -> Path:
    from exlm_chem.data.moleculenet import default_cache_dir

    return default_cache_dir().parent / FOLDER


def _candidates(path: str | os.PathLike[str] | None) -> list[tuple[Path, str]]:
    from exlm_chem.data.moleculenet import _search_dirs

    if path is not None:
        given = Path(path).expanduser()
        if given.suffix == ".zip":
            return [(given, "path= argument")]
        return [(given / FILENAME, "path= argument"),
                (given / FOLDER / FILENAME, "path= argument"),
                (given.parent / FOLDER / FILENAME, "path= argument/..")]
    return [(d / FILENAME, origin) for d, origin in _search_dirs(_cache_dir(), FOLDER)]


def find_admet_group(path: str | os.PathLike[str] | None = None,
                     download: bool = True) -> Path:
    """The local ``admet_group.zip`` (downloaded into the user cache if none is found and
    ``download``); a ``FileNotFoundError`` lists every place searched."""
    candidates = _candidates(path)
    for candidate, _ in candidates:
        if candidate.is_file():
            return candidate
    dest = _cache_dir() / FILENAME
    searched = "\n".join(f"  {c}  ({origin})" for c, origin in candidates)
    message = (f"TDC ADMET group file {FILENAME} not found. Searched, in order:\n"
               f"{searched}\n{{why}}Fetch it from {ADMET_GROUP_URL} (md5 "
               f"{REVISIONS[0].md5_file}), e.g.\n"
               f"  curl -L --create-dirs -o {dest} {ADMET_GROUP_URL}\n"
               "or pass path= (the zip or its folder).")
    if not (download and path is None):
        raise FileNotFoundError(message.format(why=""))
    try:
        download_verified(ADMET_GROUP_URL, dest, REVISIONS, what="TDC ADMET group")
    except DownloadError as error:
        raise FileNotFoundError(message.format(why=f"The download failed: {error}\n")
                                ) from None
    return dest


_ARCHIVES: dict[Path, tuple[float, bytes, str, str]] = {}  # path -> (mtime, content, sha, rev)


def _archive(path: Path) -> tuple[bytes, str, str]:
    """The verified zip's bytes, sha256 and revision (read once per process and file)."""
    stamp = path.stat().st_mtime
    cached = _ARCHIVES.get(path)
    if cached is None or cached[0] != stamp:
        verified = read_verified(path, REVISIONS, what="TDC ADMET group")
        _ARCHIVES[path] = (stamp, verified.content, verified.digest.sha256_content,
                           verified.revision.label)
    return _ARCHIVES[path][1:]


def _read_part(archive: zipfile.ZipFile, zip_path: Path, member: str) -> TDCPart:
    import pandas as pd

    try:
        with archive.open(member) as handle:
            frame = pd.read_csv(handle)
    except KeyError:
        raise DataFileError(f"{zip_path}: no {member} inside (is it TDC's admet_group.zip?)"
                            ) from None
    missing = {"Drug_ID", "Drug", "Y"} - set(frame.columns)
    if missing:
        raise DataFileError(f"{zip_path}: {member} lacks the columns {sorted(missing)}")
    return TDCPart([str(v) for v in frame["Drug_ID"]], [str(v) for v in frame["Drug"]],
                   frame["Y"].to_numpy(dtype=np.float64))


def load_tdc_admet(name: str, path: str | os.PathLike[str] | None = None,
                   download: bool = True) -> TDCTask:
    """One task of the TDC ADMET group: ``train_val`` and the fixed ``test`` part.

    Parameters
    ----------
    name : str
        A task of :data:`TDC_ADMET_TASKS` (TDC's name, e.g. ``"caco2_wang"``).
    path : path-like, optional
        ``admet_group.zip`` or a folder holding it (directly or in ``tdc_admet/``); by
        default the search order of the module docstring.
    download : bool
        Download from Dataverse into the user cache when no local file is found.

    Returns
    -------
    TDCTask
        Both parts with ``y`` as TDC gives it, the metric, and the file's sha256.
    """
    spec = get_tdc_spec(name)
    zip_path = find_admet_group(path, download=download)
    content, sha, revision = _archive(zip_path)
    try:
        archive = zipfile.ZipFile(io.BytesIO(content))
    except zipfile.BadZipFile as error:  # verified bytes: only a new revision could do this
        raise DataFileError(f"{zip_path}: not a zip archive ({error})") from None
    with archive:
        train_val = _read_part(archive, zip_path, f"admet_group/{name}/train_val.csv")
        test = _read_part(archive, zip_path, f"admet_group/{name}/test.csv")
    return TDCTask(name, spec, train_val, test, sha, revision)


def tdc_admet_sha256(path: str | os.PathLike[str] | None = None) -> str:
    """sha256 of the group file the loader would read (downloading it if needed)."""
    return _archive(find_admet_group(path))[1]
