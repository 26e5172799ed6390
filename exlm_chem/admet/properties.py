"""The physico-chemical columns and structural alerts printed beside the panel's endpoints.

Computed by RDKit, not predicted (those the members' RDKit 2D descriptors hold are read from
them, :data:`FROM_RDKIT2D`): molecular weight, Crippen logP, TPSA, hydrogen-bond
acceptors and donors (Lipinski's counts), rotatable bonds, stereo centres, QED, Lipinski's
rule-of-five violations, and the number of PAINS, Brenk and NIH alerts (RDKit's
FilterCatalog) with the names of those that match.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np

__all__ = ["ALERT_CATALOGS", "FROM_RDKIT2D", "PROPERTIES", "Property", "molecular_properties"]


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
    Property("hba", "count", "hydrogen-bond acceptors (RDKit's Lipinski.NumHAcceptors)"),
    Property("hbd", "count", "hydrogen-bond donors (RDKit's Lipinski.NumHDonors)"),
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


#: columns the members' RDKit 2D descriptors already hold (``data.descriptors``, kind
#: ``"rdkit2d"``: the same RDKit functions), read from there instead of computed again
FROM_RDKIT2D = {"molecular_weight": "MolWt", "logp": "MolLogP", "tpsa": "TPSA",
                "hba": "NumHAcceptors", "hbd": "NumHDonors",
                "rotatable_bonds": "NumRotatableBonds", "qed": "qed"}


def _stereo_and_alerts(mol: Any) -> tuple[list[float], list[str]]:
    """Stereo centres and the alert counts of one molecule, and the names of its alerts."""
    from rdkit import Chem

    values = [float(len(Chem.FindMolChiralCenters(mol, includeUnassigned=True,
                                                  useLegacyImplementation=False)))]
    alerts = []
    for column, catalog in _catalogs().items():
        matches = catalog.GetMatches(mol)
        values.append(float(len(matches)))
        alerts += [f"{ALERT_CATALOGS[column]}: {m.GetDescription()}" for m in matches]
    return values, alerts


def molecular_properties(molecules: Sequence[Any], rdkit2d: np.ndarray
                         ) -> tuple[np.ndarray, list[str]]:
    """:data:`PROPERTIES` of RDKit molecules: values [n, len(PROPERTIES)] float64 and, per
    molecule, its matching alerts as one ``"; "``-joined string ("" when none).

    ``rdkit2d`` [n, 217]: the molecules' RDKit 2D descriptors as the members read them
    (:func:`~exlm_chem.data.descriptors.rdkit2d_names`' order); :data:`FROM_RDKIT2D` comes
    from there."""
    from exlm_chem.data.descriptors import rdkit2d_names

    names = rdkit2d_names()
    column = {p.name: i for i, p in enumerate(PROPERTIES)}
    values = np.zeros((len(molecules), len(PROPERTIES)), np.float64)
    for prop, descriptor in FROM_RDKIT2D.items():
        values[:, column[prop]] = rdkit2d[:, names.index(descriptor)]
    mw, logp = values[:, column["molecular_weight"]], values[:, column["logp"]]
    hba, hbd = values[:, column["hba"]], values[:, column["hbd"]]
    values[:, column["lipinski_violations"]] = ((mw > 500).astype(float) + (logp > 5)
                                                + (hbd > 5) + (hba > 10))
    rest = [column["stereo_centres"], *(column[c] for c in ALERT_CATALOGS)]
    names_out = []
    for i, mol in enumerate(molecules):
        computed, alerts = _stereo_and_alerts(mol)
        values[i, rest] = computed
        names_out.append("; ".join(alerts))
    return values, names_out
