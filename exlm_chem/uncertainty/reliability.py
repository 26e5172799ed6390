"""Reliability diagram: observed positive rate against mean predicted probability."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from exlm_chem.uncertainty.scores import ECE_BINS, ece_bins, reliability_bins

__all__ = ["reliability_diagram"]

Curves = Mapping[str, tuple[np.ndarray, np.ndarray]]  # name -> (0/1 labels [N], proba [N])


def reliability_diagram(panels: Mapping[str, Curves], path: str | os.PathLike[str],
                        title: str = "", n_bins: int = ECE_BINS) -> Path:
    """Write a PNG with one panel per entry of ``panels`` (panel title -> curves), one
    line per curve, its ECE in the legend.

    Bins are ``n_bins`` equal-width probability bins; empty ones are not drawn and a
    marker's area grows with its bin's share of molecules. The dotted diagonal is perfect
    calibration.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 5), squeeze=False)
    for ax, (panel, curves) in zip(axes[0], panels.items(), strict=True):
        ax.plot([0, 1], [0, 1], color="grey", linestyle=":", linewidth=1)
        for name, (truth, proba) in curves.items():
            truth = np.asarray(truth, dtype=np.float64)
            proba = np.asarray(proba, dtype=np.float64)
            count, mean_p, rate = reliability_bins(truth, proba, n_bins)
            used = count > 0
            (line,) = ax.plot(mean_p[used], rate[used], linewidth=1,
                              label=f"{name} (ECE {ece_bins(truth, proba, n_bins):.3f})")
            # marker area grows with the bin's molecules: a lone molecule's bin is noise
            ax.scatter(mean_p[used], rate[used], s=4 + 60 * count[used] / count.sum(),
                       color=line.get_color())
        ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="mean predicted probability",
               ylabel="observed positive rate", title=panel)
        if curves:
            ax.legend(fontsize=7, loc="upper left")
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
