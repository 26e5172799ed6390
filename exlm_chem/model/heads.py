"""Output heads: tied LM head, the DAG transition head, the descriptor head, the SMILES
decoder of pre-training and the prediction head of fine-tuned models.

Shapes: B batch, X expanded tokens, S expanded states (DAG nodes), d model dim, H heads,
V vocabulary, L tokens of a SMILES.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from exlm_chem.model.config import ExLMConfig


class LMHead(nn.Module):
    """dense(d, d) -> GELU -> LayerNorm -> projection tied to the token embedding (+ bias)."""

    def __init__(self, config: ExLMConfig, embedding: nn.Embedding) -> None:
        super().__init__()
        self.dense = nn.Linear(config.d_model, config.d_model)
        self.ln = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.weight = embedding.weight  # the same Parameter: [V, d], stored once on disk
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        """Logits [..., V] for hidden states [..., d]."""
        x = self.ln(F.gelu(self.dense(hidden)))
        return F.linear(x, self.weight, self.bias)


class TransitionHead(nn.Module):
    """Log transition matrix between expanded states (the DAG's edges).

    Each state's feature is its final hidden state concatenated with a learned embedding
    of its index in the expanded sequence. Per head, query-key scores are normalised
    over the allowed successors; the heads are mixed by a per-state softmax gate in log
    space. Everything runs in float32 with autocast off: the DAG loss sums many log
    probabilities and is sensitive to their precision.
    """

    def __init__(self, config: ExLMConfig) -> None:
        super().__init__()
        d = config.d_model
        self.n_heads = config.n_heads
        self.head_dim = config.head_dim
        self.max_positions = config.max_expanded_positions
        self.pos_embed = nn.Embedding(config.max_expanded_positions, d)
        self.query = nn.Linear(2 * d, d)
        self.key = nn.Linear(2 * d, d)
        self.gate = nn.Linear(2 * d, config.n_heads)

    def forward(
        self, hidden: torch.Tensor, state_index: torch.Tensor, state_lengths: torch.Tensor
    ) -> torch.Tensor:
        """Compute ``log E``.

        Parameters
        ----------
        hidden : Tensor [B, X, d]
            Encoder output over the expanded sequence.
        state_index : LongTensor [B, S]
            Expanded-sequence index of each DAG state, in increasing order; entries at
            ``s >= state_lengths[b]`` are padding and may hold anything.
        state_lengths : LongTensor [B]
            Number of real states L_b of each sample.

        Returns
        -------
        Tensor [B, S, S], float32
            ``log E[b, i, j]``: log probability of moving from state i to state j. Finite
            exactly where ``i < j < L_b``; -inf elsewhere. Each row with at least one
            allowed successor log-sum-exps to 0; other rows are all -inf, and no entry
            yields NaN in forward or backward.
        """
        B, X, d = hidden.shape
        S = state_index.shape[1]
        if state_index.shape[0] != B or state_lengths.shape != (B,):
            raise ValueError(f"state_index must be [B, S] and state_lengths [B] with B={B}; "
                             f"got {tuple(state_index.shape)} and {tuple(state_lengths.shape)}")
        if X > self.max_positions:
            raise ValueError(f"expanded length {X} exceeds max_expanded_positions="
                             f"{self.max_positions} of the transition head")
        slot = torch.arange(S, device=state_index.device)
        real = slot[None, :] < state_lengths[:, None]  # [B, S]
        index = state_index.masked_fill(~real, 0)  # padding slots read position 0, masked later

        with torch.autocast(device_type=hidden.device.type, enabled=False):
            h = torch.gather(hidden, 1, index[..., None].expand(B, S, d))  # [B, S, d]
            feats = torch.cat([h.float(), self.pos_embed(index).float()], dim=-1)  # [B, S, 2d]
            q = self._linear(self.query, feats).view(B, S, self.n_heads, self.head_dim)
            k = self._linear(self.key, feats).view(B, S, self.n_heads, self.head_dim)
            q, k = q.transpose(1, 2), k.transpose(1, 2)  # [B, H, S, hd]
            scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)  # [B, H, S, S]

            # allowed edges i -> j: strictly forward and j a real state (so i is real too)
            allowed = torch.ones(S, S, dtype=torch.bool, device=hidden.device).triu(1)
            allowed = allowed[None] & real[:, None, :]  # [B, S, S]
            has_successor = allowed.any(dim=-1, keepdim=True)  # [B, S, 1]
            # rows without successor get a dummy finite row so log_softmax stays finite
            scores = scores.masked_fill(~allowed[:, None], float("-inf"))
            scores = scores.masked_fill(~has_successor[:, None], 0.0)
            log_probs = F.log_softmax(scores, dim=-1)  # [B, H, S, S]
            # no -inf may enter logsumexp over heads: its backward would be exp(nan)
            log_probs = log_probs.masked_fill(~allowed[:, None], 0.0)

            log_gate = F.log_softmax(self._linear(self.gate, feats), dim=-1)  # [B, S, H]
            log_gate = log_gate.transpose(1, 2)[..., None]  # [B, H, S, 1]
            log_e = torch.logsumexp(log_probs + log_gate, dim=1)  # [B, S, S]
            return log_e.masked_fill(~allowed, float("-inf"))

    @staticmethod
    def _linear(layer: nn.Linear, x: torch.Tensor) -> torch.Tensor:
        """``layer(x)`` in float32 even when the module was cast to a 16-bit dtype."""
        return F.linear(x, layer.weight.float(), layer.bias.float())


class DescriptorHead(nn.Module):
    """Pre-training's auxiliary head: the BOS state regresses standardised descriptors.

    Like MolBERT's PhysChemPred, it asks the summary state to know the molecule's
    physico-chemical profile, which the token-level objectives never ask of it.
    """

    def __init__(self, d_model: int, n_out: int) -> None:
        super().__init__()
        self.dense = nn.Linear(d_model, d_model)
        self.out = nn.Linear(d_model, n_out)

    def forward(self, pooled: torch.Tensor) -> torch.Tensor:
        """Predicted standardised descriptors [B, n_out] from pooled states [B, d]."""
        return self.out(F.gelu(self.dense(pooled)))


class SmilesDecoder(nn.Module):
    """Pre-training's translation head: a GRU writes a molecule's canonical SMILES from
    one pooled state.

    CDDD's target: the encoder reads a randomised SMILES, and everything the decoder knows
    of the molecule passes through the pooled vector [d], so that vector has to hold the
    whole molecule, written in no particular order. Teacher-forced: the decoder reads
    the target's tokens up to each position.
    """

    def __init__(self, d_model: int, vocab_size: int, pad_id: int) -> None:
        super().__init__()
        self.start = nn.Linear(d_model, d_model)
        self.embed = nn.Embedding(vocab_size, d_model, padding_idx=pad_id)
        self.gru = nn.GRU(d_model, d_model, batch_first=True)
        self.out = nn.Linear(d_model, vocab_size)

    def forward(self, pooled: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """Logits [B, L, V] of the token after each of ``tokens`` [B, L], given the pooled
        states [B, d]."""
        h0 = torch.tanh(self.start(pooled)).unsqueeze(0)  # [1, B, d]: the GRU's first state
        states, _ = self.gru(self.embed(tokens), h0)  # [B, L, d]
        return self.out(states)


class PredictionHead(nn.Module):
    """Fine-tuning head on a pooled state: dropout -> Linear -> tanh -> dropout -> Linear.

    Its outputs are logits for a classifier and values for a regressor (fine-tuning folds
    the target scaling into the last layer).

    With ``n_features`` > 0 the head reads the pooled state [B, d] concatenated with that
    many per-molecule features [B, F] (descriptors beside the encoder, as chemprop feeds
    them beside its message passing); the hidden layer stays d wide.
    """

    def __init__(self, d_model: int, n_out: int, dropout: float = 0.1,
                 n_features: int = 0) -> None:
        super().__init__()
        self.n_features = n_features
        self.dropout = nn.Dropout(dropout)
        self.dense = nn.Linear(d_model + n_features, d_model)
        self.out = nn.Linear(d_model, n_out)
        for layer in (self.dense, self.out):
            nn.init.normal_(layer.weight, mean=0.0, std=0.02)
            nn.init.zeros_(layer.bias)

    def forward(self, pooled: torch.Tensor, features: torch.Tensor | None = None) -> torch.Tensor:
        """Outputs [B, n_out] from pooled states [B, d] (and features [B, F])."""
        if self.n_features:
            if features is None or features.shape[-1] != self.n_features:
                got = None if features is None else tuple(features.shape)
                raise ValueError(f"this head reads {self.n_features} features beside the "
                                 f"pooled state, got {got}")
            pooled = torch.cat([pooled, features.to(pooled.dtype)], dim=-1)
        elif features is not None and features.shape[-1]:
            raise ValueError(f"this head reads no features, got {tuple(features.shape)}")
        x = torch.tanh(self.dense(self.dropout(pooled)))
        return self.out(self.dropout(x))
