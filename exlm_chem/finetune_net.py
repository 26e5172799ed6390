"""The fine-tuning network (encoder + pooling + head) and batched inference over SMILES."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from exlm_chem.featurize import encode_pooled, length_sorted_batches
from exlm_chem.inference_inputs import inference_expansion
from exlm_chem.model.config import ExLMConfig
from exlm_chem.model.heads import ClassificationHead
from exlm_chem.tokenizer import SmilesTokenizer

__all__ = ["FinetuneNet", "build_finetune_net", "predict_batched"]


class FinetuneNet(nn.Module):
    """Encoder + pooling + head, mapping SMILES strings to outputs [B, n_out].

    Parameters
    ----------
    encoder : ExLMEncoder
        Called as ``encoder(input_ids, pos_original, pos_copy, padding_mask)``; its
        ``config`` gives ``d_model`` and, through
        :func:`~exlm_chem.inference_inputs.inference_expansion`, the input's expansion.
    tokenizer : SmilesTokenizer
    n_out : int
        Number of outputs (tasks).
    pooler_dropout : float
        Dropout inside the head.
    pooling : {"bos", "mean"}
        ``bos`` (the paper): the first BOS copy; ``mean``: mean over real tokens.
    max_length : int
        Tokens per molecule including BOS and EOS before expansion; longer ones are cut.
    """

    def __init__(self, encoder: nn.Module, tokenizer: SmilesTokenizer, n_out: int,
                 pooler_dropout: float = 0.1, pooling: str = "bos",
                 max_length: int = 256) -> None:
        super().__init__()
        self.encoder = encoder
        self.head = ClassificationHead(encoder.config.d_model, n_out, pooler_dropout)
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

    def embed(self, smiles: Sequence[str]) -> torch.Tensor:
        """Pooled encoder states [B, d] of already-validated SMILES."""
        return encode_pooled(self.encoder, self.tokenizer, smiles, self.k_states,
                             self.pooling, self.max_length, self.device)

    def forward(self, smiles: Sequence[str]) -> torch.Tensor:
        """Logits (classification) or values (regression), [B, n_out]."""
        return self.head(self.embed(smiles))


def build_finetune_net(
    config: ExLMConfig,
    tokenizer: SmilesTokenizer,
    n_out: int,
    encoder_state: dict[str, torch.Tensor] | None = None,
    pooler_dropout: float = 0.1,
    pooling: str = "bos",
    max_length: int = 256,
) -> FinetuneNet:
    """A :class:`FinetuneNet` with a fresh encoder for ``config`` and a fresh head.

    ``encoder_state`` (keys of :class:`~exlm_chem.model.encoder.ExLMEncoder`) replaces the
    encoder's random initial weights. The head draws from torch's global generator.
    """
    from exlm_chem.model.encoder import ExLMEncoder, init_weights

    encoder = ExLMEncoder(config)
    if encoder_state is None:
        init_weights(encoder)
    else:
        encoder.load_state_dict(encoder_state)
    return FinetuneNet(encoder, tokenizer, n_out, pooler_dropout, pooling, max_length)


@torch.no_grad()
def predict_batched(
    net: FinetuneNet, smiles: Sequence[str], batch_size: int = 64, embed: bool = False
) -> np.ndarray:
    """Outputs [N, n_out] (or pooled states [N, d] with ``embed``) in input order.

    Runs over length-sorted batches in eval mode, restoring the previous mode after.
    """
    fn = net.embed if embed else net
    width = net.encoder.config.d_model if embed else net.n_out
    out = np.empty((len(smiles), width), dtype=np.float32)
    was_training = net.training
    net.eval()
    try:
        # characters are a cheap stand-in for token counts when grouping by length
        for idx in length_sorted_batches([len(s) for s in smiles], batch_size):
            out[idx] = fn([smiles[i] for i in idx]).float().cpu().numpy()
    finally:
        net.train(was_training)
    return out
