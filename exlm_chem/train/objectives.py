"""Pre-training objectives: the ExLM states-alignment NLL and the plain-MLM twin, and the
molecule-level losses beside them (descriptor regression, SMILES equivalence, translation
to the canonical SMILES).

Both take a model and a batch from :mod:`exlm_chem.data.collate` and return an
:class:`ObjectiveOutput`. Samples whose DAG has no valid path are excluded from the
ExLM loss and *counted* (``n_invalid``), never silently zeroed.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F

from exlm_chem.dag import dag_best_alignment, dag_logprob
from exlm_chem.data.collate import IGNORE_INDEX, ExLMBatch, MLMBatch
from exlm_chem.model.pooling import masked_mean


class ObjectiveOutput(NamedTuple):
    """What an objective returns. Counts that depend on the data are 0-dim tensors on the
    model's device, so a training step never waits for the device to read them."""

    loss: torch.Tensor  # scalar, mean over valid samples (ExLM: -log P(Y) / T)
    n_samples: int  # samples in the batch
    n_invalid: torch.Tensor | int  # ExLM samples with no valid path (excluded from the loss)
    n_predicted: int  # masked tokens scored for accuracy (0 when not computed)
    n_correct: int  # of those, predicted exactly (argmax)
    aux_loss: torch.Tensor | None = None  # descriptor regression (MSE), when targets are given
    contrast_loss: torch.Tensor | None = None  # SMILES equivalence (InfoNCE), when views are given
    translate_loss: torch.Tensor | None = None  # canonical SMILES from the views (cross-entropy)


def state_emissions(model, hidden: torch.Tensor,
                    batch: ExLMBatch) -> tuple[torch.Tensor, torch.Tensor]:
    """The states' LM log-probabilities [B, S, V] (float32) and the DAG's emissions
    ``log P_s(y_t)`` [B, T, S] of the batch's targets, from its hidden states [B, X, d]."""
    index = batch.state_index.unsqueeze(-1).expand(-1, -1, hidden.size(-1))  # [B, S, d]
    states = torch.gather(hidden, 1, index)  # [B, S, d]
    log_probs = F.log_softmax(model.lm_head(states).float(), dim=-1)  # [B, S, V]
    target_index = batch.targets.unsqueeze(1).expand(-1, log_probs.size(1), -1)  # [B, S, T]
    return log_probs, torch.gather(log_probs, 2, target_index).transpose(1, 2)


def encode(model, batch: ExLMBatch | MLMBatch) -> torch.Tensor:
    """Hidden states [B, X, d] of a pre-training batch."""
    return model(batch.input_ids, batch.pos_original, batch.pos_copy, batch.padding_mask)


def descriptor_loss(model, hidden: torch.Tensor, targets: torch.Tensor, *,
                    clip: float | None = None,
                    columns: torch.Tensor | None = None) -> torch.Tensor:
    """Mean squared error of the descriptor head on the BOS state (position 0).

    Parameters
    ----------
    model : ExLMModel
        Its ``descriptor_head`` maps a BOS state [d] to the D descriptors.
    hidden : Tensor [B, X, d]
        The batch's hidden states.
    targets : Tensor [B, D]
        Standardised descriptors; NaN (not computable) entries are left out.
    clip : float or None
        Targets are clipped to ``±clip`` first (CheMeleon's clip of standardised targets);
        None: used as they are.
    columns : bool Tensor [D] or None
        The columns that count (a step's random share); None: all of them.

    Returns
    -------
    Tensor
        0-dim float32: the squared error summed over the counted entries, divided by their
        number (1 if there are none).
    """
    predicted = model.descriptor_head(hidden[:, 0]).float()  # [B, D]
    known = torch.isfinite(targets)
    if columns is not None:
        known = known & columns  # [B, D] & [D]: broadcast over the rows
    if clip is not None:
        targets = targets.clamp(-clip, clip)  # NaN stays NaN, still left out by `known`
    error = torch.where(known, predicted - torch.nan_to_num(targets), 0.0)
    return error.square().sum() / known.sum().clamp(min=1)


def equivalence_loss(hidden: torch.Tensor, padding_mask: torch.Tensor, view_hidden: torch.Tensor,
                     view_mask: torch.Tensor, temperature: float) -> torch.Tensor:
    """InfoNCE between two views of each molecule of a batch (SMILES equivalence).

    Each molecule's mean-pooled states must be closer (cosine) to those of its own other
    view than to any other molecule's, both ways: a molecule-level target that needs no
    labels. The pooling is the package's default ``mean``, so the loss shapes the vector
    that ``embed`` and the estimators read.

    Parameters
    ----------
    hidden : Tensor [B, X, d]
        States of the first view (the masked training input).
    padding_mask : bool Tensor [B, X]
        True on its real tokens.
    view_hidden : Tensor [B, Y, d]
        States of the second view (a randomised SMILES of the same molecules, same order).
    view_mask : bool Tensor [B, Y]
        True on its real tokens.
    temperature : float
        Divides the cosine similarities (> 0).

    Returns
    -------
    Tensor
        0-dim float32: the mean of the two directions' cross-entropies over the B x B
        similarities, the matching pairs on the diagonal (0 for a batch of one).
    """
    a = F.normalize(masked_mean(hidden, padding_mask).float(), dim=-1)  # [B, d]
    b = F.normalize(masked_mean(view_hidden, view_mask).float(), dim=-1)  # [B, d]
    logits = a @ b.T / temperature  # [B, B]: row i, column j = molecule i against view j
    match = torch.arange(len(logits), device=logits.device)
    return (F.cross_entropy(logits, match) + F.cross_entropy(logits.T, match)) / 2


def translation_loss(model, view_hidden: torch.Tensor, view_mask: torch.Tensor,
                     canonical: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Cross-entropy per token of the canonical SMILES written from a randomised one (CDDD).

    The randomised SMILES's states are mean-pooled (the package's default pooling) and
    the model's ``smiles_decoder`` writes the canonical tokens from that one vector,
    teacher-forced: it reads BOS .. token t-1 and is scored on token t, up to EOS.

    Parameters
    ----------
    model : ExLMModel
        With a ``smiles_decoder``.
    view_hidden : Tensor [B, Y, d]
        States of the randomised SMILES.
    view_mask : bool Tensor [B, Y]
        True on its real tokens.
    canonical : LongTensor [B, L]
        The canonical token ids, BOS to EOS, padded with ``pad_id``.
    pad_id : int
        The padding id (left out of the loss).

    Returns
    -------
    Tensor
        0-dim float32: the mean over the scored tokens (every token after BOS).
    """
    pooled = masked_mean(view_hidden, view_mask)  # [B, d]
    logits = model.smiles_decoder(pooled, canonical[:, :-1]).float()  # [B, L-1, V]
    target = canonical[:, 1:].masked_fill(canonical[:, 1:] == pad_id, IGNORE_INDEX)  # [B, L-1]
    return F.cross_entropy(logits.flatten(0, 1), target.flatten(), ignore_index=IGNORE_INDEX)


def exlm_loss(model, batch: ExLMBatch, with_accuracy: bool = False,
              hidden: torch.Tensor | None = None) -> ObjectiveOutput:
    """States-alignment NLL per target token, averaged over samples with a valid path.

    With ``with_accuracy`` the Viterbi alignment assigns each masked target to one state;
    a masked token counts as correct when that state's argmax is the target. ``hidden``:
    the batch's states when the caller has computed them already.
    """
    hidden = encode(model, batch) if hidden is None else hidden
    log_probs, emissions = state_emissions(model, hidden, batch)  # [B, S, V], [B, T, S]
    n_targets = batch.targets.size(1)
    log_transitions = model.transition_head(hidden, batch.state_index, batch.state_lengths)
    # collate builds the lengths, so the range check (a host sync per call) is skipped
    logprob = dag_logprob(emissions, log_transitions, batch.target_lengths, batch.state_lengths,
                          check_lengths=False)
    valid = torch.isfinite(logprob)
    per_token = -logprob / batch.target_lengths.to(logprob.dtype)
    # The mean over valid samples without boolean indexing or a Python branch on the data
    # (both wait for the device). With no valid sample the loss is 0 and still attached to
    # the graph, so every rank of a DDP step backpropagates.
    n_valid = valid.sum()
    loss = torch.where(valid, per_token, 0.0).sum() / n_valid.clamp(min=1).to(per_token.dtype)
    n_predicted = n_correct = 0
    if with_accuracy:
        with torch.no_grad():
            best = dag_best_alignment(
                emissions.detach(),
                log_transitions.detach(),
                batch.target_lengths,
                batch.state_lengths,
            )
            predicted = log_probs.argmax(-1)  # [B, S]
            t_idx = best.state_to_target  # [B, S], -1 where the state is not on the path
            # only masked targets count: not BOS (t=0) nor EOS (t=T_b-1)
            inner = (t_idx > 0) & (t_idx < (batch.target_lengths - 1).unsqueeze(1))
            inner &= valid.unsqueeze(1)
            gold = torch.gather(batch.targets, 1, t_idx.clamp(0, n_targets - 1))  # [B, S]
            n_correct = int(((predicted == gold) & inner).sum())
            n_predicted = int((batch.target_lengths[valid] - 2).sum())
    return ObjectiveOutput(loss, len(logprob), len(logprob) - n_valid, n_predicted, n_correct)


def mlm_loss(model, batch: MLMBatch, with_accuracy: bool = False,
             hidden: torch.Tensor | None = None) -> ObjectiveOutput:
    """Cross-entropy on the masked positions only (the SMILES-BERT twin)."""
    hidden = encode(model, batch) if hidden is None else hidden
    # every position is scored and IGNORE_INDEX left out by cross_entropy: selecting the
    # masked rows first (hidden[labels != IGNORE_INDEX]) would wait for the device to
    # count them; the LM head is a small part of a step either way
    logits = model.lm_head(hidden).float()  # [B, N, V]
    loss = F.cross_entropy(logits.flatten(0, 1), batch.labels.flatten(), ignore_index=IGNORE_INDEX)
    n_predicted = n_correct = 0
    if with_accuracy:
        selected = batch.labels != IGNORE_INDEX  # [B, N]
        n_predicted = int(selected.sum())
        n_correct = int(((logits.argmax(-1) == batch.labels) & selected).sum())
    return ObjectiveOutput(loss, batch.input_ids.size(0), 0, n_predicted, n_correct)
