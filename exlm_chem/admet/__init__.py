"""The ADMET panel: every endpoint scored in one call, from models shipped in the repository.

>>> from exlm_chem.admet import predict  # doctest: +SKIP
>>> table = predict(["CCO", "c1ccc2c(c1)cc[nH]2"])  # doctest: +SKIP

:func:`predict` (and ``exlm-chem admet``) gives one row per molecule: each endpoint's
calibrated probability or value with conformal intervals, its applicability-domain flag and
its percentile among approved drugs, beside computed properties and structural alerts
(:mod:`exlm_chem.admet.panel`). ``exlm-chem admet build`` fits the panel
(:mod:`exlm_chem.admet.build`, :mod:`exlm_chem.admet.assemble`) or adds a user's endpoint to
a copy of it (:mod:`exlm_chem.admet.user`).
"""

from exlm_chem._lazy import lazy_attributes

# defining module -> its public names (lazy: importing exlm_chem.admet loads no RDKit)
_MODULES = {
    "exlm_chem.admet.endpoints": "ENDPOINTS Endpoint units_table",
    "exlm_chem.admet.panel": "Panel predict",
    "exlm_chem.admet.user": "add_endpoint",
}

__getattr__, __dir__, _LAZY = lazy_attributes("exlm_chem.admet", _MODULES, globals())

__all__ = [*_LAZY]
