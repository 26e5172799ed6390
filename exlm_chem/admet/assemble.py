"""A panel's fitted endpoints put together: calibration, intervals, domain, drug percentiles.

:func:`assemble_panel` reads every endpoint folder the build wrote
(:mod:`exlm_chem.admet.build`) and derives, from the held-out molecules alone (they chose
nothing else):

- classification: a Platt map of the member's logits (:func:`~exlm_chem.uncertainty.
  calibration.fit_calibrator`), so a printed probability means what it says;
- regression: split-conformal half-widths at 80 % and 90 % on the scale the member was
  fitted on (log where logged, so the interval is multiplicative there), apart for
  molecules in and out of the applicability domain where each side has enough of them;
- the applicability domain's cut-off: the nearest-neighbour Tanimoto similarity below which
  the held-out molecules' errors, pooled over endpoints, are at least
  :data:`ERROR_GROWTH` times those of well-covered molecules (:func:`domain_cutoff`);
- the drug reference: every approved drug of the reference set scored by the panel, so a
  prediction's percentile among approved drugs is one lookup.

It writes ``manifest.json`` (everything but arrays), ``domain.safetensors`` (the training
molecules' fingerprints, shared by endpoints) and ``reference.safetensors`` (the approved
drugs' sorted values per column). Nothing is pickled.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from exlm_chem.admet.build import ENDPOINTS_DIR, read_molecules
from exlm_chem.admet.endpoints import ENDPOINTS, Endpoint
from exlm_chem.admet.panel import DOMAIN_FILE, FORMAT_VERSION, MANIFEST, REFERENCE_FILE, Panel

__all__ = ["ERROR_GROWTH", "REFERENCE_SET", "DomainCutoff", "assemble_panel", "domain_cutoff",
           "endpoint_records", "reference_smiles"]

#: a molecule is out of domain where held-out molecules as far from the training set err
#: this many times as much as the well-covered ones (:func:`domain_cutoff`)
ERROR_GROWTH = 1.25
#: nearest-neighbour similarity at which a held-out molecule counts as well covered
WELL_COVERED = 0.5
#: the cut-offs :func:`domain_cutoff` considers
CUTOFF_GRID = (0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5)
#: fewest held-out molecules on a side of the cut-off for a side's own interval
MIN_CONFORMAL = 20
#: the approved drugs percentiles are taken among
REFERENCE_SET = {
    "name": "ClinTox FDA-approved drugs",
    "source": "MoleculeNet ClinTox (Gayvert et al. 2016), rows with FDA_APPROVED = 1",
    "licence": "MoleculeNet's distribution of ClinTox (DeepChem, MIT)",
}


class DomainCutoff(NamedTuple):
    """The applicability domain's cut-off and the evidence it was read from."""

    cutoff: float  # nearest-neighbour Tanimoto similarity; below it: out of domain
    reference_error: float  # pooled normalised error of well-covered held-out molecules
    table: list[dict[str, float]]  # per grid value: molecules below it, their error ratio


def endpoint_records(panel: str | Path) -> list[tuple[Endpoint, dict[str, Any], Path]]:
    """The fitted endpoints of a panel folder: the shipped ones in :data:`ENDPOINTS`'s
    order, then the user's, by name."""
    root = Path(panel) / ENDPOINTS_DIR
    found = {}
    for record_file in sorted(root.glob("*/endpoint.json")):
        record = json.loads(record_file.read_text())
        found[record_file.parent.name] = (Endpoint(**record["endpoint"]), record,
                                          record_file.parent)
    order = [e.name for e in ENDPOINTS if e.name in found]
    order += sorted(set(found) - set(order))
    return [found[name] for name in order]


def _heldout(folder: Path) -> dict[str, np.ndarray]:
    import safetensors.numpy

    return safetensors.numpy.load_file(str(folder / "heldout.safetensors"))


def _normalised_errors(endpoint: Endpoint, heldout: dict[str, np.ndarray],
                       log_target: bool) -> np.ndarray:
    """Each held-out molecule's error, comparable across endpoints: the squared error of
    the probability over the Brier score of the base rate (classification), the absolute
    error over the standard deviation of the labels (regression; on the fitted scale)."""
    from scipy.special import expit

    y = heldout["y"]
    if endpoint.task == "classification":
        base = y.mean() * (1 - y.mean())
        return (expit(heldout["score"]) - y) ** 2 / max(base, 1e-6)
    truth = np.log(y) if log_target else y
    return np.abs(heldout["score"] - truth) / max(truth.std(), 1e-6)


def domain_cutoff(similarity: np.ndarray, errors: np.ndarray,
                  grid: Sequence[float] = CUTOFF_GRID, min_molecules: int = 50) -> DomainCutoff:
    """The largest similarity of ``grid`` below which held-out molecules err at least
    :data:`ERROR_GROWTH` times as much as the well-covered ones (similarity >=
    :data:`WELL_COVERED`), with ``min_molecules`` below it; the grid's smallest value when
    none does."""
    similarity, errors = np.asarray(similarity), np.asarray(errors)
    covered = similarity >= WELL_COVERED
    reference = float(errors[covered].mean()) if covered.any() else float(errors.mean())
    table, cutoff = [], float(min(grid))
    for value in sorted(grid):
        below = similarity < value
        ratio = float(errors[below].mean() / reference) if below.any() else float("nan")
        table.append({"cutoff": value, "n_below": int(below.sum()),
                      "error_ratio": round(ratio, 3)})
        if below.sum() >= min_molecules and ratio >= ERROR_GROWTH:
            cutoff = value
    return DomainCutoff(cutoff, round(reference, 4), table)


def _platt(heldout: dict[str, np.ndarray]) -> dict[str, float]:
    from scipy.special import expit

    from exlm_chem.uncertainty.calibration import fit_calibrator

    calibrator = fit_calibrator("platt", heldout["y"][:, None],
                                expit(heldout["score"])[:, None])
    return calibrator.params[0] or {"a": 1.0, "b": 0.0}


def _conformal(heldout: dict[str, np.ndarray], log_target: bool, cutoff: float
               ) -> dict[str, dict[str, float]]:
    """Half-widths at 80 % and 90 % for molecules in and out of the domain (pooled where a
    side has fewer than :data:`MIN_CONFORMAL` held-out molecules)."""
    from exlm_chem.uncertainty.conformal import conformal_quantile

    truth = np.log(heldout["y"]) if log_target else heldout["y"]
    residuals = np.abs(heldout["score"] - truth)
    inside = heldout["similarity"] >= cutoff
    out = {}
    for side, rows in (("in_domain", inside), ("out_of_domain", ~inside)):
        chosen = residuals[rows] if rows.sum() >= MIN_CONFORMAL else residuals
        scores = np.sort(chosen)
        out[side] = {"q80": conformal_quantile(scores, 0.2), "q90": conformal_quantile(scores, 0.1),
                     "n": len(scores)}
    return out


def reference_smiles() -> tuple[list[str], str]:
    """The approved drugs of :data:`REFERENCE_SET` (canonical, distinct) and the source
    file's sha256."""
    from exlm_chem.data.moleculenet import load_moleculenet
    from exlm_chem.data.rdkit_reasons import canonical_or_failure

    data = load_moleculenet("clintox", download=False)
    approved = data.labels[:, data.task_names.index("FDA_APPROVED")] == 1
    kept = {}
    for s in np.asarray(data.smiles, object)[approved]:
        canonical, _ = canonical_or_failure(s)
        if canonical is not None:
            kept.setdefault(canonical, None)
    return list(kept), data.sha256


def assemble_panel(panel: str | Path, reference: Sequence[str] | None = None,
                   reference_sha256: str = "") -> dict[str, Any]:
    """Write the panel's ``manifest.json``, ``domain.safetensors`` and
    ``reference.safetensors`` from its endpoint folders (module docstring); returns the
    manifest. ``reference``: the approved drugs' SMILES (default :func:`reference_smiles`).
    """
    import safetensors.numpy

    from exlm_chem.data.similarity import morgan_bits
    from exlm_chem.files.safe_write import atomic_path, write_text_atomic
    from exlm_chem.provenance import git_commit

    panel = Path(panel)
    records = endpoint_records(panel)
    if not records:
        raise ValueError(f"{panel} holds no fitted endpoint ({ENDPOINTS_DIR}/<name>/endpoint.json)")
    heldouts = [_heldout(folder) for _, _, folder in records]
    similarity = np.concatenate([h["similarity"] for h in heldouts])
    errors = np.concatenate([_normalised_errors(e, h, r["log_target"])
                             for (e, r, _), h in zip(records, heldouts, strict=True)])
    cut = domain_cutoff(similarity, errors)
    # the training molecules of every endpoint, each molecule once
    union: dict[str, int] = {}
    rows = {}
    for endpoint, _, folder in records:
        smiles = read_molecules(folder)
        rows[endpoint.name] = np.array([union.setdefault(s, len(union)) for s in smiles],
                                       np.int32)
    fingerprints = morgan_bits(list(union))
    with atomic_path(panel / DOMAIN_FILE) as tmp:
        tmp.write_bytes(safetensors.numpy.save(
            {**fingerprints.arrays(), **{f"rows/{name}": r for name, r in rows.items()}}))
    entries = []
    for (endpoint, record, folder), heldout in zip(records, heldouts, strict=True):
        entry = {"endpoint": endpoint._asdict(), "folder": folder.relative_to(panel).as_posix(),
                 "trees": record["trees"], "log_target": record["log_target"],
                 "n_molecules": record["n_molecules"], "data_sha256": record["key"]["data_sha256"],
                 "heldout_figures": record["heldout_figures"], "cpu_s": record["cpu_s"],
                 "commit": record["commit"], "machine": record["machine"]}
        if endpoint.task == "classification":
            entry["platt"] = _platt(heldout)
        else:
            entry["conformal"] = _conformal(heldout, record["log_target"], cut.cutoff)
        entries.append(entry)
    manifest = {"format": "exlm_chem.admet", "format_version": FORMAT_VERSION,
                "commit": git_commit(), "endpoints": entries,
                "domain": {"fingerprint": "Morgan radius 2, 2048 bits", "cutoff": cut.cutoff,
                           "error_growth": ERROR_GROWTH, "well_covered": WELL_COVERED,
                           "reference_error": cut.reference_error, "table": cut.table,
                           "n_molecules": len(union)},
                "reference_set": {**REFERENCE_SET}}
    write_text_atomic(panel / MANIFEST, json.dumps(manifest, indent=1) + "\n")
    # the approved drugs scored by the panel just written, columns sorted
    if reference is None:
        reference, reference_sha256 = reference_smiles()
    table = Panel.load(panel, reference=False).predict(list(reference), progress=False)
    columns = {name: np.sort(table[name].to_numpy(np.float64)[np.isfinite(table[name])])
               .astype(np.float32) for name in Panel.percentile_columns(manifest)}
    with atomic_path(panel / REFERENCE_FILE) as tmp:
        tmp.write_bytes(safetensors.numpy.save(columns))
    manifest["reference_set"].update({"n_molecules": len(reference),
                                      "sha256": reference_sha256})
    write_text_atomic(panel / MANIFEST, json.dumps(manifest, indent=1) + "\n")
    return manifest
