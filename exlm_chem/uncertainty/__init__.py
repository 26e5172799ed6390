"""Uncertainty for the estimators: SMILES augmentation, ensembles, calibration, conformal.

* :mod:`exlm_chem.data.augment` (moved there: fine-tuning uses it too): seeded randomized
  SMILES, training views per epoch and test-time views.
* :mod:`.ensemble`: member seeds, bootstrap rows, combining member x view outputs (with
  the tree head's, for the estimators' predictions).
* :mod:`.calibration`: isotonic / Platt maps of probabilities, stored as JSON.
* :mod:`.conformal`: split-conformal intervals for regression.
* :mod:`.scores`: Brier score, expected calibration error, interval coverage and width.
* :mod:`.reliability`: the reliability diagram.

Importing this package imports neither torch nor RDKit.
"""
