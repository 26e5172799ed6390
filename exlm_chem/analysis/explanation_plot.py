"""The case-study figure: heatmap of the transitions with the Viterbi path, visit bars."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import numpy as np

from exlm_chem.analysis.explanation import Explanation, StateInfo

__all__ = ["plot_explanation"]

_KIND_COLOURS = ("#c9a227", "#8b5a2b", "#2e7d32", "#6a1b9a", "#1565c0", "#c62828")


def _state_colour(info: StateInfo) -> str:
    if info.mask_index is None:
        return "#555555"
    return _KIND_COLOURS[(info.mask_index - 1) % len(_KIND_COLOURS)]


def _axis_labels(explanation: Explanation) -> list[str]:
    labels = []
    for info, tokens, probs in zip(explanation.states, explanation.top_tokens,
                                   explanation.top_probs, strict=True):
        shown = ", ".join(f"{t} {p:.2f}" for t, p in zip(tokens, probs, strict=True))
        labels.append(f"{info.label}: {shown}")
    return labels


def plot_explanation(
    explanation: Explanation, path: str | os.PathLike[str], dpi: int = 150,
    annotate: bool | None = None,
) -> Path:
    """Draw the case-study figure and save it (format from the suffix, e.g. ``.png``).

    Left: the heatmap of ``E`` (rows: from-state, columns: to-state; non-edges grey),
    each axis labelled with the states' top-k tokens and probabilities and coloured by
    the ``[MASK]`` they copy; the Viterbi path is drawn in red as a staircase through
    the cells of its edges. Right: the visit probability of each state, Viterbi states
    in red. Uses matplotlib's Agg canvas directly, so no global backend is changed.

    Parameters
    ----------
    explanation : Explanation
    path : str or PathLike
        Output file.
    dpi : int
    annotate : bool or None
        Print each edge probability in its cell (default: when S <= 16).

    Returns
    -------
    Path
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    e = np.asarray(explanation.transitions, dtype=float)
    n = e.shape[0]
    annotate = n <= 16 if annotate is None else annotate
    labels = _axis_labels(explanation)
    side = max(5.0, 0.45 * n + 3.0)
    fig = Figure(figsize=(side + 3.2, side), layout="constrained")
    FigureCanvasAgg(fig)
    grid = fig.add_gridspec(1, 2, width_ratios=[max(n, 4), 3])
    ax = fig.add_subplot(grid[0, 0])
    bar_ax = fig.add_subplot(grid[0, 1], sharey=ax)

    shown = np.ma.masked_where(~np.triu(np.ones((n, n), dtype=bool), 1), e)
    image = ax.imshow(shown, cmap="Blues", vmin=0.0, vmax=1.0, aspect="equal")
    ax.set_facecolor("#e6e6e6")
    fig.colorbar(image, ax=ax, shrink=0.6, label="transition probability E[u, v]")
    ax.set_xticks(range(n), labels=labels, rotation=90, fontsize=7)
    ax.set_yticks(range(n), labels=labels, fontsize=7)
    for ticks in (ax.get_xticklabels(), ax.get_yticklabels()):
        for tick, info in zip(ticks, explanation.states, strict=True):
            tick.set_color(_state_colour(info))
    ax.set_xlabel("to state")
    ax.set_ylabel("from state")
    if annotate:
        for u in range(n):
            for v in range(u + 1, n):
                if e[u, v] >= 0.005:
                    ax.text(v, u, f"{e[u, v]:.2f}", ha="center", va="center", fontsize=6,
                            color="white" if e[u, v] > 0.6 else "black")
    path_states = list(explanation.viterbi_path)
    # edge u -> v is cell (row u, column v); the next edge starts on row v, reached
    # through the diagonal cell (v, v): a staircase
    edges = list(itertools.pairwise(path_states))
    staircase_x = [x for u, v in edges for x in (u, v)]
    staircase_y = [y for u, _ in edges for y in (u, u)]
    ax.plot(staircase_x, staircase_y, color="#d62728", linewidth=1.5, alpha=0.8)
    ax.scatter([v for _, v in edges], [u for u, _ in edges], s=60, facecolors="none",
               edgecolors="#d62728", linewidths=1.5, zorder=3, label="Viterbi path")
    ax.legend(loc="lower left", fontsize=7)

    on_path = set(path_states)
    colours = ["#d62728" if s in on_path else "#7f7f7f" for s in range(n)]
    bar_ax.barh(range(n), explanation.visit_probability, color=colours)
    bar_ax.set_xlim(0.0, 1.0)
    bar_ax.set_xlabel("visit probability")
    bar_ax.tick_params(axis="y", labelleft=False)
    for s, p in enumerate(explanation.visit_probability):
        bar_ax.text(min(p + 0.02, 0.8), s, f"{p:.2f}", va="center", fontsize=6)

    fill = " | ".join(" ".join(f) or "∅" for f in explanation.fill_in)
    fig.suptitle(f"{explanation.smiles}  (k={explanation.k})\nViterbi fill-in: {fill}  ->  "
                 f"{explanation.filled_smiles}", fontsize=9)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=dpi)
    return out
