"""The physico-chemical columns and structural alerts printed beside the panel's endpoints.

Computed by RDKit, not predicted: molecular weight, Crippen logP, TPSA, hydrogen-bond
acceptors and donors (Lipinski's counts), rotatable bonds, stereo centres, QED, Lipinski's
rule-of-five violations, and the number of PAINS, Brenk and NIH alerts (RDKit's
FilterCatalog) with the names of those that match.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np

__all__ = ["ALERT_CATALOGS", "PROPERTIES", "Property", "molecular_properties"]


class Property(NamedTuple):
    """One computed column."""

    name: str
    unit: str
    description: str


#: the computed columns, in the order a table prints them
PROPERTIES: tuple[Property, ...] = (
    Property("molecular_weight", "g/mol", "molecular weight (average)"),
    Property("logp", "log10 ratio", "Crippen's octanol/water logP"),
    Property("tpsa", "A^2", "topological polar surface area"),
    Property("hba", "count", "hydrogen-bond acceptors (Lipinski: N and O)"),
    Property("hbd", "count", "hydrogen-bond donors (Lipinski: NH and OH)"),
    Property("rotatable_bonds", "count", "rotatable bonds"),
    Property("stereo_centres", "count", "tetrahedral stereo centres, assigned or not"),
    Property("qed", "score in [0, 1]", "quantitative estimate of drug-likeness (Bickerton)"),
    Property("lipinski_violations", "count",
             "rule-of-five violations (MW > 500, logP > 5, HBD > 5, HBA > 10)"),
    Property("pains_alerts", "count", "PAINS substructure alerts (A, B and C)"),
    Property("brenk_alerts", "count", "Brenk unwanted-group alerts"),
    Property("nih_alerts", "count", "NIH MLSMR excluded-function alerts"),
)
#: RDKit FilterCatalog catalogues behind the alert columns
ALERT_CATALOGS = {"pains_alerts": "PAINS", "brenk_alerts": "BRENK", "nih_alerts": "NIH"}


@lru_cache(maxsize=1)
def _catalogs() -> dict[str, Any]:
    from rdkit.Chem import FilterCatalog

    out = {}
    for column, name in ALERT_CATALOGS.items():
        params = FilterCatalog.FilterCatalogParams()
        params.AddCatalog(getattr(FilterCatalog.FilterCatalogParams.FilterCatalogs, name))
        out[column] = FilterCatalog.FilterCatalog(params)
    return out


def _row(mol: Any) -> tuple[list[float], list[str]]:
    from rdkit import Chem
    from rdkit.Chem import QED, Crippen, Descriptors, Lipinski, rdMolDescriptors

    mw = Descriptors.MolWt(mol)
    logp = Crippen.MolLogP(mol)
    hba, hbd = Lipinski.NumHAcceptors(mol), Lipinski.NumHDonors(mol)
    violations = int(mw > 500) + int(logp > 5) + int(hbd > 5) + int(hba > 10)
    values = [mw, logp, rdMolDescriptors.CalcTPSA(mol), hba, hbd,
              rdMolDescriptors.CalcNumRotatableBonds(mol),
              len(Chem.FindMolChiralCenters(mol, includeUnassigned=True,
                                            useLegacyImplementation=False)),
              QED.qed(mol), violations]
    alerts = []
    for column, catalog in _catalogs().items():
        matches = catalog.GetMatches(mol)
        values.append(len(matches))
        alerts += [f"{ALERT_CATALOGS[column]}: {m.GetDescription()}" for m in matches]
    return [float(v) for v in values], alerts


def molecular_properties(molecules: Sequence[Any]) -> tuple[np.ndarray, list[str]]:
    """:data:`PROPERTIES` of RDKit molecules: values [n, len(PROPERTIES)] float64 and, per
    molecule, its matching alerts as one ``"; "``-joined string ("" when none)."""
    values = np.zeros((len(molecules), len(PROPERTIES)), np.float64)
    names = []
    for i, mol in enumerate(molecules):
        row, alerts = _row(mol)
        values[i] = row
        names.append("; ".join(alerts))
    return values, names
