"""``ExLMFeaturizer``: pre-trained ExLM embeddings as a DeepChem featurizer.

DeepChem featurizes through ``dc.feat.MolecularFeaturizer`` (``featurizer(smiles)``,
``dc.data.CSVLoader(..., featurizer=...)``). DeepChem's own ``featurize`` calls
``_featurize`` one molecule at a time; this one overrides ``featurize`` so that a whole
shard goes through :meth:`exlm_chem.model.molecule_model.MoleculeModel.embed`,
length-bucketed batches of ``batch_size`` molecules per forward pass, with the same rows
as :func:`exlm_chem.embed`.

Failures follow DeepChem's convention: a molecule that cannot be featurized gets an empty
array (``CSVLoader`` then leaves it out through its ``valid_inds``), and a warning names
each one and the reason.

This module imports deepchem; ``import exlm_chem`` does not import this module.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable
from typing import Any

import numpy as np
from deepchem.feat import MolecularFeaturizer

from exlm_chem.data.featurize import smiles_sequence
from exlm_chem.embedding import DEFAULT_BATCH_SIZE, cached_model
from exlm_chem.model.molecule_model import MoleculeModel
from exlm_chem.model.pooling import DEFAULT_POOLING

__all__ = ["ExLMFeaturizer"]

_SHOWN = 10  # failed datapoints listed in a warning


class ExLMFeaturizer(MolecularFeaturizer):
    """Pooled ExLM encoder states of each molecule, a float32 vector of width d.

    Parameters
    ----------
    model : str or path-like, default="default"
        Checkpoint directory, or ``"default"`` (``$EXLM_CHEM_MODEL``, then the shipped
        ``models/exlm-small``). Loaded once per process and device.
    pooling : {"bos", "mean"}, default="mean"
        As in :func:`exlm_chem.embed`.
    batch_size : int, default=128
        Molecules per forward pass.
    device : str, default="auto"
        ``"auto"`` (CUDA when available), ``"cpu"``, ``"cuda:0"``, ...

    Examples
    --------
    >>> import deepchem as dc  # doctest: +SKIP
    >>> loader = dc.data.CSVLoader(tasks=["p_np"], feature_field="smiles",
    ...                            featurizer=ExLMFeaturizer())  # doctest: +SKIP
    >>> dataset = loader.create_dataset("bbbp.csv")  # doctest: +SKIP
    """

    def __init__(self, model: str | os.PathLike[str] = "default", pooling: str = DEFAULT_POOLING,
                 batch_size: int = DEFAULT_BATCH_SIZE, device: str = "auto") -> None:
        super().__init__()
        self.model = model
        self.pooling = pooling
        self.batch_size = batch_size
        self.device = device

    def featurize(self, datapoints: Any, log_every_n: int = 1000, **kwargs: Any) -> np.ndarray:
        """Embed molecules in batches; one result per datapoint, in order.

        Parameters
        ----------
        datapoints : str, rdkit Mol, or iterable of them
            SMILES strings or RDKit molecules.
        log_every_n : int
            Unused (kept for DeepChem's signature): progress is per batch, not per molecule.
        **kwargs
            Unused (DeepChem passes per-datapoint keyword arguments to some featurizers).

        Returns
        -------
        np.ndarray
            float32 ``[N, d]`` when every datapoint was featurized; otherwise an object
            array of N entries where each failed datapoint is an empty array (DeepChem's
            convention) and every other one its ``[d]`` vector.
        """
        points = _as_list(datapoints)
        smiles = [_smiles_of(p) for p in points]
        chunk = self._model().embed(smiles, self.batch_size)
        if chunk.valid.all():
            return chunk.values  # [N, d]
        failed = np.flatnonzero(~chunk.valid)
        shown = "; ".join(f"datapoint {i} {smiles[i]!r:.80}: {chunk.reasons[i]}"
                          for i in failed[:_SHOWN])
        more = f"; and {failed.size - _SHOWN} more" if failed.size > _SHOWN else ""
        warnings.warn(f"ExLMFeaturizer: {failed.size} of {len(points)} datapoints could not "
                      f"be featurized and get an empty array (CSVLoader leaves them out): "
                      f"{shown}{more}", UserWarning, stacklevel=2)
        out = np.empty(len(points), dtype=object)
        for i, (row, ok) in enumerate(zip(chunk.values, chunk.valid, strict=True)):
            out[i] = row if ok else np.array([])
        return out

    def _featurize(self, datapoint: Any, **kwargs: Any) -> np.ndarray:
        """One molecule's ``[d]`` vector; raises ValueError naming the reason it fails."""
        smiles = _smiles_of(datapoint)
        chunk = self._model().embed([smiles], self.batch_size)
        if not chunk.valid[0]:
            raise ValueError(f"cannot featurize {smiles!r:.80}: {chunk.reasons[0]}")
        return chunk.values[0]

    def _model(self) -> MoleculeModel:
        return cached_model(self.model, self.device).view(self.pooling)


def _as_list(datapoints: Any) -> list[Any]:
    """DeepChem's rule: one SMILES or Mol is a batch of one (as every DeepChem featurizer
    takes it, so this one is never the odd one out); anything else is iterated, except
    ``bytes``, refused as everywhere in exlm_chem (:func:`smiles_sequence`)."""
    from rdkit import Chem

    if isinstance(datapoints, str | Chem.Mol):
        return [datapoints]
    smiles_sequence(datapoints, "datapoints")  # bytes would be read as integers
    if not isinstance(datapoints, Iterable):
        raise TypeError(f"datapoints must be SMILES or RDKit molecules, got "
                        f"{type(datapoints).__name__}")
    return list(datapoints)


def _smiles_of(datapoint: Any) -> Any:
    """A Mol as its SMILES; anything else unchanged (check_smiles names what is wrong)."""
    from rdkit import Chem

    if isinstance(datapoint, Chem.Mol):
        return Chem.MolToSmiles(datapoint)
    return datapoint
