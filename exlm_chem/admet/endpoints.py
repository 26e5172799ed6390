"""The ADMET panel's endpoints: where each one's data come from, its unit and direction.

One table (:data:`ENDPOINTS`) names every endpoint the shipped panel predicts: the 22 tasks
of TDC's ADMET benchmark group, the 12 Tox21 assays and ClinTox's clinical-trial toxicity
(MoleculeNet), ESOL's aqueous solubility and FreeSolv's hydration free energy. Units are
the source's (TDC's units; log where TDC logs); a classification endpoint's value is the
probability of the class the source labels 1. :func:`endpoint_data` reads an endpoint's
labelled molecules, one row per distinct canonical SMILES.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

__all__ = [
    "ENDPOINTS",
    "GROUPS",
    "Endpoint",
    "EndpointData",
    "endpoint_data",
    "get_endpoint",
    "merged_labels",
    "units_table",
]

#: the groups a report shows endpoints in, in order
GROUPS = ("absorption", "distribution", "metabolism", "excretion", "toxicity")


class Endpoint(NamedTuple):
    """One predicted property."""

    name: str  # the column of predict()'s table
    task: str  # "classification" | "regression"
    group: str  # one of GROUPS
    unit: str  # the value's unit; "probability" for a classification endpoint
    direction: str  # what a higher value means, in the source's words
    source: str  # "tdc:<task>", "moleculenet:<set>:<column>" or "user:<file>"
    description: str  # one line for the report and the units table


_P = "probability"


def _tdc(name: str, task: str, group: str, unit: str, direction: str, text: str) -> Endpoint:
    return Endpoint(name, task, group, unit, direction, f"tdc:{name}", text)


def _tox21(assay: str, text: str) -> Endpoint:
    name = "tox21_" + assay.lower().replace("-", "_")
    return Endpoint(name, "classification", "toxicity", _P, "higher: active in the assay",
                    f"moleculenet:tox21:{assay}", f"Tox21 {assay}: {text}")


_C, _R = "classification", "regression"
#: every endpoint of the shipped panel, grouped as a report shows them
ENDPOINTS: tuple[Endpoint, ...] = (
    _tdc("caco2_wang", _R, "absorption", "log10(cm/s)", "higher: more permeable",
         "Caco-2 cell permeability (Wang et al.)"),
    _tdc("hia_hou", _C, "absorption", _P, "higher: absorbed in the human intestine",
         "human intestinal absorption (Hou et al.)"),
    _tdc("pgp_broccatelli", _C, "absorption", _P, "higher: P-glycoprotein inhibitor",
         "P-glycoprotein inhibition (Broccatelli et al.)"),
    _tdc("bioavailability_ma", _C, "absorption", _P, "higher: oral bioavailability >= 20 %",
         "oral bioavailability (Ma et al.)"),
    _tdc("lipophilicity_astrazeneca", _R, "absorption", "logD7.4 (log10 ratio)",
         "higher: more lipophilic", "octanol/water distribution at pH 7.4 (AstraZeneca)"),
    _tdc("solubility_aqsoldb", _R, "absorption", "log10(mol/L)", "higher: more soluble",
         "aqueous solubility (AqSolDB)"),
    Endpoint("solubility_esol", _R, "absorption", "log10(mol/L)", "higher: more soluble",
             "moleculenet:esol:measured log solubility in mols per litre",
             "aqueous solubility (ESOL, Delaney)"),
    Endpoint("hydration_freesolv", _R, "absorption", "kcal/mol",
             "higher: less favourable hydration",
             "moleculenet:freesolv:expt", "hydration free energy (FreeSolv, experimental)"),
    _tdc("bbb_martins", _C, "distribution", _P, "higher: crosses the blood-brain barrier",
         "blood-brain barrier penetration (Martins et al.)"),
    _tdc("ppbr_az", _R, "distribution", "% bound", "higher: more bound to plasma proteins",
         "plasma protein binding rate (AstraZeneca; TDC's rows, species mixed)"),
    _tdc("vdss_lombardo", _R, "distribution", "L/kg", "higher: wider distribution",
         "volume of distribution at steady state (Lombardo et al.)"),
    _tdc("cyp2c9_veith", _C, "metabolism", _P, "higher: CYP2C9 inhibitor",
         "CYP2C9 inhibition (Veith et al.)"),
    _tdc("cyp2d6_veith", _C, "metabolism", _P, "higher: CYP2D6 inhibitor",
         "CYP2D6 inhibition (Veith et al.)"),
    _tdc("cyp3a4_veith", _C, "metabolism", _P, "higher: CYP3A4 inhibitor",
         "CYP3A4 inhibition (Veith et al.)"),
    _tdc("cyp2c9_substrate_carbonmangels", _C, "metabolism", _P,
         "higher: CYP2C9 substrate", "CYP2C9 substrate (Carbon-Mangels et al.)"),
    _tdc("cyp2d6_substrate_carbonmangels", _C, "metabolism", _P,
         "higher: CYP2D6 substrate", "CYP2D6 substrate (Carbon-Mangels et al.)"),
    _tdc("cyp3a4_substrate_carbonmangels", _C, "metabolism", _P,
         "higher: CYP3A4 substrate", "CYP3A4 substrate (Carbon-Mangels et al.)"),
    _tdc("half_life_obach", _R, "excretion", "h", "higher: longer half-life",
         "human half-life (Obach et al.)"),
    _tdc("clearance_hepatocyte_az", _R, "excretion", "uL/min/10^6 cells",
         "higher: cleared faster", "hepatocyte intrinsic clearance (AstraZeneca)"),
    _tdc("clearance_microsome_az", _R, "excretion", "mL/min/g",
         "higher: cleared faster", "liver microsome intrinsic clearance (AstraZeneca)"),
    _tdc("herg", _C, "toxicity", _P, "higher: hERG blocker", "hERG channel blocking"),
    _tdc("ames", _C, "toxicity", _P, "higher: mutagenic", "Ames mutagenicity"),
    _tdc("dili", _C, "toxicity", _P, "higher: causes liver injury",
         "drug-induced liver injury"),
    _tdc("ld50_zhu", _R, "toxicity", "-log10(mol/kg)", "higher: more toxic",
         "acute oral toxicity in rat, LD50 (Zhu et al.)"),
    Endpoint("clintox_ct_tox", _C, "toxicity", _P,
             "higher: failed clinical trials for toxicity", "moleculenet:clintox:CT_TOX",
             "clinical-trial toxicity (ClinTox)"),
    _tox21("NR-AR", "androgen receptor agonism"),
    _tox21("NR-AR-LBD", "androgen receptor ligand-binding domain agonism"),
    _tox21("NR-AhR", "aryl hydrocarbon receptor activation"),
    _tox21("NR-Aromatase", "aromatase inhibition"),
    _tox21("NR-ER", "estrogen receptor alpha agonism"),
    _tox21("NR-ER-LBD", "estrogen receptor ligand-binding domain agonism"),
    _tox21("NR-PPAR-gamma", "PPAR-gamma agonism"),
    _tox21("SR-ARE", "antioxidant response element activation"),
    _tox21("SR-ATAD5", "ATAD5 genotoxicity response"),
    _tox21("SR-HSE", "heat shock response activation"),
    _tox21("SR-MMP", "mitochondrial membrane potential disruption"),
    _tox21("SR-p53", "p53 response activation"),
)


def get_endpoint(name: str, endpoints: Sequence[Endpoint] = ENDPOINTS) -> Endpoint:
    """The endpoint called ``name``; a ``KeyError`` naming the known ones otherwise."""
    for endpoint in endpoints:
        if endpoint.name == name:
            return endpoint
    raise KeyError(f"no endpoint {name!r}; the panel has {', '.join(e.name for e in endpoints)}")


def units_table(endpoints: Sequence[Endpoint] = ENDPOINTS) -> str:
    """The endpoints as a Markdown table: name, group, unit, direction, what it is."""
    lines = ["| endpoint | group | unit | a higher value means | what it is |",
             "|---|---|---|---|---|"]
    lines += [f"| `{e.name}` | {e.group} | {e.unit} | {e.direction.removeprefix('higher: ')} "
              f"| {e.description} |" for e in endpoints]
    return "\n".join(lines) + "\n"


class EndpointData(NamedTuple):
    """An endpoint's labelled molecules, one row per distinct canonical SMILES."""

    smiles: list[str]  # canonical
    y: np.ndarray  # [n] float64: 0/1 or values, duplicates merged
    sha256: str  # the source file's checksum
    test_smiles: frozenset[str]  # TDC's fixed test part (canonical); empty elsewhere


def merged_labels(smiles: Sequence[str], y: np.ndarray, task: str
                  ) -> tuple[list[str], np.ndarray]:
    """Canonical SMILES with one label each: the mean of a molecule's values, the majority
    of its classes (a molecule labelled both ways equally often is left out). SMILES RDKit
    rejects are left out (the sources' own loaders already report them)."""
    from exlm_chem.data.rdkit_reasons import canonical_or_failure

    values: dict[str, list[float]] = {}
    for s, value in zip(smiles, np.asarray(y, np.float64), strict=True):
        canonical, _ = canonical_or_failure(s)
        if canonical is not None and np.isfinite(value):
            values.setdefault(canonical, []).append(float(value))
    kept, labels = [], []
    for canonical, got in values.items():
        mean = float(np.mean(got))
        if task == "classification":
            if mean == 0.5:
                continue
            mean = float(mean > 0.5)
        kept.append(canonical)
        labels.append(mean)
    return kept, np.asarray(labels, np.float64)


def endpoint_data(endpoint: Endpoint) -> EndpointData:
    """Every labelled molecule of a shipped endpoint (TDC: ``train_val`` and ``test``).

    Files are found as the package's loaders find them (``$EXLM_CHEM_DATA`` and the
    folders beside it, the repository's ``data/``, the user cache); nothing is downloaded.
    """
    kind, _, rest = endpoint.source.partition(":")
    if kind == "tdc":
        from exlm_chem.data.tdc_admet import load_tdc_admet

        task = load_tdc_admet(rest, download=False)
        smiles = task.train_val.smiles + task.test.smiles
        y = np.concatenate([task.train_val.y, task.test.y])
        test, _ = merged_labels(task.test.smiles, task.test.y, endpoint.task)
        kept, labels = merged_labels(smiles, y, endpoint.task)
        return EndpointData(kept, labels, task.sha256, frozenset(test))
    if kind == "moleculenet":
        from exlm_chem.data.moleculenet import load_moleculenet

        name, _, column = rest.partition(":")
        data = load_moleculenet(name, download=False)
        labels = np.asarray(data.labels[:, data.task_names.index(column)], np.float64)
        kept, merged = merged_labels(data.smiles, labels, endpoint.task)
        return EndpointData(kept, merged, data.sha256, frozenset())
    raise ValueError(f"endpoint {endpoint.name!r}: no data source {endpoint.source!r} "
                     "(a user's endpoint is fitted from its own file)")
