"""Screening and embedding of large SMILES libraries on a Dask cluster.

The driver (:mod:`~exlm_chem.screening.run`) streams the input files in fixed-size chunks
(:mod:`~exlm_chem.screening.inputs`) and sends each chunk to a worker
(:mod:`~exlm_chem.screening.worker`), which predicts or embeds it with a model loaded once
per worker process and writes one Parquet part atomically. The output directory's
manifest (:mod:`~exlm_chem.screening.manifest`) ties the parts to one model and one set of
settings, so that a rerun resumes and a different model is refused.

>>> from exlm_chem import screen  # doctest: +SKIP
>>> result = screen("runs/bbbp_model", ["library/*.smi.gz"], "runs/screen")  # doctest: +SKIP
>>> result.summary.rows, result.summary.invalid_rows  # doctest: +SKIP
"""

from __future__ import annotations

from exlm_chem._lazy import lazy_attributes

# defining module -> its public names
_MODULES = {
    "exlm_chem.screening.run": "screen ScreenResult ScreenSummary",
}
__getattr__, __dir__, _LAZY = lazy_attributes("exlm_chem.screening", _MODULES, globals())
__all__ = list(_LAZY)
