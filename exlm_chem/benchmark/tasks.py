"""A MoleculeNet task (classification or regression) as every benchmark method sees it:
loaded, split by name (:mod:`exlm_chem.data.split_modes`, or the out-of-distribution
:data:`CLUSTER_SPLIT`) and, for encoders, canonical."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from exlm_chem.data.split_modes import check_split, split_rows

if TYPE_CHECKING:
    from exlm_chem.data.similarity import ClusterHeldOut


class TaskData(NamedTuple):
    """One MoleculeNet task as every method sees it."""

    name: str  # dataset name, lower case ("bace")
    smiles: list[str]  # [N] valid molecules, loader order
    labels: np.ndarray  # [N, T] float64, 0/1 (regression: values), NaN where missing
    train: np.ndarray  # int64 row indices into smiles
    valid: np.ndarray
    test: np.ndarray
    data_sha256: str = ""  # sha256 of the data file's content (the data revision)
    task_type: str = "classification"  # "classification" | "regression"
    # a suite's own metric ("mae" | "spearman" | "roc_auc" | "prc_auc", TDC's); "": the
    # MoleculeNet scores (ROC-AUC, PRC-AUC; RMSE, MAE)
    metric: str = ""
    # True: ``valid`` is a held-out part that methods score and never fit on (TDC's
    # protocol); False: estimators fit on train + valid and hold out their own share
    held_out_valid: bool = False


#: How encoders are fed a task's molecules: RDKit canonical SMILES, the form of the
#: pre-training corpus (:mod:`exlm_chem.data.corpus_prepare`). As written in the data
#: files, the strings carry their source's conventions, and the ClinTox probe scored 0.986
#: on them against 0.675 on canonical SMILES of the same molecules.
ENCODER_SMILES = "rdkit-canonical"


def with_canonical_smiles(data: TaskData) -> TaskData:
    """``data`` with every molecule as its RDKit canonical SMILES (same rows, same order)."""
    from exlm_chem.data.rdkit_reasons import canonical_or_failure

    canonical = [canonical_or_failure(s)[0] for s in data.smiles]
    failed = [i for i, c in enumerate(canonical) if c is None]
    if failed:  # the loader keeps only parsable rows, so this is a changed RDKit or file
        raise ValueError(f"{data.name}: rows {failed[:10]} passed the loader but RDKit "
                         "cannot write their canonical SMILES")
    return data._replace(smiles=canonical)


#: ``--split cluster`` on the MoleculeNet suite, the name its records carry: the test part
#: is whole similarity clusters, the least like the rest first
#: (:func:`~exlm_chem.data.similarity.cluster_held_out`, the TDC cluster split's share
#: :data:`CLUSTER_TEST_FRACTION`), no valid part, the same rows for
#: every seed. It is not one of :data:`~exlm_chem.data.split_modes.SPLITS`: corpus hygiene
#: iterates those, and its test molecules are not kept out of pre-training corpora.
CLUSTER_SPLIT = "cluster"
#: the cluster test part's share of a task in every suite: TDC's test parts' share
CLUSTER_TEST_FRACTION = 0.2


def cluster_part(smiles: Sequence[str]) -> ClusterHeldOut:
    """The out-of-distribution split of ``smiles`` every suite uses: whole similarity
    clusters, the least like the rest first, :data:`CLUSTER_TEST_FRACTION` of the
    molecules held out (:func:`~exlm_chem.data.similarity.cluster_held_out` on Morgan
    bits); the same rows whatever the seed."""
    from exlm_chem.data.similarity import cluster_held_out, morgan_bits

    return cluster_held_out(morgan_bits(smiles), CLUSTER_TEST_FRACTION)


def task_type(task: str) -> str:
    """"classification" or "regression" for a MoleculeNet, TDC ADMET or cross-source task
    name (other names: classification)."""
    from exlm_chem.data.cross_source import CROSS_SOURCE_PAIRS
    from exlm_chem.data.moleculenet import get_spec
    from exlm_chem.data.tdc_admet import TDC_ADMET_TASKS

    if task in TDC_ADMET_TASKS:
        return TDC_ADMET_TASKS[task].task_type
    if task in CROSS_SOURCE_PAIRS:
        return CROSS_SOURCE_PAIRS[task].task_type
    try:
        return get_spec(task).task_type
    except ValueError:
        return "classification"


def held_out_valid(task: str) -> bool:
    """Whether the task's valid part is held out from every fit (:attr:`TaskData.
    held_out_valid`): true of the TDC ADMET tasks."""
    from exlm_chem.data.tdc_admet import TDC_ADMET_TASKS

    return task in TDC_ADMET_TASKS


def task_sha256(name: str, path: str | os.PathLike[str] | None = None) -> str:
    """sha256 of the content of the file :func:`load_task` reads (the data revision).

    Hashes the local file without parsing it; loads (and so downloads) only when there
    is no local file yet.
    """
    from exlm_chem.data.moleculenet import load_moleculenet, local_sha256

    return local_sha256(name, path) or load_moleculenet(name, path=path).sha256


def load_task(name: str, split: str, seed: int,
              path: str | os.PathLike[str] | None = None) -> TaskData:
    """One dataset's valid molecules, labels and the split named ``split`` (80/10/10).

    ``split`` is one of :data:`~exlm_chem.data.split_modes.SPLITS`, or
    :data:`CLUSTER_SPLIT`: held-out similarity clusters as the test part, no valid part
    (the estimators hold out their own share of the train part). ``path`` is a
    MoleculeNet folder or file; None uses the loader's search order (``$EXLM_CHEM_DATA``,
    ``data/``, cache, download).
    """
    from exlm_chem.data.moleculenet import get_spec, load_moleculenet

    if split != CLUSTER_SPLIT:
        check_split(split)  # before the file is read (or downloaded)
    dataset = load_moleculenet(name, path=path)
    smiles = list(dataset.smiles)
    labels = np.asarray(dataset.labels, dtype=np.float64)  # [N, T]
    kind = get_spec(name).task_type
    if split == CLUSTER_SPLIT:
        part = cluster_part(smiles)
        return TaskData(name, smiles, labels, part.train_rows, np.zeros(0, np.int64),
                        part.held_rows, dataset.sha256, kind, held_out_valid=False)
    indices = split_rows(smiles, split, seed)
    return TaskData(name, smiles, labels, indices.train, indices.valid, indices.test,
                    dataset.sha256, kind)
