"""``ExLMEmbedder``: a pre-trained ExLM encoder as a stateless scikit-learn transformer.

It puts :func:`exlm_chem.embed` into a ``Pipeline`` or ``ColumnTransformer``: one row of
pooled encoder states per SMILES, NaN rows for invalid SMILES (or an error naming them).
The estimator holds only its parameters; the weights live in a per-process cache
(:func:`exlm_chem.embedding.cached_model`), so cloning, pickling and grid searches copy a
checkpoint name, never the model, and a process loads each checkpoint once.

Examples
--------
>>> from sklearn.pipeline import make_pipeline  # doctest: +SKIP
>>> from sklearn.linear_model import LogisticRegression  # doctest: +SKIP
>>> make_pipeline(ExLMEmbedder(), LogisticRegression()).fit(smiles, y)  # doctest: +SKIP
"""

from __future__ import annotations

import os
from typing import Any, Self

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin

from exlm_chem.embedding import DEFAULT_BATCH_SIZE, cached_model
from exlm_chem.model.molecule_model import ON_INVALID, MoleculeModel
from exlm_chem.model.pooling import DEFAULT_POOLING, Pooling
from exlm_chem.sklearn.inputs import as_smiles_list

__all__ = ["ExLMEmbedder"]

FEATURE_PREFIX = "emb_"  # the column names of `exlm-chem embed` and `screen --embed`


class ExLMEmbedder(TransformerMixin, BaseEstimator):
    """Embed SMILES with a pre-trained ExLM encoder; one output row per input row.

    Stateless: :meth:`fit` learns nothing from the data (it checks the parameters and
    reads the embedding width from the checkpoint), and :meth:`transform` also works
    unfitted.

    Parameters
    ----------
    model : str or path-like, default="default"
        Checkpoint directory, or ``"default"`` (``$EXLM_CHEM_MODEL``, then the shipped
        ``models/exlm-small``), as in :func:`exlm_chem.embed`. Only this name is stored
        and pickled; the weights are loaded once per process and device.
    pooling : {"bos", "mean"}, default="mean"
        ``mean``: the mean over all real (expanded) tokens; ``bos``: the first BOS state
        (the paper's fine-tuning pooling).
    batch_size : int, default=128
        Molecules per forward pass.
    device : str, default="auto"
        ``"auto"`` (CUDA when available), ``"cpu"``, ``"cuda:0"``, ...
    on_invalid : {"nan", "raise"}, default="nan"
        ``"nan"``: an invalid SMILES gets a row of NaN (drop or impute it downstream);
        ``"raise"``: :meth:`transform` raises one
        :class:`~exlm_chem.errors.InvalidSmilesError` naming every invalid row and why.

    Attributes
    ----------
    n_features_in_ : int
        1: the SMILES column.
    feature_names_in_ : ndarray of str
        The column's name, when ``fit`` got a DataFrame with a string column name.
    embedding_dim_ : int
        Width d of the embeddings (the checkpoint's ``d_model``).
    """

    def __init__(
        self,
        model: str | os.PathLike[str] = "default",
        *,
        pooling: str = DEFAULT_POOLING,
        batch_size: int = DEFAULT_BATCH_SIZE,
        device: str = "auto",
        on_invalid: str = "nan",
    ) -> None:
        self.model = model
        self.pooling = pooling
        self.batch_size = batch_size
        self.device = device
        self.on_invalid = on_invalid

    def _check_params(self) -> None:
        problems = []
        if not isinstance(self.model, str | os.PathLike):
            # an in-memory model would be copied by every clone and pickle
            problems.append(f"model must be a checkpoint directory or 'default', got "
                            f"{type(self.model).__name__}")
        try:
            Pooling.of(self.pooling)
        except ValueError as err:
            problems.append(str(err))
        bs = self.batch_size
        if not isinstance(bs, int | np.integer) or isinstance(bs, bool) or bs < 1:
            problems.append(f"batch_size must be a positive integer, got {bs!r}")
        if self.on_invalid not in ON_INVALID:
            problems.append(f"on_invalid must be one of {ON_INVALID}, got {self.on_invalid!r}")
        if problems:  # every problem at once, not one per attempt
            raise ValueError("; ".join(problems))

    def _model(self) -> MoleculeModel:
        return cached_model(self.model, self.device).view(self.pooling)

    def fit(self, X: Any, y: Any = None) -> Self:
        """Check the parameters and X's shape and load the checkpoint; learns nothing.

        Parameters
        ----------
        X : sequence of str, 1-D array, Series or one-column DataFrame / 2-D array
            SMILES (not checked for validity here: that is :meth:`transform`'s job).
        y : ignored

        Returns
        -------
        ExLMEmbedder
            ``self``.
        """
        self._check_params()
        as_smiles_list(X)  # the shape check: one column of SMILES
        self.n_features_in_ = 1
        columns = getattr(X, "columns", None)
        if columns is not None and isinstance(columns[0], str):
            self.feature_names_in_ = np.asarray(columns, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self.embedding_dim_ = self._model().dim
        return self

    def transform(self, X: Any) -> np.ndarray:
        """Embed each SMILES of X; row i of the output belongs to row i of X.

        Parameters
        ----------
        X : sequence of str, 1-D array, Series or one-column DataFrame / 2-D array
            SMILES. A row is invalid when it is not a non-empty string RDKit can parse
            (at most 2000 characters, no whitespace).

        Returns
        -------
        ndarray of shape (n_samples, d), float32
            Pooled encoder states of each molecule's RDKit canonical SMILES; NaN rows for
            invalid SMILES with ``on_invalid="nan"``.

        Raises
        ------
        InvalidSmilesError
            With ``on_invalid="raise"``, listing every invalid row and its reason.
        """
        self._check_params()
        rows = as_smiles_list(X)
        model = self._model()
        fitted_dim = getattr(self, "embedding_dim_", None)
        if fitted_dim is not None and model.dim != fitted_dim:
            raise ValueError(f"model {str(self.model)!r} now gives {model.dim}-wide "
                             f"embeddings, {fitted_dim} when this transformer was fitted "
                             "(another checkpoint at that path, or $EXLM_CHEM_MODEL changed)")
        return model.embed(rows, int(self.batch_size), self.on_invalid).values  # [N, d]

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """Output column names ``emb_0 ... emb_{d-1}`` (as in ``exlm-chem embed``).

        Parameters
        ----------
        input_features : array-like of str, optional
            The input column's name; only checked to be a single name.

        Returns
        -------
        ndarray of str, shape (d,)
        """
        if input_features is not None and len(input_features) != 1:
            raise ValueError(f"ExLMEmbedder takes one SMILES column, got input_features="
                             f"{list(input_features)!r}")
        dim = getattr(self, "embedding_dim_", None)
        if dim is None:
            self._check_params()
            dim = self._model().dim
        return np.asarray([f"{FEATURE_PREFIX}{j}" for j in range(dim)], dtype=object)

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.requires_fit = False
        tags.input_tags.one_d_array = True
        tags.input_tags.string = True
        tags.transformer_tags.preserves_dtype = []  # always float32, whatever X is
        return tags

    def _more_tags(self) -> dict[str, Any]:  # scikit-learn < 1.6
        return {"X_types": ["string", "1darray"], "requires_fit": False,
                "stateless": True, "preserves_dtype": []}
