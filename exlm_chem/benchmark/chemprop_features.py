"""chemprop as installed: its version, and the RDKit descriptors its featurizer gives.

With ``features="rdkit2d"`` (:func:`~exlm_chem.benchmark.chemprop_method.chemprop_method`)
every molecule also gets chemprop's RDKit descriptor featurizer as extra descriptors
(``x_d``) beside the learned fingerprint, as ``chemprop train --molecule-featurizers``
does: ``v1_rdkit_2d_normalized`` (chemprop v1's ``rdkit_2d_normalized`` recipe, through
descriptastorus) when descriptastorus imports, else ``rdkit_2d``; a value it cannot
compute is read as 0 (chemprop's own rule). They are computed once per task and kept in
the benchmark's feature cache (:func:`exlm_chem.benchmark.features.cached_task_values`),
keyed by the chemprop, RDKit and descriptastorus versions.
"""

from __future__ import annotations

import os

import numpy as np

from exlm_chem.benchmark.tasks import TaskData

__all__ = ["chemprop_version", "descriptor_featurizer", "require_chemprop", "task_descriptors"]


def require_chemprop() -> None:
    """Raise ImportError with the install line when chemprop v2 is missing."""
    try:
        import chemprop  # noqa: F401
    except ImportError as error:
        raise ImportError("the chemprop method needs chemprop v2: "
                          "pip install 'exlm_chem[baselines]' (or pip install chemprop)") from error


def chemprop_version() -> str:
    """The installed chemprop's version (ImportError with the install line without it)."""
    require_chemprop()
    import chemprop

    return str(chemprop.__version__)


def descriptor_featurizer() -> tuple[str, object]:
    """(registry name, featurizer) of chemprop's RDKit 2D descriptors: the v1 normalised
    set when descriptastorus is installed, else RDKit's plain descriptor list."""
    from chemprop.featurizers import molecule

    try:
        import descriptastorus  # noqa: F401
    except ImportError:
        return "rdkit_2d", molecule.RDKit2DFeaturizer()
    return "v1_rdkit_2d_normalized", molecule.V1RDKit2DNormalizedFeaturizer()


def task_descriptors(data: TaskData,
                     cache_dir: str | os.PathLike[str] | None) -> np.ndarray:
    """[N, D] descriptors of ``data.smiles`` from chemprop's featurizer, through the
    benchmark's feature cache: MUV's cost about 80 CPU-minutes, so every seed and every
    resumed run of a cell reads them from ``cache_dir`` once one run has computed them."""
    from exlm_chem.benchmark.features import cached_task_values, task_key
    from exlm_chem.data.descriptors import rdkit_version

    name, _ = descriptor_featurizer()
    key = task_key(data, f"chemprop_{name}", chemprop_version=chemprop_version(),
                   rdkit_version=rdkit_version(), descriptastorus_version=_descriptastorus())
    return cached_task_values(data, key, lambda: _descriptors(data.smiles), cache_dir)


def _descriptastorus() -> str:
    from importlib import metadata

    try:
        return metadata.version("descriptastorus")
    except metadata.PackageNotFoundError:
        return "none"


def _descriptors(smiles: list[str]) -> np.ndarray:
    """[N, D] float32 descriptors from chemprop's featurizer; non-finite values -> 0."""
    from rdkit import Chem, rdBase

    _, featurizer = descriptor_featurizer()
    with rdBase.BlockLogs():
        rows = [np.asarray(featurizer(Chem.MolFromSmiles(t)), dtype=np.float64) for t in smiles]
    values = np.stack(rows) if rows else np.zeros((0, 0))
    return np.nan_to_num(values, nan=0.0, posinf=0.0, neginf=0.0).astype(np.float32)
