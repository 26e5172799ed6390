"""Prediction entropy at masked positions (paper, appendices E and Q.1).

``H[P] = -sum_x P(x) log P(x)`` over the vocabulary, in bits by default (the paper's
Figure 5 reports bits). What ``P`` is depends on the checkpoint's objective
(``config.objective``):

* MLM: the LM distribution at each masked position of the unexpanded input.
* ExLM: each ``[MASK]`` is expanded to k states and a masked token has no fixed state.
  ``aligned`` entropy: the Viterbi alignment of the gold targets ``[BOS, masked tokens,
  EOS]`` to the states (:func:`exlm_chem.dag.dag_best_alignment`, the same alignment the
  pre-training accuracy uses) assigns each masked token one state; its entropy is that
  state's. ``state`` entropy: the mean over every expanded ``[MASK]`` state, aligned or
  not (BOS/EOS copies excluded).

:func:`masked_entropy` masks each molecule with :func:`exlm_chem.data.collate.mask_tokens`
using a generator seeded by ``(seed, ratio, row)``, so every checkpoint sees the very same
masks and the table compares models on identical inputs.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

__all__ = [
    "EntropyRow",
    "TargetEntropies",
    "batch_entropies",
    "entropy_frame",
    "entropy_markdown",
    "mask_for_entropy",
    "masked_entropy",
    "plot_entropy",
]


class TargetEntropies(NamedTuple):
    """Entropies of one batch, per sample.

    Attributes
    ----------
    aligned : list of numpy.ndarray
        Per sample, [M_b]: the entropy of the distribution that predicts each masked
        target, in target order (MLM: at its position; ExLM: at its Viterbi-aligned
        state). Empty for an ExLM sample without a valid path.
    mask_states : list of numpy.ndarray
        Per sample: ExLM, [k * M_b] entropy of every expanded ``[MASK]`` state; MLM, the
        same values as ``aligned``.
    valid : numpy.ndarray
        [B] bool; False for ExLM samples whose DAG has no path (never for MLM).
    """

    aligned: list[np.ndarray]
    mask_states: list[np.ndarray]
    valid: np.ndarray


class EntropyRow(NamedTuple):
    """One line of the entropy table: a model at one mask ratio."""

    model: str  # label of the checkpoint
    objective: str  # "exlm" or "mlm"
    k_states: int  # expanded states per [MASK] (1 for MLM)
    mask_ratio: float
    n_molecules: int
    n_targets: int  # masked tokens scored
    mean: float  # mean entropy of the masked tokens (ExLM: of their aligned states)
    std: float  # their standard deviation (ddof=0)
    state_mean: float  # ExLM: mean over all expanded [MASK] states; MLM: NaN
    state_std: float  # ExLM: their standard deviation; MLM: NaN
    n_invalid: int  # ExLM molecules without a DAG path (left out)
    unit: str  # "bits" or "nats"


def _entropy(log_probs: Any, base: float) -> Any:
    """Entropy of each distribution along the last axis, from log probabilities."""
    import torch

    return -(torch.exp(log_probs) * log_probs).sum(-1) / math.log(base)


def batch_entropies(model: Any, batch: Any, base: float = 2.0) -> TargetEntropies:
    """Entropies of the masked targets of one collated batch.

    Parameters
    ----------
    model : ExLMModel
        In eval mode (``load_checkpoint`` returns it so).
    batch : ExLMBatch or MLMBatch
        From :func:`~exlm_chem.data.collate.collate_exlm` /
        :func:`~exlm_chem.data.collate.collate_mlm`.
    base : float
        Logarithm base (2: bits, e: nats).

    Returns
    -------
    TargetEntropies
    """
    import torch
    import torch.nn.functional as F

    from exlm_chem.dag import dag_best_alignment
    from exlm_chem.data.collate import IGNORE_INDEX, ExLMBatch
    from exlm_chem.train.objectives import state_emissions

    with torch.inference_mode():
        hidden = model(batch.input_ids, batch.pos_original, batch.pos_copy, batch.padding_mask)
        if not isinstance(batch, ExLMBatch):
            selected = batch.labels != IGNORE_INDEX  # [B, N]
            log_probs = F.log_softmax(model.lm_head(hidden[selected]).float(), dim=-1)  # [M, V]
            flat = _entropy(log_probs, base).double().cpu().numpy()
            counts = selected.sum(1).cpu().numpy()
            per_sample = np.split(flat, np.cumsum(counts)[:-1])
            return TargetEntropies(per_sample, per_sample, np.ones(len(counts), dtype=bool))

        log_probs, emissions = state_emissions(model, hidden, batch)  # [B, S, V], [B, T, S]
        entropy = _entropy(log_probs, base).double().cpu().numpy()  # [B, S]
        n_states = log_probs.size(1)
        log_e = model.transition_head(hidden, batch.state_index, batch.state_lengths)
        best = dag_best_alignment(emissions, log_e, batch.target_lengths, batch.state_lengths)
    state_ids = torch.gather(batch.input_ids, 1, batch.state_index).cpu().numpy()  # [B, S]
    lengths = batch.state_lengths.cpu().numpy()
    valid = np.isfinite(best.logprob.cpu().numpy())
    aligned, mask_states = [], []
    for b in range(len(lengths)):
        real = np.arange(n_states) < lengths[b]
        mask_states.append(entropy[b, real & (state_ids[b] == model.config.mask_id)])
        path = best.path[b].cpu().numpy()
        # path[t] is the state emitting target t; targets 1..T-2 are the masked tokens
        aligned.append(entropy[b, path[1:-1]] if valid[b] else np.zeros(0))
    return TargetEntropies(aligned, mask_states, valid)


def mask_for_entropy(
    ids: np.ndarray, ratio: float, seed: int, row: int, special: Any
) -> Any:
    """The mask :func:`masked_entropy` applies to molecule ``row`` at ``ratio``.

    ``mask_tokens`` with a generator seeded by ``(seed, round(ratio * 1e6), row)``: the
    same for every checkpoint and independent of batching.
    """
    from exlm_chem.data.collate import mask_tokens

    rng = np.random.default_rng([seed, round(ratio * 1_000_000), row])
    return mask_tokens(ids, ratio, rng, special)


def _label(path: Path) -> str:
    # a run's checkpoint is usually ".../<run>/checkpoint": the run name says more
    return f"{path.parent.name}/{path.name}" if path.name == "checkpoint" else path.name


def masked_entropy(
    model_dir: str | os.PathLike[str] | Any,
    smiles: Sequence[str],
    mask_ratios: Sequence[float] = (0.15, 0.3, 0.5),
    seed: int = 0,
    batch_size: int = 32,
    max_length: int = 256,
    base: float = 2.0,
    device: str = "cpu",
    label: str | None = None,
) -> list[EntropyRow]:
    """Mean and standard deviation of the masked-token entropy per mask ratio.

    Parameters
    ----------
    model_dir : str, PathLike or LoadedModel
        Checkpoint directory (``"default"`` allowed) or an already loaded model; the
        objective is read from its config.
    smiles : sequence of str
        Molecules (tokens outside the vocabulary become ``[UNK]``).
    mask_ratios : sequence of float
        Shares of each molecule's tokens to mask (see ``mask_tokens``), in (0, 1].
    seed : int
        Mask seed; equal seeds give equal masks across checkpoints.
    batch_size : int
        Molecules per forward pass.
    max_length : int
        Tokens per molecule incl. BOS/EOS; longer ones are truncated.
    base : float
        2 for bits (default), ``math.e`` for nats.
    device : str
        Torch device.
    label : str, optional
        Name in the table (default: from the directory name).

    Returns
    -------
    list of EntropyRow
        One per ratio, in the given order.

    Raises
    ------
    ValueError
        Empty input, an empty SMILES (its row is named) or a ratio outside (0, 1].
    """
    from exlm_chem.analysis import LoadedModel, load_model
    from exlm_chem.data.collate import SpecialIds, collate_exlm, collate_mlm
    from exlm_chem.data.featurize import smiles_sequence

    smiles = list(smiles_sequence(smiles, "smiles"))  # before loading a model
    loaded = model_dir if isinstance(model_dir, LoadedModel) else load_model(model_dir, device)
    net, config, tokenizer = loaded.model, loaded.config, loaded.tokenizer
    net.eval()
    if not smiles:
        raise ValueError("no SMILES given")
    for ratio in mask_ratios:
        if not 0.0 < float(ratio) <= 1.0:
            raise ValueError(f"mask ratios must be in (0, 1], got {ratio!r}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    encoded = []
    for row, s in enumerate(smiles):
        if not isinstance(s, str) or not s.strip():
            raise ValueError(f"row {row}: empty SMILES ({s!r})")
        encoded.append(np.asarray(tokenizer.encode(s.strip(), max_length=max_length), np.int64))
    special = SpecialIds(config.bos_id, config.pad_id, config.eos_id, config.mask_id)
    is_exlm = config.objective == "exlm"
    name = label or _label(Path(loaded.path))

    rows = []
    for ratio in mask_ratios:
        aligned, states, n_invalid = [], [], 0
        for start in range(0, len(encoded), batch_size):
            samples = [mask_for_entropy(ids, float(ratio), seed, start + i, special)
                       for i, ids in enumerate(encoded[start : start + batch_size])]
            batch = (collate_exlm(samples, config.k_states, special) if is_exlm
                     else collate_mlm(samples, special))
            batch = type(batch)(*(t.to(device) for t in batch))
            result = batch_entropies(net, batch, base)
            aligned.extend(result.aligned)
            states.extend(result.mask_states)
            n_invalid += int((~result.valid).sum())
        a = np.concatenate(aligned) if aligned else np.zeros(0)
        s = np.concatenate(states) if states else np.zeros(0)
        rows.append(EntropyRow(
            model=name, objective=config.objective,
            k_states=config.k_states if is_exlm else 1, mask_ratio=float(ratio),
            n_molecules=len(encoded), n_targets=int(a.size),
            mean=float(a.mean()) if a.size else math.nan,
            std=float(a.std()) if a.size else math.nan,
            state_mean=float(s.mean()) if is_exlm and s.size else math.nan,
            state_std=float(s.std()) if is_exlm and s.size else math.nan,
            n_invalid=n_invalid, unit="bits" if base == 2 else "nats" if base == math.e
            else f"log{base:g}",
        ))
    return rows


def entropy_frame(rows: Sequence[EntropyRow]) -> Any:
    """The rows as a pandas DataFrame (one column per field)."""
    import pandas as pd

    return pd.DataFrame([r._asdict() for r in rows], columns=list(EntropyRow._fields))


def entropy_markdown(rows: Sequence[EntropyRow]) -> str:
    """A markdown table: model, objective, k, ratio, masked-token and all-state entropy."""
    unit = rows[0].unit if rows else "bits"

    def pm(mean: float, std: float) -> str:
        return "–" if math.isnan(mean) else f"{mean:.3f} ± {std:.3f}"

    lines = [
        f"| model | objective | k | mask ratio | molecules | masked tokens | "
        f"entropy ({unit}) | all [MASK] states ({unit}) | invalid |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r.model} | {r.objective} | {r.k_states} | {r.mask_ratio:g} | "
                     f"{r.n_molecules} | {r.n_targets} | {pm(r.mean, r.std)} | "
                     f"{pm(r.state_mean, r.state_std)} | {r.n_invalid} |")
    return "\n".join(lines) + "\n"


def plot_entropy(rows: Sequence[EntropyRow], path: str | os.PathLike[str], dpi: int = 150
                 ) -> Path:
    """Entropy vs mask ratio, one line per model (±1 std band); ExLM's all-state mean
    dashed. Drawn on matplotlib's Agg canvas (no global backend change)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.0, 4.0), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    models = list(dict.fromkeys(r.model for r in rows))
    for i, name in enumerate(models):
        mine = sorted((r for r in rows if r.model == name), key=lambda r: r.mask_ratio)
        x = np.array([r.mask_ratio for r in mine])
        y = np.array([r.mean for r in mine])
        sd = np.array([r.std for r in mine])
        colour = f"C{i % 10}"
        ax.plot(x, y, marker="o", color=colour, label=f"{name} ({mine[0].objective})")
        ax.fill_between(x, y - sd, y + sd, color=colour, alpha=0.15)
        if mine[0].objective == "exlm":
            ax.plot(x, [r.state_mean for r in mine], linestyle="--", marker=".",
                    color=colour, label=f"{name}: all [MASK] states")
    ax.set_xlabel("mask ratio")
    ax.set_ylabel(f"entropy of masked-token prediction ({rows[0].unit if rows else 'bits'})")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=dpi)
    return out
