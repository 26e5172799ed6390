"""Uncertainty for the estimators: SMILES augmentation, ensembles, calibration, conformal.

* :mod:`exlm_chem.data.augment` (moved there: fine-tuning uses it too): seeded randomized
  SMILES, training views per epoch and test-time views.
* :mod:`.ensemble`: member seeds, bootstrap rows, member x view outputs combined into
  their mean and spreads (the estimators' prediction, with the tree head's, is
  :mod:`exlm_chem.sklearn.ensemble`'s).
* :mod:`.calibration`: isotonic / Platt maps of probabilities, stored as JSON.
* :mod:`.conformal`: split-conformal intervals for regression.
* :mod:`.scores`: Brier score, expected calibration error, interval coverage and width.
* :mod:`.reliability`: the reliability diagram.

Importing this package imports neither torch nor RDKit.
"""
