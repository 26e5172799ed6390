"""A panel's fitted endpoints put together: calibration, intervals, domain, drug percentiles.

:func:`assemble_panel` reads every endpoint folder the build wrote
(:mod:`exlm_chem.admet.build`) and derives, from the held-out molecules alone (they chose
nothing else):

- classification: a Platt map of the member's logits (:func:`~exlm_chem.uncertainty.
  calibration.fit_calibrator`), so a printed probability means what it says;
- regression: split-conformal half-widths at 80 % and 90 % on the scale the member was
  fitted on (log where logged, so the interval is multiplicative there), apart for
  molecules in and out of the applicability domain where each side has enough of them;
- the applicability domain's cut-off: the nearest-neighbour Tanimoto similarity that best
  separates the held-out molecules' larger errors (below it) from the smaller ones,
  pooled over endpoints (:func:`domain_cutoff`);
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

__all__ = ["CUTOFF_GRID", "MIN_SHARE", "REFERENCE_SET", "DomainCutoff", "assemble_panel",
           "domain_cutoff", "endpoint_records", "reference_smiles"]

#: the cut-offs :func:`domain_cutoff` considers
CUTOFF_GRID = (0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7)
#: fewest held-out molecules on each side of a cut-off, as a share of them all
MIN_SHARE = 0.1
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
    error_ratio: float  # held-out molecules' mean error below the cut-off over above it
    table: list[dict[str, float]]  # per grid value: share of molecules below, error ratio


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
    """Each held-out molecule's error over the mean of its endpoint's (so endpoints pool):
    the squared error of the probability (classification), the absolute error on the
    scale fitted (regression)."""
    from scipy.special import expit

    y = heldout["y"]
    if endpoint.task == "classification":
        errors = (expit(heldout["score"]) - y) ** 2
    else:
        errors = np.abs(heldout["score"] - (np.log(y) if log_target else y))
    return errors / max(float(errors.mean()), 1e-12)


def domain_cutoff(similarity: np.ndarray, errors: np.ndarray,
                  grid: Sequence[float] = CUTOFF_GRID, min_share: float = MIN_SHARE
                  ) -> DomainCutoff:
    """The similarity of ``grid`` that best separates larger errors from smaller ones: the
    one where held-out molecules below it err the most times as much as those at or above
    it, with at least ``min_share`` of the molecules on each side. ``errors`` are each
    molecule's normalised error over its endpoint's mean (:func:`_normalised_errors`), so
    that endpoints of different difficulty pool."""
    similarity, errors = np.asarray(similarity), np.asarray(errors)
    table, best = [], (-np.inf, float(min(grid)))
    for value in sorted(grid):
        below = similarity < value
        share = below.mean()
        ratio = (float(errors[below].mean() / errors[~below].mean())
                 if below.any() and (~below).any() else float("nan"))
        table.append({"cutoff": value, "share_below": round(float(share), 3),
                      "error_ratio": round(ratio, 3)})
        if min_share <= share <= 1 - min_share and ratio > best[0]:
            best = (ratio, value)
    return DomainCutoff(best[1], round(best[0], 3), table)


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
        # the trees' settings stay in the endpoint's own record (the loader reads them there)
        entry = {"endpoint": endpoint._asdict(), "folder": folder.relative_to(panel).as_posix(),
                 "log_target": record["log_target"],
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
                           "error_ratio": cut.error_ratio, "min_share": MIN_SHARE,
                           "table": cut.table, "n_molecules": len(union),
                           "n_heldout": len(similarity)},
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
