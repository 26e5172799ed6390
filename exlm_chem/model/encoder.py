"""The ExLM encoder: a pre-LN transformer whose only position signal is 2D RoPE.

Reads top to bottom: block, encoder, then the full model with its heads (attention and
the feed-forward block have modules of their own). The input is already expanded (BOS,
every [MASK] and EOS repeated k times by the collate step), so the encoder sees ordinary
token ids plus two position coordinates.

Shapes: B batch, X expanded tokens, S expanded states (DAG nodes), d model dim, H heads,
hd head dim, V vocabulary.
"""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import nn

from exlm_chem.model.attention import SelfAttention
from exlm_chem.model.config import ExLMConfig
from exlm_chem.model.feedforward import FeedForward
from exlm_chem.model.heads import DescriptorHead, LMHead, SmilesDecoder, TransitionHead
from exlm_chem.model.pooling import Pooling
from exlm_chem.model.rope import rope_rotation
from exlm_chem.model.token_layout import TokenLayout, token_layout


class Block(nn.Module):
    """Pre-LN transformer block: ``x + drop(attn(LN x))`` then ``x + drop(ffn(LN x))``."""

    def __init__(self, config: ExLMConfig) -> None:
        super().__init__()
        self.ln_attn = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.attn = SelfAttention(config)
        self.ln_ffn = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.ffn = FeedForward(config)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor, rotation: torch.Tensor, layout: TokenLayout,
                queries: torch.Tensor | None = None) -> torch.Tensor:
        """``x`` [N, d] real tokens -> [N, d], or [S, d] for the rows ``queries`` (see
        :class:`~exlm_chem.model.attention.SelfAttention`)."""
        h = self.attn(self.ln_attn(x), rotation, layout, queries)
        x = x if queries is None else x[queries]
        x = x + self.dropout(h)
        x = x + self.dropout(self.ffn(self.ln_ffn(x)))
        return x


class ExLMEncoder(nn.Module):
    """Token embedding -> dropout -> n_layers pre-LN blocks -> final LayerNorm.

    No absolute position embedding and no embedding LayerNorm: positions enter only
    through 2D RoPE inside attention.
    """

    def __init__(self, config: ExLMConfig) -> None:
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.d_model,
                                         padding_idx=config.pad_id)
        self.dropout = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layers))
        self.ln_final = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)

    def forward(
        self,
        input_ids: torch.Tensor,
        pos_original: torch.Tensor,
        pos_copy: torch.Tensor,
        padding_mask: torch.Tensor | None = None,
        pooling: Pooling | None = None,
    ) -> torch.Tensor:
        """Encode an expanded batch.

        Parameters
        ----------
        input_ids : LongTensor [B, X]
            Expanded token ids.
        pos_original, pos_copy : LongTensor [B, X]
            2D positions (original index; copy index 1..k or 0).
        padding_mask : BoolTensor [B, X], optional
            True at real tokens, False at padding. None means no padding.
        pooling : Pooling, optional
            Pool the states of ``pooling.layer`` into one vector per sample, ``[B, d]``;
            later blocks are not run, and the last block run computes only the rows the
            pooling reads (:meth:`~exlm_chem.model.pooling.Pooling.query_rows`).

        Returns
        -------
        Tensor [B, X, d] (or [B, d] with ``pooling``)
            Final hidden states; zeros at padded positions on the CPU (unspecified finite
            values elsewhere, see :func:`~exlm_chem.model.token_layout.token_layout`).
        """
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must be [B, X], got {tuple(input_ids.shape)}")
        if pos_original.shape != input_ids.shape or pos_copy.shape != input_ids.shape:
            raise ValueError(
                f"positions must match input_ids {tuple(input_ids.shape)}; got "
                f"pos_original {tuple(pos_original.shape)}, pos_copy {tuple(pos_copy.shape)}")
        B, X = input_ids.shape
        if padding_mask is not None:
            if padding_mask.shape != input_ids.shape:
                raise ValueError(f"padding_mask {tuple(padding_mask.shape)} must match "
                                 f"input_ids {tuple(input_ids.shape)}")
            padding_mask = padding_mask.bool()
        # position-wise work on real tokens only; attention by groups of similar length
        layout = token_layout(padding_mask, B, X)
        rotation = rope_rotation(layout.flatten(pos_original)[None],
                                 layout.flatten(pos_copy)[None], self.config.head_dim,
                                 self.config.rope_base)[0]  # [N, hd/2] complex
        rotation = rotation[:, None, None, :]  # [N, 1, 1, hd/2]: over q/k and heads
        x = self.dropout(self.embed_tokens(layout.flatten(input_ids)))  # [N, d]
        depth = len(self.blocks) if pooling is None else pooling.depth(len(self.blocks))
        for i, block in enumerate(self.blocks[:depth]):
            rows = pooling.query_rows(layout) if pooling is not None and i == depth - 1 else None
            x = block(x, rotation, layout, rows)  # [N, d], or [S, d] for the rows
        x = self.ln_final(x)
        if pooling is None:
            return layout.unflatten(x)  # [B, X, d]
        return pooling(x, layout, padding_mask)  # [B, d]


def init_weights(module: nn.Module, pad_id: int | None = None) -> None:
    """ExLM init: Linear and Embedding N(0, 0.02), zero biases, zero pad row, unit LayerNorm."""
    for m in module.modules():
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
            if m.padding_idx is not None:
                with torch.no_grad():
                    m.weight[m.padding_idx].zero_()
        elif isinstance(m, nn.LayerNorm):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)


class ExLMModel(nn.Module):
    """Encoder plus the tied LM head and (for objective "exlm") the transition head.

    The losses live elsewhere: this module maps an expanded batch to hidden states, and
    collate/objective code applies the heads (``lm_head``, ``transition_head``) to the
    positions it scores.
    """

    def __init__(self, config: ExLMConfig) -> None:
        super().__init__()
        self.config = config
        self.encoder = ExLMEncoder(config)
        self.lm_head = LMHead(config, self.encoder.embed_tokens)
        self.transition_head = TransitionHead(config) if config.objective == "exlm" else None
        self.descriptor_head = (DescriptorHead(config.d_model, config.n_descriptors)
                                if config.n_descriptors else None)
        self.smiles_decoder = (SmilesDecoder(config.d_model, config.vocab_size, config.pad_id)
                               if config.smiles_decoder else None)
        init_weights(self)
        # init_weights re-drew the embedding in place, so the tie still holds
        assert self.lm_head.weight is self.encoder.embed_tokens.weight

    # names of parameters that are the same tensor as another; stored once in checkpoints
    tied_parameters: ClassVar[dict[str, str]] = {"lm_head.weight": "encoder.embed_tokens.weight"}

    def forward(self, *batch: torch.Tensor | None) -> torch.Tensor:
        """:meth:`ExLMEncoder.forward` (``input_ids, pos_original, pos_copy[, padding_mask]``):
        hidden states [B, X, d], so that the objectives call a model and a bare encoder
        alike."""
        return self.encoder(*batch)

    def num_parameters(self, trainable_only: bool = False) -> int:
        """Number of distinct parameters (the tied embedding counted once)."""
        return sum(p.numel() for p in self.parameters()
                   if p.requires_grad or not trainable_only)
