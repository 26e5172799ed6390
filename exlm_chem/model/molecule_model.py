"""One model from SMILES to prediction: encoder, pooling, feature transform and head.

The composition is chemprop's ``MPNN(message_passing, agg, predictor, X_d_transform)``:
the ExLM encoder, a :class:`~exlm_chem.model.pooling.Pooling` (which states of which
layer), an optional feature transform (the :class:`~exlm_chem.data.feature_spec.FeatureSpec`
that computes per-molecule features and holds the scaler fitted in training) and an
optional :class:`~exlm_chem.model.heads.PredictionHead`. Without a head the model embeds;
with one it also predicts. Every entry point reaches the network through it: ``embed``,
the estimators, ``ExLMEmbedder``, the DeepChem featurizer, the command line, screening
and the GLUE path.

Reads top to bottom: the records, the model (the network on tensors, its inputs, the one
batched inference loop, then SMILES at the edge of a call), and how one is built.

Shapes: B batch, X expanded tokens, N molecules, d model dim, F features, T outputs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import nn

from exlm_chem.data.batching import sorted_batches
from exlm_chem.data.collate import SpecialIds
from exlm_chem.data.feature_spec import FeatureSpec
from exlm_chem.data.featurize import (
    CheckedSmiles,
    check_smiles,
    raise_for_invalid,
    warn_unknown_tokens,
)
from exlm_chem.data.finetune_data import EncodedSet, encode_rows
from exlm_chem.data.inference_inputs import inference_expansion, inference_inputs
from exlm_chem.device import autocast, resolve_device
from exlm_chem.model.config import ExLMConfig
from exlm_chem.model.encoder import ExLMEncoder, init_weights
from exlm_chem.model.heads import PredictionHead
from exlm_chem.model.pooling import DEFAULT_POOLING, Pooling

__all__ = ["DEFAULT_BATCH_SIZE", "EMBED", "ON_INVALID", "PREDICT", "ModelInputs", "ModelOutputs",
           "MoleculeModel", "build_model", "check_max_length"]

EMBED, PREDICT = "embed", "predict"  # what the inference loop returns: pooled states, outputs
ON_INVALID = ("nan", "raise")  # a prediction call's policies for invalid rows
DEFAULT_BATCH_SIZE = 128  # molecules per forward pass; length sorting keeps padding small
_TOKENIZE_SLICE = 4096  # molecules per batch_encode call (bounds the padded id matrix)


def check_max_length(max_length: int) -> int:
    """``max_length`` if it is an integer >= 3 (BOS, a token, EOS); else ValueError."""
    if isinstance(max_length, bool) or not isinstance(max_length, int | np.integer) \
            or max_length < 3:
        raise ValueError(f"max_length must be an integer >= 3 (BOS, a token, EOS), "
                         f"got {max_length!r}")
    return int(max_length)


class ModelInputs(NamedTuple):
    """What the check at the edge of a call leaves for the network."""

    checked: CheckedSmiles  # every input row: valid mask, reasons, canonical SMILES
    smiles: list[str]  # [n_valid] canonical SMILES of the valid rows: what the model reads
    features: np.ndarray | None  # [n_valid, F] scaled features, for a model that reads some

    def scatter(self, values: np.ndarray) -> ModelOutputs:
        """``values`` [n_valid, W] of the valid rows -> outputs of every row (NaN rows)."""
        checked = self.checked
        out = np.full((len(checked.valid), values.shape[1]), np.nan,
                      dtype=np.result_type(values.dtype, np.float32))  # [N, W]
        out[checked.rows] = values
        return ModelOutputs(out, checked.valid, checked.reasons)


class ModelOutputs(NamedTuple):
    """One output row per input row; the check's reasons travel with the values."""

    values: np.ndarray  # [N, W] pooled states (W = d) or outputs (W = T); NaN where invalid
    valid: np.ndarray  # [N] bool
    reasons: list[str | None]  # None for valid rows, else why the row was rejected


class MoleculeModel(nn.Module):
    """Encoder + pooling (+ feature transform) (+ head): molecules to vectors or outputs.

    Parameters
    ----------
    encoder : ExLMEncoder
        Its ``config`` gives ``d_model`` and, through
        :func:`~exlm_chem.data.inference_inputs.inference_expansion`, the input's expansion.
    tokenizer : SmilesTokenizer or TextTokenizer
        The tokenizer whose ids the encoder was trained on.
    pooling : Pooling or str
        Which encoder states become the molecule's vector; its layer is checked against
        this encoder here.
    feature_transform : FeatureSpec, optional
        Per-molecule features computed from the canonical SMILES (and the caller's
        columns), scaled by the scaler fitted in training, fed to the head beside the
        pooled state.
    head : PredictionHead, optional
        Logits or values [B, T]; None for an embedding model.
    max_length : int
        Tokens per molecule including BOS and EOS before expansion; longer ones are cut.
    """

    def __init__(self, encoder: ExLMEncoder, tokenizer: Any,
                 pooling: Pooling | str = DEFAULT_POOLING,
                 feature_transform: FeatureSpec | None = None,
                 head: PredictionHead | None = None, max_length: int = 256) -> None:
        super().__init__()
        self.encoder = encoder
        self.pooling = Pooling.of(pooling)
        self.pooling.depth(len(encoder.blocks))  # the layer exists in this encoder
        self.feature_transform = feature_transform
        self.head = head
        self.tokenizer = tokenizer
        self.max_length = check_max_length(max_length)
        self.k_states = inference_expansion(encoder.config)  # 1 for an MLM twin
        self.special = SpecialIds(tokenizer.bos_id, tokenizer.pad_id, tokenizer.eos_id,
                                  tokenizer.mask_id)
        head_features = 0 if head is None else head.n_features
        if feature_transform is not None and feature_transform.n_features != head_features:
            raise ValueError(f"the feature transform gives {feature_transform.n_features} "
                             f"features, the head reads {head_features}")

    @property
    def config(self) -> ExLMConfig:
        return self.encoder.config

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    @property
    def dim(self) -> int:
        """Width d of the pooled states."""
        return int(self.config.d_model)

    @property
    def n_out(self) -> int:
        return 0 if self.head is None else self.head.out.out_features

    @property
    def n_features(self) -> int:
        """Features the head reads beside the pooled state (0: none)."""
        return 0 if self.head is None else self.head.n_features

    def view(self, pooling: Pooling | str | None = None,
             max_length: int | None = None) -> MoleculeModel:
        """This model pooling or cutting otherwise: a module sharing every weight and mode."""
        pooling = self.pooling if pooling is None else Pooling.of(pooling)
        max_length = self.max_length if max_length is None else max_length
        if (pooling, max_length) == (self.pooling, self.max_length):
            return self
        view = MoleculeModel(self.encoder, self.tokenizer, pooling, self.feature_transform,
                             self.head, max_length)
        view.training = self.training  # not .train(): that would walk the shared modules
        return view

    # ---- the network, on tensors ------------------------------------------------------------
    def fingerprint(self, input_ids: torch.Tensor, pos_original: torch.Tensor,
                    pos_copy: torch.Tensor, padding_mask: torch.Tensor) -> torch.Tensor:
        """Pooled encoder states [B, d] of encoder inputs (each [B, X])."""
        return self.encoder(input_ids, pos_original, pos_copy, padding_mask, self.pooling)

    def forward(self, input_ids: torch.Tensor, pos_original: torch.Tensor,
                pos_copy: torch.Tensor, padding_mask: torch.Tensor,
                features: torch.Tensor | None = None) -> torch.Tensor:
        """Logits (classification) or values (regression) [B, T]; ``features`` [B, F]
        (scaled) go beside the pooled state."""
        if self.head is None:
            raise ValueError("this model has no head: it embeds (fingerprint), it does not "
                             "predict")
        return self.head(self.fingerprint(input_ids, pos_original, pos_copy, padding_mask),
                         features)

    # ---- inputs -----------------------------------------------------------------------------
    def token_rows(self, molecules: Sequence[str | np.ndarray]) -> list[np.ndarray]:
        """Id rows ``[BOS, ..., EOS]`` of SMILES (tokenised, cut to ``max_length``), or the
        rows themselves when they are ids already (e.g. GLUE pairs); ragged: a padded matrix
        of a million molecules would hold mostly padding."""
        if not all(isinstance(m, str) for m in molecules):
            return [np.asarray(m, dtype=np.int64) for m in molecules]
        rows: list[np.ndarray] = []
        for start in range(0, len(molecules), _TOKENIZE_SLICE):
            part = self.tokenizer.batch_encode(molecules[start : start + _TOKENIZE_SLICE],
                                               max_length=self.max_length)
            rows.extend(r[:n].copy() for r, n in zip(part.input_ids, part.lengths, strict=True))
        return rows

    def encode(self, molecules: Sequence[str | np.ndarray],
               features: np.ndarray | None = None) -> EncodedSet:
        """Training inputs (on the CPU): every molecule tokenised and expanded once, with
        its scaled ``features`` [N, F] when the head reads some."""
        self._check_features(features)
        return encode_rows(self.token_rows(molecules), self.k_states, self.special, features)

    def _check_features(self, features: np.ndarray | None) -> None:
        if (features is None) != (self.n_features == 0):
            raise ValueError(f"this model reads {self.n_features} features per molecule; "
                             f"got {'none' if features is None else np.shape(features)}")

    # ---- the one batched inference loop -----------------------------------------------------
    @torch.inference_mode()
    def run(self, molecules: Sequence[str | np.ndarray], output: str = PREDICT,
            batch_size: int = DEFAULT_BATCH_SIZE, features: np.ndarray | None = None,
            on_batch: Callable[[int], None] | None = None) -> np.ndarray:
        """Outputs [N, T] (``output="predict"``) or pooled states [N, d] (``"embed"``) of
        valid molecules, in input order.

        Batches of similar expanded length (:func:`~exlm_chem.data.batching.sorted_batches`),
        built on the host and moved to the model's device one at a time; eval mode (the
        previous mode is restored), bf16 autocast on CUDA; the outputs stay on the device
        until one copy back at the end. ``features`` [N, F] are the scaled features the
        head reads; ``on_batch(n)`` follows each forward pass (progress bars).
        """
        if output not in (EMBED, PREDICT):
            raise ValueError(f"output must be {EMBED!r} or {PREDICT!r}, got {output!r}")
        if output == PREDICT:
            self._check_features(features)
        rows = self.token_rows(molecules)
        device = self.device
        width = self.dim if output == EMBED else self.n_out
        out = torch.empty((len(rows), width), dtype=torch.float32, device=device)  # [N, W]
        # BOS and EOS become k copies each: batches are cut by what the encoder reads
        lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows)) \
            + 2 * (self.k_states - 1)  # [N]
        was_training = self.training
        self.eval()
        try:
            for idx in sorted_batches(lengths, batch_size):
                inputs = [t.to(device) for t in
                          inference_inputs([rows[i] for i in idx], self.k_states, self.special)]
                with autocast(device):
                    if output == EMBED:
                        values = self.fingerprint(*inputs)  # [B, d]
                    else:
                        batch_features = (None if features is None else
                                          torch.as_tensor(features[idx]).to(device))  # [B, F]
                        values = self(*inputs, batch_features)  # [B, T]
                out[torch.from_numpy(idx).to(device)] = values.float()
                if on_batch is not None:
                    on_batch(len(idx))
        finally:
            self.train(was_training)
        return out.cpu().numpy()

    # ---- SMILES at the edge of a call -------------------------------------------------------
    def prepare(self, smiles: Sequence[Any], columns: np.ndarray | None = None,
                on_invalid: str = "nan", n_jobs: int | None = None,
                molecules: bool = False) -> ModelInputs:
        """The one check of a call's SMILES (:func:`~exlm_chem.data.featurize.check_smiles`:
        each distinct SMILES parsed once), a warning about molecules mostly unknown to the
        tokenizer, and the scaled features of the valid rows, computed from the check's
        molecules (no second parse).

        ``columns`` [N, F_user]: the caller's feature columns, for a feature transform that
        reads some. With ``on_invalid="raise"`` an invalid row raises one error naming
        every bad row; with ``"nan"`` its outputs become NaN rows (:meth:`ModelInputs.scatter`).
        ``molecules``: keep the check's RDKit molecules in ``checked`` for the caller
        (the estimators' tree head reads them); they are kept anyway while this model
        computes features, and not otherwise (embedding reads only the SMILES).
        """
        if on_invalid not in ON_INVALID:
            raise ValueError(f"on_invalid must be one of {ON_INVALID}, got {on_invalid!r}")
        computes = self.feature_transform is not None and self.feature_transform.computed
        checked = check_smiles(smiles, keep_molecules=molecules or computes)
        if on_invalid == "raise":
            raise_for_invalid(smiles, checked)
        valid_smiles = checked.valid_smiles
        warn_unknown_tokens(self.tokenizer, valid_smiles, checked.rows, stacklevel=4)
        columns = None if columns is None else np.asarray(columns)[checked.rows]
        features = (None if self.feature_transform is None else self.feature_transform.values(
            valid_smiles, columns, n_jobs, checked.valid_molecules))
        return ModelInputs(checked, valid_smiles, features)

    def embed(self, smiles: Sequence[Any], batch_size: int = DEFAULT_BATCH_SIZE,
              on_invalid: str = "nan",
              on_batch: Callable[[int], None] | None = None) -> ModelOutputs:
        """Pooled states [N, d] float32 of any input rows, NaN rows where invalid.

        ``on_batch(n)`` counts the molecules done, invalid ones included.
        """
        inputs = self.prepare(smiles, on_invalid=on_invalid)
        states = self.run(inputs.smiles, EMBED, batch_size, on_batch=on_batch)  # [n_valid, d]
        n_invalid = len(smiles) - len(inputs.smiles)
        if on_batch is not None and n_invalid:
            on_batch(n_invalid)
        return inputs.scatter(states)

    # ---- construction -----------------------------------------------------------------------
    @classmethod
    def from_checkpoint(cls, path: str | os.PathLike[str] = "default",
                        pooling: Pooling | str = DEFAULT_POOLING,
                        device: str | torch.device = "auto",
                        max_length: int = 256) -> MoleculeModel:
        """The encoder of a pre-trained checkpoint directory (or ``"default"``, see
        :func:`~exlm_chem.model.pretrained.checkpoint_dir`) as an embedding model, in eval
        mode on ``device``."""
        from exlm_chem.data.tokenizer import SmilesTokenizer
        from exlm_chem.model.checkpoint import load_checkpoint
        from exlm_chem.model.pretrained import checkpoint_dir

        directory = checkpoint_dir(path)
        model, _, _ = load_checkpoint(directory)
        tokenizer = SmilesTokenizer(directory)  # its vocab.txt
        return cls(model.encoder, tokenizer, pooling,
                   max_length=max_length).to(resolve_device(device)).eval()

    def settings(self) -> dict[str, Any]:
        """How to build this model again beside its config (:func:`build_model`'s keywords;
        the ``net`` entry of a saved model's metadata)."""
        settings = {"pooler_dropout": 0.0 if self.head is None else self.head.dropout.p,
                    "pooling": self.pooling.states, "max_length": self.max_length,
                    "n_features": self.n_features}
        if self.pooling.layer != Pooling().layer:
            settings["pooling_layer"] = self.pooling.layer
        return settings


def build_model(
    config: ExLMConfig,
    tokenizer: Any,
    n_out: int,
    encoder_state: dict[str, torch.Tensor] | None = None,
    pooler_dropout: float = 0.1,
    pooling: Pooling | str = DEFAULT_POOLING,
    max_length: int = 256,
    n_features: int = 0,
    feature_transform: FeatureSpec | None = None,
    pooling_layer: int | None = None,
) -> MoleculeModel:
    """A :class:`MoleculeModel` with a prediction head of ``n_out`` outputs reading
    ``n_features`` features beside the pooled state; ``n_out=0``: no head (an embedding
    model).

    ``encoder_state`` (keys of :class:`~exlm_chem.model.encoder.ExLMEncoder`) replaces the
    encoder's random initial weights. The head draws from torch's global generator.
    """
    encoder = ExLMEncoder(config)
    if encoder_state is None:
        init_weights(encoder)
    else:
        encoder.load_state_dict(encoder_state)
    if pooling_layer is not None:
        pooling = Pooling(Pooling.of(pooling).states, pooling_layer)
    head = None if n_out == 0 else PredictionHead(config.d_model, n_out, pooler_dropout,
                                                  n_features)
    return MoleculeModel(encoder, tokenizer, pooling, feature_transform, head, max_length)
