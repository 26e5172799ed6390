"""Cross-source pairs: a model fitted on one source's labels, scored on the molecules of
another source (another lab's assay of the same target) that the first lacks.

``exlm-chem benchmark --suite cross-source`` runs them through the same runner as the other
suites (resumable, one record per cell). A pair's :class:`TaskData` has one label column:
the source's labels on the train rows (every molecule of the source with a label), the
target's labels on the test rows (every molecule of the target with a label that is in no
row of the source file, labelled or not), no valid part (the estimators hold out their own
share). Regression pairs are scored by Spearman's rho (two labs' scales need not agree),
classification pairs by ROC-AUC, with PRC-AUC recorded beside it as for every
classification cell. A cell's data checksum is a sha256 over both files' content sha256.

"Absent" compares parents by InChIKey skeleton
(:func:`~exlm_chem.data.cross_source.molecule_key`): the first block of
the standard InChIKey (no stereochemistry, isotopes or protonation) of the largest organic
fragment. RDKit canonical SMILES would call 18 ESOL molecules absent from AqSolDB that are
in it as another stereo or charge form; and keyed on the whole molecule, 101 of the 129
APR_HepG2_p53Act molecules "absent" from Tox21 were salts or hydrochlorides, mostly of a
parent Tox21 has (median nearest-neighbour similarity 0.92).

The pairs (target: a ToxCast assay unless named; train, test: molecules; pos: test
positives; sim: the test part's median nearest-neighbour Tanimoto similarity to the
train part, Morgan radius 2, 2048 bits; :func:`pair_summary` computes a row):

==========================  ===================  ======================  =====  ====  ===  ====
pair                        source               target                  train  test  pos  sim
==========================  ===================  ======================  =====  ====  ===  ====
esol_to_aqsoldb             ESOL                 TDC solubility_aqsoldb  1128   8731  –    0.37
tox21_er_to_atg_era         Tox21 NR-ER          ATG_ERa_TRANS_up        6186   370   62   0.55
tox21_ahr_to_atg_ahr        Tox21 NR-AhR         ATG_Ahr_CIS_up          6542   370   39   0.55
tox21_pparg_to_atg_pparg    Tox21 NR-PPAR-gamma  ATG_PPARg_TRANS_up      6443   370   92   0.55
cyp2d6_veith_to_nvs_cyp2d6  TDC cyp2d6_veith     NVS_ADME_hCYP2D6        13130  107   72   0.36
cyp3a4_veith_to_nvs_cyp3a4  TDC cyp3a4_veith     NVS_ADME_hCYP3A4        12328  144   79   0.35
cyp2c9_veith_to_nvs_cyp2c9  TDC cyp2c9_veith     NVS_ADME_hCYP2C9        12092  211   175  0.35
herg_to_nvs_herg            TDC herg             NVS_IC_hKhERGCh         655    84    35   0.25
==========================  ===================  ======================  =====  ====  ===  ====

Why these: each target assay measures the source's target (the same receptor, enzyme or
channel, :attr:`CrossSourcePair.why`) in another lab and format: Attagene's cis/trans
reporter assays against the Tox21 programme's cell lines, Novascreen's enzyme and binding
assays against PubChem AID 1851 (Veith et al.) and Wang et al.'s hERG set, and for
solubility the compilations AqSolDB merged beside Delaney's (ESOL) set. Each test part has
at least 30 molecules of each class. ToxCast's ``TOX21_`` columns are the Tox21 programme's
own screens and are not used.

Left out, no molecule of the target absent from the source: AqSolDB -> ESOL (AqSolDB merged
Delaney's set), TDC lipophilicity_astrazeneca -> MoleculeNet lipo (the same AstraZeneca
ChEMBL deposit), TDC bbb_martins -> BBBP (the same Martins et al. set). Too few of a class
among the molecules Tox21 lacks: NR-AR (ATG_AR_TRANS_up 1 positive of 370, OT_AR_* 2-4 of
34, NVS_NR_*AR 4-5 of 7-12), SR-p53 (ATG_p53_CIS_up 5 of 370, APR_HepG2_p53Act_72h_up 6 of
34), NR-Aromatase (NVS_ADME_hCYP19A1 4 of 9), the ER and PPAR-gamma binding assays
(NVS_NR_hER 4 of 31, NVS_NR_hPPARg 3 of 20).

The test molecules are not kept out of pre-training corpora (corpus hygiene covers the
MoleculeNet splits of :data:`~exlm_chem.data.split_modes.SPLITS`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from exlm_chem.benchmark.tasks import TaskData
from exlm_chem.data.cross_source import DataPath, get_pair, molecule_key, pair_digest

__all__ = ["CROSS_SOURCE_SPLIT", "CrossSourceTasks", "PairSummary", "load_cross_source_task",
           "pair_summary"]

#: The split the cells record: the source's labelled molecules fitted on, the target's
#: molecules absent from the source tested.
CROSS_SOURCE_SPLIT = "cross_source"

def load_cross_source_task(name: str, path: DataPath = None) -> TaskData:
    """One pair as a task: the source's labelled molecules (train rows, first), then the
    target's labelled molecules absent from every row of the source file (test rows).

    Parameters
    ----------
    name : str
        A key of :data:`~exlm_chem.data.cross_source.CROSS_SOURCE_PAIRS`.
    path : path-like, optional
        As ``--data``: the MoleculeNet folder (the regression and TDC files are found
        beside it), or None for the loaders' search order.

    Returns
    -------
    TaskData
        One label column, no valid part, ``held_out_valid=False``, the pair's metric and
        :func:`pair_sha256`'s checksum.
    """
    pair = get_pair(name)
    source_smiles, source_labels, source_sha = pair.source.load(path)
    target_smiles, target_labels, target_sha = pair.target.load(path)
    present = {molecule_key(s) for s in source_smiles}  # labelled or not
    train = np.flatnonzero(~np.isnan(source_labels))
    # only labelled target rows need a key (ToxCast's assays label a few of its molecules)
    test = np.array([i for i in np.flatnonzero(~np.isnan(target_labels))
                     if molecule_key(target_smiles[i]) not in present], np.int64)
    smiles = [source_smiles[i] for i in train] + [target_smiles[i] for i in test]
    labels = np.concatenate([source_labels[train], target_labels[test]])[:, None]  # [N, 1]
    sha = pair_digest(source_sha, target_sha)
    return TaskData(name, smiles, labels, np.arange(len(train), dtype=np.int64),
                    np.zeros(0, np.int64), np.arange(len(train), len(smiles), dtype=np.int64),
                    sha, pair.task_type, metric=pair.metric, held_out_valid=False)


class CrossSourceTasks(NamedTuple):
    """The runner's task source for the cross-source suite (``path``: as ``--data``)."""

    path: DataPath = None

    def sha256(self, task: str) -> str:
        from exlm_chem.data.cross_source import pair_sha256

        return pair_sha256(task, self.path)

    def load(self, task: str, split: str, seed: int) -> TaskData:
        if split != CROSS_SOURCE_SPLIT:
            raise ValueError(f"a cross-source pair has one split, {CROSS_SOURCE_SPLIT!r}; "
                             f"got {split!r}")
        return load_cross_source_task(task, self.path)


class PairSummary(NamedTuple):
    """A pair's sizes and how far its test molecules are from its train molecules."""

    name: str
    source: str
    target: str
    n_train: int
    n_test: int
    train_positives: int | None  # None: regression
    test_positives: int | None
    median_similarity: float  # test part's median nearest-neighbour Tanimoto to train


def pair_summary(name: str, path: DataPath = None) -> PairSummary:
    """The row of the module docstring's table for ``name``."""
    from exlm_chem.data.similarity import morgan_bits, nearest_similarity

    pair = get_pair(name)
    data = load_cross_source_task(name, path)
    fingerprints = morgan_bits(data.smiles)
    similarity = nearest_similarity(fingerprints.take(data.test),
                                    fingerprints.take(data.train))
    counted = pair.task_type == "classification"
    return PairSummary(
        name, pair.source.title, pair.target.title, len(data.train), len(data.test),
        int(data.labels[data.train, 0].sum()) if counted else None,
        int(data.labels[data.test, 0].sum()) if counted else None,
        float(np.median(similarity)))
