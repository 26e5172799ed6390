"""ExLMMoleculeRegressor memorises a small set: the regression path can learn at all.

A broken target scaling, loss mask or head would leave the training error near the
spread of the targets; a working one drives it far below."""

from __future__ import annotations

import numpy as np

from exlm_chem.sklearn.estimator import ExLMMoleculeRegressor


def test_regressor_overfits_24_molecules(tiny_checkpoint, moleculenet_dir) -> None:
    from exlm_chem.data.moleculenet import load_moleculenet

    data = load_moleculenet("freesolv")  # hydration free energies, kcal/mol, mean ~ -3.8
    X, y = data.smiles[:24], data.labels[:24, 0].astype(np.float64)
    reg = ExLMMoleculeRegressor(str(tiny_checkpoint), epochs=30, batch_size=8, lr=3e-3,
                                dropout=0.0, pooler_dropout=0.0, validation_fraction=0.0,
                                random_state=0, tree_head=False, train_layers=None).fit(X, y)
    rmse = float(np.sqrt(np.mean((reg.predict(X) - y) ** 2)))
    assert y.std() > 2.0  # the targets have a spread to memorise
    # 30 epochs reach rmse ~0.005 std (15: ~0.02, 150: ~0.00003); a broken path stays near 1
    assert rmse < 0.25 * y.std(), (rmse, y.std())
