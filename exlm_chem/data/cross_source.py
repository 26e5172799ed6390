"""Cross-source pairs: one source's labels of a target beside another lab's assay of the
same target, the molecules compared by parent (:func:`molecule_key`).

The registry the benchmark's cross-source suite reads
(:mod:`exlm_chem.benchmark.cross_source`, which builds each pair's task and has the table
of the pairs, their sizes and why they were chosen), here in the data layer beside
:mod:`exlm_chem.data.tdc_admet` so that a task's type is known without the benchmark.
"""

from __future__ import annotations

import hashlib
import os
from typing import NamedTuple

import numpy as np

__all__ = ["CROSS_SOURCE_PAIRS", "CrossSourcePair", "LabelSource", "get_pair",
           "molecule_key", "pair_digest", "pair_sha256"]

DataPath = str | os.PathLike[str] | None


_TITLES = {"esol": "ESOL", "tox21": "Tox21", "toxcast": "ToxCast"}


class LabelSource(NamedTuple):
    """One labelled column of a data file: a MoleculeNet set's column, or a TDC ADMET task
    (``column`` empty: its ``Y``, over ``train_val`` and the test part)."""

    suite: str  # "moleculenet" (classification and regression sets) | "tdc"
    dataset: str  # "tox21", "esol", "cyp2d6_veith"
    column: str = ""

    @property
    def title(self) -> str:
        """``"Tox21 NR-ER"``-like name for tables (a one-column set: its name alone)."""
        if self.suite == "tdc":
            return f"TDC {self.dataset}"
        from exlm_chem.data.moleculenet import get_spec

        name = _TITLES.get(self.dataset, self.dataset)
        return f"{name} {self.column}" if get_spec(self.dataset).n_tasks > 1 else name

    def sha256(self, path: DataPath = None) -> str:
        """sha256 of the content of the file this column is read from."""
        if self.suite == "tdc":
            from exlm_chem.data.tdc_admet import tdc_admet_sha256

            return tdc_admet_sha256(path)
        from exlm_chem.data.moleculenet import load_moleculenet, local_sha256

        return local_sha256(self.dataset, path) or load_moleculenet(self.dataset,
                                                                     path=path).sha256

    def load(self, path: DataPath = None) -> tuple[list[str], np.ndarray, str]:
        """Every molecule of the file RDKit reads, in file order, with this column's labels
        ([n] float64, NaN where missing) and the file's sha256."""
        if self.suite == "tdc":
            from exlm_chem.data.rdkit_reasons import canonical_or_failure
            from exlm_chem.data.tdc_admet import load_tdc_admet

            task = load_tdc_admet(self.dataset, path=path)
            smiles = task.train_val.smiles + task.test.smiles
            labels = np.concatenate([task.train_val.y, task.test.y])
            # as load_tdc_task does: a molecule RDKit cannot read has no features
            keep = [i for i, s in enumerate(smiles) if canonical_or_failure(s)[0] is not None]
            return [smiles[i] for i in keep], labels[keep].astype(np.float64), task.sha256
        from exlm_chem.data.moleculenet import load_moleculenet

        dataset = load_moleculenet(self.dataset, path=path)  # parsable rows only
        column = dataset.task_names.index(self.column)
        return (list(dataset.smiles), np.asarray(dataset.labels[:, column], np.float64),
                dataset.sha256)


class CrossSourcePair(NamedTuple):
    """Fit on ``source``'s labels, score on ``target``'s molecules the source lacks."""

    source: LabelSource
    target: LabelSource
    task_type: str  # "regression" | "classification"
    why: str  # why the two measure the same thing, and in another lab

    @property
    def metric(self) -> str:
        """Spearman's rho for regression (the labs' scales may differ), else ROC-AUC."""
        return "spearman" if self.task_type == "regression" else "roc_auc"


_MN, _TDC, _TOX21, _TOXCAST = "moleculenet", "tdc", "tox21", "toxcast"

#: The pairs by task name (``SOURCE_to_TARGET``); the module docstring has their sizes.
CROSS_SOURCE_PAIRS: dict[str, CrossSourcePair] = {
    "esol_to_aqsoldb": CrossSourcePair(
        LabelSource(_MN, "esol", "measured log solubility in mols per litre"),
        LabelSource(_TDC, "solubility_aqsoldb"), "regression",
        "aqueous solubility (log mol/L): Delaney's set against the compilations AqSolDB "
        "merged beside it"),
    "tox21_er_to_atg_era": CrossSourcePair(
        LabelSource(_MN, _TOX21, "NR-ER"), LabelSource(_MN, _TOXCAST, "ATG_ERa_TRANS_up"),
        "classification", "estrogen receptor alpha agonism: Tox21's BG1 cell line "
        "against Attagene's ERa trans-activation reporter"),
    "tox21_ahr_to_atg_ahr": CrossSourcePair(
        LabelSource(_MN, _TOX21, "NR-AhR"), LabelSource(_MN, _TOXCAST, "ATG_Ahr_CIS_up"),
        "classification", "aryl hydrocarbon receptor activation: Tox21's HepG2 reporter "
        "against Attagene's cis reporter"),
    "tox21_pparg_to_atg_pparg": CrossSourcePair(
        LabelSource(_MN, _TOX21, "NR-PPAR-gamma"),
        LabelSource(_MN, _TOXCAST, "ATG_PPARg_TRANS_up"), "classification",
        "PPAR-gamma agonism: Tox21's beta-lactamase reporter against Attagene's "
        "trans-activation reporter"),
    "cyp2d6_veith_to_nvs_cyp2d6": CrossSourcePair(
        LabelSource(_TDC, "cyp2d6_veith"), LabelSource(_MN, _TOXCAST, "NVS_ADME_hCYP2D6"),
        "classification", "CYP2D6 inhibition: PubChem AID 1851 (Veith et al.) against "
        "Novascreen's enzyme assay"),
    "cyp3a4_veith_to_nvs_cyp3a4": CrossSourcePair(
        LabelSource(_TDC, "cyp3a4_veith"), LabelSource(_MN, _TOXCAST, "NVS_ADME_hCYP3A4"),
        "classification", "CYP3A4 inhibition: PubChem AID 1851 (Veith et al.) against "
        "Novascreen's enzyme assay"),
    "cyp2c9_veith_to_nvs_cyp2c9": CrossSourcePair(
        LabelSource(_TDC, "cyp2c9_veith"), LabelSource(_MN, _TOXCAST, "NVS_ADME_hCYP2C9"),
        "classification", "CYP2C9 inhibition: PubChem AID 1851 (Veith et al.) against "
        "Novascreen's enzyme assay"),
    "herg_to_nvs_herg": CrossSourcePair(
        LabelSource(_TDC, "herg"), LabelSource(_MN, _TOXCAST, "NVS_IC_hKhERGCh"),
        "classification", "hERG channel blocking: the literature set of Wang et al. "
        "against Novascreen's binding assay"),
}


def get_pair(name: str) -> CrossSourcePair:
    """The pair named ``name``; an unknown name is a ``ValueError`` listing them."""
    try:
        return CROSS_SOURCE_PAIRS[name]
    except KeyError:
        raise ValueError(f"unknown cross-source pair {name!r}; choose from "
                         f"{list(CROSS_SOURCE_PAIRS)}") from None


def molecule_key(smiles: str) -> str | None:
    """What "a molecule the source lacks" compares: the first block of the standard
    InChIKey (the connectivity skeleton: no stereochemistry, isotopes or protonation) of
    the molecule's largest organic fragment (a salt is its parent); the fragment's RDKit
    canonical SMILES where RDKit writes no InChI; None where RDKit cannot read ``smiles``."""
    from rdkit import Chem, rdBase
    from rdkit.Chem.MolStandardize import rdMolStandardize

    from exlm_chem.data.rdkit_reasons import quiet_mol

    mol = quiet_mol(smiles)
    if mol is None:
        return None
    with rdBase.BlockLogs():  # InChI's warnings (undefined stereo, ...) are not errors here
        parent = rdMolStandardize.LargestFragmentChooser(preferOrganic=True).choose(mol)
        key = Chem.MolToInchiKey(parent)
    return key.split("-")[0] if key else Chem.MolToSmiles(parent)


def pair_digest(source_sha256: str, target_sha256: str) -> str:
    """The pair's data revision: a sha256 over both files' content sha256."""
    return hashlib.sha256(f"{source_sha256}\n{target_sha256}".encode()).hexdigest()


def pair_sha256(name: str, path: DataPath = None) -> str:
    """:func:`pair_digest` of the two files ``name`` reads (source's, then target's): the
    data revision a cell's key names, without loading either."""
    pair = get_pair(name)
    return pair_digest(pair.source.sha256(path), pair.target.sha256(path))
