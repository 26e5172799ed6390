"""The ADMET panel loaded: every endpoint scored from one feature computation per molecule.

:meth:`Panel.predict` checks the SMILES once (:func:`~exlm_chem.data.featurize.check_smiles`:
an invalid row keeps its place, with NaN values and its reason), computes the members'
features and the Morgan bits once per molecule, and for each endpoint gives

- ``<endpoint>``: the calibrated probability (classification) or the value in the
  endpoint's unit (regression);
- ``<endpoint>_lower80`` / ``_upper80`` / ``_lower90`` / ``_upper90`` (regression): the
  conformal interval, wider out of the applicability domain;
- ``<endpoint>_similarity``: the Tanimoto similarity of the nearest molecule the endpoint's
  model learned, and ``<endpoint>_in_domain``: whether it reaches the panel's cut-off;
- ``<endpoint>_drug_percentile``: the share of approved drugs (the manifest's reference
  set) whose prediction is at or below this one, in percent;

and beside them the computed properties (:mod:`exlm_chem.admet.properties`) with their own
percentiles, and the structural alerts. :func:`predict` is the one-call form.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from exlm_chem.admet.endpoints import Endpoint

__all__ = ["DOMAIN_FILE", "FORMAT_VERSION", "MANIFEST", "PANEL_ENV", "REFERENCE_FILE", "Panel",
           "default_panel_dir", "is_panel", "predict"]

#: where :func:`default_panel_dir` looks first
PANEL_ENV = "EXLM_CHEM_ADMET"
#: a panel folder's files beside ``endpoints/`` (:mod:`exlm_chem.admet.assemble` writes them)
MANIFEST = "manifest.json"
DOMAIN_FILE = "domain.safetensors"
REFERENCE_FILE = "reference.safetensors"
FORMAT_VERSION = 1
# molecules scored per step: bounds the similarity blocks and the feature rows held at once
_CHUNK = 2048


def default_panel_dir() -> Path:
    """``$EXLM_CHEM_ADMET`` when set, else the panel shipped in a source checkout
    (``<repo>/models/admet``)."""
    env = os.environ.get(PANEL_ENV)
    if env:
        return Path(env).expanduser()
    import exlm_chem

    return Path(exlm_chem.__file__).resolve().parents[1] / "models" / "admet"


def is_panel(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a panel folder (its ``manifest.json`` says so)."""
    manifest = Path(path).expanduser() / MANIFEST
    if not manifest.is_file():
        return False
    try:
        return json.loads(manifest.read_text()).get("format") == "exlm_chem.admet"
    except (OSError, ValueError):
        return False


class _Member(NamedTuple):
    endpoint: Endpoint
    trees: Any  # FrozenTrees
    log_target: bool
    platt: dict[str, float] | None
    conformal: dict[str, dict[str, float]] | None


class Panel(NamedTuple):
    """A loaded panel: its manifest, one member per endpoint, the domain's reference
    fingerprints and the approved drugs' sorted values."""

    path: Path
    manifest: dict[str, Any]
    members: list[_Member]
    fingerprints: Any  # exlm_chem.data.similarity.Fingerprints
    domain_rows: list[np.ndarray]  # per member: its training molecules' fingerprint rows
    reference: dict[str, np.ndarray]  # column -> sorted values of the approved drugs

    @property
    def endpoints(self) -> list[Endpoint]:
        """The endpoints, in the order of the table's columns."""
        return [m.endpoint for m in self.members]

    @classmethod
    def load(cls, path: str | os.PathLike[str] | None = None, reference: bool = True) -> Panel:
        """The panel in ``path`` (default :func:`default_panel_dir`), read without
        unpickling; ``reference=False`` skips the approved drugs (the build's own use)."""
        import safetensors.numpy

        from exlm_chem.data.similarity import Fingerprints
        from exlm_chem.sklearn.persistence import tree_head_file_names, tree_head_from

        root = Path(path).expanduser() if path is not None else default_panel_dir()
        if not (root / MANIFEST).is_file():
            raise FileNotFoundError(
                f"no ADMET panel at {root} (no {MANIFEST}). The panel ships in the repository "
                f"at models/admet; point ${PANEL_ENV} or --panel at a panel folder, or build "
                "one with `exlm-chem admet build`.")
        manifest = json.loads((root / MANIFEST).read_text())
        if (manifest.get("format") != "exlm_chem.admet"
                or manifest.get("format_version") != FORMAT_VERSION):
            raise ValueError(f"{root / MANIFEST} is not an ADMET panel of format "
                             f"{FORMAT_VERSION}")
        members = []
        for entry in manifest["endpoints"]:
            folder = root / entry["folder"]
            trees = json.loads((folder / "endpoint.json").read_text())["trees"]
            files = {name: (folder / name).read_bytes()
                     for name in tree_head_file_names(trees)}
            members.append(_Member(Endpoint(**entry["endpoint"]),
                                   tree_head_from(trees, files, None, None),
                                   entry["log_target"], entry.get("platt"),
                                   entry.get("conformal")))
        domain = safetensors.numpy.load_file(str(root / DOMAIN_FILE))
        rows = [domain[f"rows/{m.endpoint.name}"].astype(np.int64) for m in members]
        drugs = (safetensors.numpy.load_file(str(root / REFERENCE_FILE))
                 if reference else {})
        return cls(root, manifest, members, Fingerprints.from_arrays(domain), rows, drugs)

    @staticmethod
    def percentile_columns(manifest: dict[str, Any]) -> list[str]:
        """The columns given a percentile among approved drugs: each endpoint's value and
        each computed property."""
        from exlm_chem.admet.properties import PROPERTIES

        return [e["endpoint"]["name"] for e in manifest["endpoints"]] + [
            p.name for p in PROPERTIES]

    def _score(self, smiles: list[str], molecules: list[Any]) -> dict[str, np.ndarray]:
        """Every column of valid canonical ``smiles`` (and their RDKit molecules)."""
        from scipy.special import expit

        from exlm_chem.admet.build import member_features
        from exlm_chem.admet.properties import PROPERTIES, molecular_properties
        from exlm_chem.admet.scores import values_of
        from exlm_chem.data.similarity import morgan_bits, nearest_similarity
        from exlm_chem.uncertainty.calibration import logit

        raw = member_features(smiles)  # [n, F]
        similarity = nearest_similarity(morgan_bits(molecules), self.fingerprints,
                                        self.domain_rows)  # [n, E]
        cutoff = self.manifest["domain"]["cutoff"]
        out: dict[str, np.ndarray] = {}
        for e, member in enumerate(self.members):
            name = member.endpoint.name
            score = member.trees.decision_of(None, raw)[:, 0]  # logits or fitted-scale values
            inside = similarity[:, e] >= cutoff
            if member.platt is not None:
                a, b = member.platt["a"], member.platt["b"]
                out[name] = expit(a * logit(expit(score)) + b)
            else:
                out[name] = values_of("regression", score, member.log_target)
                for level in ("80", "90"):
                    half = np.where(inside, member.conformal["in_domain"][f"q{level}"],
                                    member.conformal["out_of_domain"][f"q{level}"])
                    out[f"{name}_lower{level}"] = values_of("regression", score - half,
                                                            member.log_target)
                    out[f"{name}_upper{level}"] = values_of("regression", score + half,
                                                            member.log_target)
            out[f"{name}_similarity"] = similarity[:, e].astype(np.float64)
            out[f"{name}_in_domain"] = inside
        values, alerts = molecular_properties(molecules, _rdkit2d_block(raw))
        for p, prop in enumerate(PROPERTIES):
            out[prop.name] = values[:, p]
        out["alerts"] = np.asarray(alerts, object)
        return out

    def _percentiles(self, columns: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        out = {}
        for name, drugs in self.reference.items():
            if name in columns and len(drugs):
                at_or_below = np.searchsorted(drugs, columns[name], side="right")
                out[f"{name}_drug_percentile"] = 100.0 * at_or_below / len(drugs)
        return out

    def predict(self, smiles: Sequence[Any], progress: bool = False) -> Any:
        """The panel's table of ``smiles``: one row per input, in order.

        Parameters
        ----------
        smiles : sequence of str
            SMILES; a row RDKit cannot read (or an empty one) gives NaN values and its
            reason in ``invalid_reason``.
        progress : bool
            Show a progress bar over chunks of molecules.

        Returns
        -------
        pandas.DataFrame
            ``smiles`` (as given), ``valid``, ``invalid_reason``, ``canonical_smiles``, then per
            endpoint its value and trust columns (module docstring), then the computed
            properties and ``alerts``.
        """
        import pandas as pd
        from tqdm.auto import tqdm

        from exlm_chem.data.featurize import check_smiles
        from exlm_chem.data.rdkit_reasons import as_molecule

        checked = check_smiles(smiles, keep_molecules=True)
        rows = checked.rows
        valid_smiles = checked.valid_smiles
        parts: list[dict[str, np.ndarray]] = []
        for lo in tqdm(range(0, len(rows), _CHUNK), desc="scoring", unit="chunk",
                       disable=not progress):
            chunk = valid_smiles[lo:lo + _CHUNK]
            molecules = [as_molecule(m) for m in checked.valid_molecules[lo:lo + _CHUNK]]
            scored = self._score(chunk, molecules)
            parts.append({**scored, **self._percentiles(scored)})
        table = pd.DataFrame({"smiles": list(smiles), "valid": checked.valid,
                              "invalid_reason": [r or "" for r in checked.reasons],
                              "canonical_smiles": [c if v else None for c, v in
                                                   zip(checked.canonical, checked.valid,
                                                       strict=True)]})
        names = self._column_order()
        columns = {}
        for name in names:
            if parts:
                joined = np.concatenate([p[name] for p in parts])
            else:
                joined = np.zeros(0, object if name == "alerts" else np.float64)
            if name == "alerts":
                full = np.full(len(smiles), "", object)
            elif name.endswith("_in_domain"):
                full = np.zeros(len(smiles), object)
                full[:] = None
            else:
                full = np.full(len(smiles), np.nan)
            full[rows] = joined
            columns[name] = full
        return pd.concat([table, pd.DataFrame(columns)], axis=1)

    def _column_order(self) -> list[str]:
        from exlm_chem.admet.properties import PROPERTIES

        names = []
        for member in self.members:
            name = member.endpoint.name
            names.append(name)
            if member.platt is None:
                names += [f"{name}_{bound}{level}" for level in ("80", "90")
                          for bound in ("lower", "upper")]
            names += [f"{name}_similarity", f"{name}_in_domain"]
            if name in self.reference:
                names.append(f"{name}_drug_percentile")
        for prop in PROPERTIES:
            names.append(prop.name)
            if prop.name in self.reference:
                names.append(f"{prop.name}_drug_percentile")
        return [*names, "alerts"]


def _rdkit2d_block(raw: np.ndarray) -> np.ndarray:
    """The RDKit 2D descriptor columns [n, 217] of the members' features [n, F]."""
    from exlm_chem.admet.build import BUILD_SETTINGS
    from exlm_chem.data.descriptors import feature_names

    start = 0
    for kind in BUILD_SETTINGS["features"]:
        width = len(feature_names(kind))
        if kind == "rdkit2d":
            return raw[:, start:start + width]
        start += width
    raise ValueError("the members' features hold no RDKit 2D descriptors")


_LOADED: dict[Path, Panel] = {}


def predict(smiles: Sequence[Any], panel: str | os.PathLike[str] | None = None,
            progress: bool = False) -> Any:
    """Score ``smiles`` on every endpoint of the panel (default: the shipped one).

    One row per input, in order; an invalid SMILES gives a row of NaN and its reason
    (:meth:`Panel.predict`). The loaded panel is kept for the next call.

    Examples
    --------
    >>> from exlm_chem.admet import predict  # doctest: +SKIP
    >>> table = predict(["CCO", "c1ccc2c(c1)cc[nH]2"])  # doctest: +SKIP
    """
    path = (Path(panel).expanduser() if panel is not None else default_panel_dir()).resolve()
    if path not in _LOADED:
        _LOADED[path] = Panel.load(path)
    return _LOADED[path].predict(smiles, progress=progress)
