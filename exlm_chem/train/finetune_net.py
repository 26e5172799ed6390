"""The fine-tuning network (encoder + pooling + head) and batched inference over SMILES."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from exlm_chem.data.batching import sorted_batches
from exlm_chem.data.collate import SpecialIds
from exlm_chem.data.finetune_data import EncodedSet, encode_rows
from exlm_chem.data.inference_inputs import inference_expansion
from exlm_chem.data.tokenizer import SmilesTokenizer
from exlm_chem.device import autocast
from exlm_chem.model.config import ExLMConfig
from exlm_chem.model.heads import ClassificationHead
from exlm_chem.model.pooling import DEFAULT_POOLING, pooled_states

__all__ = ["FinetuneNet", "build_finetune_net", "predict_batched", "predict_encoded"]


class FinetuneNet(nn.Module):
    """Encoder + pooling + head, mapping molecules to outputs [B, n_out].

    Molecules are SMILES strings or already tokenised id rows ``[BOS, ..., EOS]``
    (int arrays, e.g. prepared split files or GLUE pairs); :meth:`encode` turns either into
    the encoder's input once, :meth:`forward_inputs` runs it.

    Parameters
    ----------
    encoder : ExLMEncoder
        Called as ``encoder(input_ids, pos_original, pos_copy, padding_mask)``; its
        ``config`` gives ``d_model`` and, through
        :func:`~exlm_chem.data.inference_inputs.inference_expansion`, the input's expansion.
    tokenizer : SmilesTokenizer
    n_out : int
        Number of outputs (tasks).
    pooler_dropout : float
        Dropout inside the head.
    pooling : {"bos", "mean"}, default "mean"
        ``mean``: mean over real tokens; ``bos`` (the paper): the first BOS copy.
    max_length : int
        Tokens per molecule including BOS and EOS before expansion; longer ones are cut.
    n_features : int
        Per-molecule features (already scaled, e.g. RDKit descriptors) concatenated to
        the pooled state before the head; 0: none.
    """

    def __init__(self, encoder: nn.Module, tokenizer: SmilesTokenizer, n_out: int,
                 pooler_dropout: float = 0.1, pooling: str = DEFAULT_POOLING,
                 max_length: int = 256, n_features: int = 0) -> None:
        super().__init__()
        self.encoder = encoder
        self.head = ClassificationHead(encoder.config.d_model, n_out, pooler_dropout,
                                       n_features)
        self.tokenizer = tokenizer
        self.k_states = inference_expansion(encoder.config)  # 1 for an MLM twin
        self.pooling = pooling
        self.max_length = max_length

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    @property
    def n_out(self) -> int:
        return self.head.out.out_features

    @property
    def n_features(self) -> int:
        return self.head.n_features

    def encode(self, molecules: Sequence[str | np.ndarray],
               features: np.ndarray | None = None) -> EncodedSet:
        """Encoder inputs (on the CPU) of SMILES or token id rows, tokenised once, with
        their scaled ``features`` [N, F] when the head reads some."""
        if (features is None) != (self.n_features == 0):
            raise ValueError(f"this network reads {self.n_features} features per molecule; "
                             f"got {'none' if features is None else np.shape(features)}")
        return self._encode(molecules, features)

    def _encode(self, molecules: Sequence[str | np.ndarray],
                features: np.ndarray | None = None) -> EncodedSet:
        tok = self.tokenizer
        rows = [np.asarray(m, dtype=np.int64) if not isinstance(m, str)
                else np.asarray(tok.encode(m, max_length=self.max_length), dtype=np.int64)
                for m in molecules]
        special = SpecialIds(tok.bos_id, tok.pad_id, tok.eos_id, tok.mask_id)
        return encode_rows(rows, self.k_states, special, features)

    def embed_inputs(self, input_ids: torch.Tensor, pos_original: torch.Tensor,
                     pos_copy: torch.Tensor, padding_mask: torch.Tensor) -> torch.Tensor:
        """Pooled encoder states [B, d] of a batch of encoder inputs (each [B, X])."""
        return pooled_states(self.encoder, input_ids, pos_original, pos_copy, padding_mask,
                             self.pooling)

    def forward_inputs(self, input_ids: torch.Tensor, pos_original: torch.Tensor,
                       pos_copy: torch.Tensor, padding_mask: torch.Tensor,
                       features: torch.Tensor | None = None) -> torch.Tensor:
        """Logits (classification) or values (regression), [B, n_out]; ``features``
        [B, F] go beside the pooled state."""
        pooled = self.embed_inputs(input_ids, pos_original, pos_copy, padding_mask)
        return self.head(pooled, features)

    def embed(self, molecules: Sequence[str | np.ndarray]) -> torch.Tensor:
        """Pooled encoder states [B, d] of already-validated molecules (features, which
        only the head reads, are not needed)."""
        return self.embed_inputs(*(t.to(self.device) for t in self._encode(molecules)[:4]))

    def forward(self, molecules: Sequence[str | np.ndarray],
                features: np.ndarray | None = None) -> torch.Tensor:
        """Logits (classification) or values (regression), [B, n_out]."""
        inputs = self.encode(molecules, features).to(self.device)
        return self.forward_inputs(*inputs[:4], inputs.features)


def build_finetune_net(
    config: ExLMConfig,
    tokenizer: SmilesTokenizer,
    n_out: int,
    encoder_state: dict[str, torch.Tensor] | None = None,
    pooler_dropout: float = 0.1,
    pooling: str = DEFAULT_POOLING,
    max_length: int = 256,
    n_features: int = 0,
) -> FinetuneNet:
    """A :class:`FinetuneNet` with a fresh encoder for ``config`` and a fresh head
    (reading ``n_features`` features beside the pooled state).

    ``encoder_state`` (keys of :class:`~exlm_chem.model.encoder.ExLMEncoder`) replaces the
    encoder's random initial weights. The head draws from torch's global generator.
    """
    from exlm_chem.model.encoder import ExLMEncoder, init_weights

    encoder = ExLMEncoder(config)
    if encoder_state is None:
        init_weights(encoder)
    else:
        encoder.load_state_dict(encoder_state)
    return FinetuneNet(encoder, tokenizer, n_out, pooler_dropout, pooling, max_length,
                       n_features)


@torch.inference_mode()
def predict_encoded(net: FinetuneNet, inputs: EncodedSet, batch_size: int = 64,
                    embed: bool = False) -> np.ndarray:
    """Outputs [N, n_out] (or pooled states [N, d] with ``embed``) of an encoded set.

    Length-sorted batches in eval mode (bf16 autocast on CUDA), restoring the previous
    mode after; ``inputs`` may already sit on the net's device. The outputs stay on the
    device until the single copy back at the end.
    """
    device = net.device
    width = net.encoder.config.d_model if embed else net.n_out
    out = torch.empty((inputs.n_rows, width), dtype=torch.float32, device=device)
    inputs = inputs.to(device)
    was_training = net.training
    net.eval()
    try:
        for idx in sorted_batches(inputs.lengths, batch_size):
            rows = torch.from_numpy(idx).to(device)
            batch = inputs.batch(rows, idx)
            with autocast(device):
                values = net.embed_inputs(*batch[:4]) if embed else net.forward_inputs(*batch)
            out[rows] = values.float()
    finally:
        net.train(was_training)
    return out.cpu().numpy()


def predict_batched(
    net: FinetuneNet, smiles: Sequence[str | np.ndarray], batch_size: int = 64,
    embed: bool = False, features: np.ndarray | None = None,
) -> np.ndarray:
    """Outputs [N, n_out] (or pooled states [N, d] with ``embed``) in input order;
    ``features`` [N, F]: the scaled per-molecule features the head reads (if any)."""
    inputs = net._encode(smiles) if embed else net.encode(smiles, features)  # embed: no head
    return predict_encoded(net, inputs, batch_size, embed)
