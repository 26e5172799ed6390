"""Fitting the ADMET panel, one endpoint at a time, resumable.

Each endpoint's labelled molecules (:func:`~exlm_chem.admet.endpoints.endpoint_data`, or a
user's file) are cut three ways:

1. an out-of-distribution part: whole similarity clusters, the least like the rest first
   (:func:`~exlm_chem.data.similarity.cluster_held_out`, a tenth of the molecules);
2. a scaffold part: whole Bemis-Murcko scaffolds of what is left, as the estimators hold
   out (:func:`~exlm_chem.data.splits.held_out_split`, another tenth);
3. the rest, which the member is fitted on.

The member scores both held-out parts; those scores choose nothing. They calibrate the
classifiers' probabilities, give the regressors' conformal intervals, set the domain
cut-off (:mod:`exlm_chem.admet.assemble`) and are the figures of the model card. The member
is then fitted again on every molecule: that is the shipped model.

The member is the package's tree head at its defaults (MapLight's CatBoost recipe on Morgan
and Avalon counts, ErG and RDKit 2D: :class:`~exlm_chem.model.frozen_trees.FrozenTrees`;
the regressor's mean of an MAE and an RMSE model, on log(y) where the regressor's
``target_transform="auto"`` logs). One feature computation serves every endpoint at
prediction time.

An endpoint's folder holds ``trees.safetensors`` (the kept trees), ``heldout.safetensors``
(the held-out molecules' labels, scores and nearest-neighbour similarity) and
``endpoint.json``, written last: an endpoint whose ``endpoint.json`` names the same data
and settings is not fitted again.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from exlm_chem.admet.endpoints import Endpoint, EndpointData

__all__ = [
    "BUILD_SETTINGS",
    "ENDPOINTS_DIR",
    "MOLECULES_FILE",
    "FitParts",
    "build_endpoint",
    "build_endpoints",
    "endpoint_done",
    "fit_parts",
    "member_features",
    "read_molecules",
    "write_molecules",
]

logger = logging.getLogger(__name__)

#: the folder of a panel that holds one folder per endpoint
ENDPOINTS_DIR = "endpoints"
#: what every endpoint is fitted with; a change refits every endpoint on the next build
BUILD_SETTINGS: dict[str, Any] = {
    "member": "tree head (MapLight's CatBoost recipe)",
    "features": ["morgan1024", "avalon", "erg", "rdkit2d"],
    "target_transform": "auto",
    "cluster_fraction": 0.1,  # the out-of-distribution part's share of the molecules
    "cluster_threshold": 0.4,  # Tanimoto similarity of neighbours in a cluster
    "scaffold_fraction": 0.1,  # the scaffold part's share of the molecules
    "seed": 0,
}
PART_SCAFFOLD, PART_CLUSTER = 0, 1
#: an endpoint folder's training molecules (:func:`write_molecules`)
MOLECULES_FILE = "molecules.txt.gz"


class FitParts(NamedTuple):
    """Rows of an endpoint's molecules: fitted on, and the two held-out parts."""

    fit_rows: np.ndarray  # [n_fit] int64
    scaffold_rows: np.ndarray  # [n_scaffold] int64
    cluster_rows: np.ndarray  # [n_cluster] int64


def fit_parts(smiles: Sequence[str], settings: dict[str, Any] = BUILD_SETTINGS) -> FitParts:
    """The out-of-distribution part, then the scaffold part of what is left, then the rest
    (module docstring)."""
    from exlm_chem.data.similarity import cluster_held_out, morgan_bits
    from exlm_chem.data.splits import held_out_split

    fingerprints = morgan_bits(smiles)
    cluster = cluster_held_out(fingerprints, settings["cluster_fraction"],
                               settings["cluster_threshold"])
    rest = cluster.train_rows
    share = settings["scaffold_fraction"] / (1 - len(cluster.held_rows) / len(smiles))
    scaffold = held_out_split([smiles[i] for i in rest], settings["seed"], share)
    return FitParts(rest[scaffold.train_rows], rest[scaffold.valid_rows], cluster.held_rows)


def member_features(smiles: Sequence[str]) -> np.ndarray:
    """The raw features [n, F] every member reads (``BUILD_SETTINGS["features"]``) of valid
    canonical SMILES, computed once per molecule per process."""
    from exlm_chem.data.descriptors import molecule_features

    return molecule_features(BUILD_SETTINGS["features"], list(smiles), n_jobs=1)


def _fit_member(raw: np.ndarray, y: np.ndarray, rows: np.ndarray, task: str,
                log_target: bool, seed: int) -> Any:
    from exlm_chem.model.frozen_trees import FrozenTrees

    labels = np.log(y) if log_target else y
    return FrozenTrees.fit(None, None, raw, labels[:, None], rows, task, seed,
                           kinds=BUILD_SETTINGS["features"])


def _settings_key(data: EndpointData, endpoint: Endpoint) -> dict[str, Any]:
    return {"settings": BUILD_SETTINGS, "data_sha256": data.sha256, "n": len(data.smiles),
            "task": endpoint.task}


def endpoint_done(folder: Path, data: EndpointData, endpoint: Endpoint) -> bool:
    """Whether ``folder`` holds this endpoint fitted on these data with these settings."""
    record = folder / "endpoint.json"
    if not record.is_file():
        return False
    saved = json.loads(record.read_text())
    return saved.get("key") == json.loads(json.dumps(_settings_key(data, endpoint)))


def build_endpoint(endpoint: Endpoint, data: EndpointData, folder: str | Path) -> dict[str, Any]:
    """Fit one endpoint (module docstring) into ``folder``; returns its record.

    Parameters
    ----------
    endpoint : Endpoint
    data : EndpointData
        Its labelled molecules, canonical and distinct.
    folder : path
        Written file by file, ``endpoint.json`` last.
    """
    import safetensors.numpy

    from exlm_chem.admet.scores import part_figures
    from exlm_chem.data.similarity import morgan_bits, nearest_similarity
    from exlm_chem.files.safe_write import atomic_path, write_text_atomic
    from exlm_chem.provenance import git_commit, machine
    from exlm_chem.sklearn.persistence import tree_head_files, tree_head_metadata
    from exlm_chem.sklearn.target_transform import choose_log

    folder = Path(folder)
    smiles, y = data.smiles, data.y
    if endpoint.task == "classification" and len(np.unique(y)) < 2:
        raise ValueError(f"endpoint {endpoint.name!r}: its labels hold one class")
    started, wall = time.process_time(), time.time()
    log_target = (endpoint.task == "regression"
                  and bool(choose_log(y[:, None], BUILD_SETTINGS["target_transform"],
                                      [endpoint.name])[0]))
    parts = fit_parts(smiles)
    raw = member_features(smiles)  # [n, F]
    seed = BUILD_SETTINGS["seed"]
    held = np.concatenate([parts.scaffold_rows, parts.cluster_rows])
    member = _fit_member(raw, y, parts.fit_rows, endpoint.task, log_target, seed)
    scores = member.decision_of(None, raw[held])[:, 0]  # logits or values (log where logged)
    fingerprints = morgan_bits(smiles)
    similarity = nearest_similarity(fingerprints.take(held), fingerprints.take(parts.fit_rows))
    kept = _fit_member(raw, y, np.arange(len(smiles)), endpoint.task, log_target, seed)
    part = np.concatenate([np.full(len(parts.scaffold_rows), PART_SCAFFOLD),
                           np.full(len(parts.cluster_rows), PART_CLUSTER)]).astype(np.int8)
    heldout = {"part": part, "y": y[held].astype(np.float64),
               "score": scores.astype(np.float64), "similarity": similarity.astype(np.float32)}
    folder.mkdir(parents=True, exist_ok=True)
    for name, payload in tree_head_files(kept).items():
        with atomic_path(folder / name) as tmp:
            tmp.write_bytes(payload)
    with atomic_path(folder / "heldout.safetensors") as tmp:
        tmp.write_bytes(safetensors.numpy.save(heldout))
    write_molecules(folder, smiles)
    record = {
        "endpoint": endpoint._asdict(),
        "key": _settings_key(data, endpoint),
        "trees": tree_head_metadata(kept),
        "log_target": log_target,
        "n_molecules": len(smiles),
        "n_fit": len(parts.fit_rows),
        "n_scaffold": len(parts.scaffold_rows),
        "n_cluster": len(parts.cluster_rows),
        "heldout_figures": part_figures(endpoint.task, heldout, log_target),
        "cpu_s": round(time.process_time() - started, 1),
        "wall_s": round(time.time() - wall, 1),
        "commit": git_commit(),
        "machine": machine(),
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    write_text_atomic(folder / "endpoint.json", json.dumps(record, indent=1) + "\n")
    logger.info("endpoint %s: %d molecules, %.0f CPU-s", endpoint.name, len(smiles),
                record["cpu_s"])
    return record


def write_molecules(folder: Path, smiles: Sequence[str]) -> None:
    """The canonical SMILES an endpoint's kept trees learned, one a line, gzipped: the
    applicability domain's reference set (:mod:`exlm_chem.admet.assemble`)."""
    import gzip

    from exlm_chem.files.safe_write import atomic_path

    with atomic_path(Path(folder) / MOLECULES_FILE) as tmp:
        # mtime=0: the same molecules give the same bytes
        tmp.write_bytes(gzip.compress(("\n".join(smiles) + "\n").encode(), mtime=0))


def read_molecules(folder: Path) -> list[str]:
    """The SMILES :func:`write_molecules` wrote."""
    import gzip

    return gzip.decompress((Path(folder) / MOLECULES_FILE).read_bytes()).decode().split()


def build_endpoints(out: str | Path, endpoints: Sequence[Endpoint],
                    progress: bool = True) -> list[dict[str, Any]]:
    """Fit every endpoint of ``endpoints`` not fitted yet into ``out/endpoints/<name>``
    (:func:`build_endpoint`), in order, with a progress bar; returns their records."""
    from tqdm.auto import tqdm

    from exlm_chem.admet.endpoints import endpoint_data

    records = []
    bar = tqdm(endpoints, desc="fitting endpoints", unit="endpoint", disable=not progress)
    for endpoint in bar:
        bar.set_postfix_str(endpoint.name)
        folder = Path(out) / ENDPOINTS_DIR / endpoint.name
        data = endpoint_data(endpoint)
        if endpoint_done(folder, data, endpoint):
            records.append(json.loads((folder / "endpoint.json").read_text()))
            continue
        records.append(build_endpoint(endpoint, data, folder))
    return records
