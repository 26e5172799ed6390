"""Reliability diagram: observed positive rate against mean predicted probability."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from exlm_chem.uncertainty.scores import ECE_BINS, ece_bins, reliability_bins

__all__ = ["reliability_diagram"]


def reliability_diagram(curves: Mapping[str, tuple[np.ndarray, np.ndarray]],
                        path: str | os.PathLike[str], title: str = "",
                        n_bins: int = ECE_BINS) -> Path:
    """Write a PNG with one line per entry of ``curves`` (``name -> (labels, proba)``,
    1-D 0/1 labels and positive-class probabilities), ECE in the legend.

    Bins with no molecule are not drawn; the diagonal is perfect calibration.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 5))
    ax.plot([0, 1], [0, 1], color="grey", linestyle=":", linewidth=1)
    for name, (truth, proba) in curves.items():
        truth, proba = np.asarray(truth, dtype=np.float64), np.asarray(proba, dtype=np.float64)
        count, mean_p, rate = reliability_bins(truth, proba, n_bins)
        used = count > 0
        ax.plot(mean_p[used], rate[used], marker="o", markersize=3,
                label=f"{name} (ECE {ece_bins(truth, proba, n_bins):.3f})")
    ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="mean predicted probability",
           ylabel="observed positive rate", title=title)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
