"""RDKit 2D descriptors and the scaler that travels with a checkpoint."""

from __future__ import annotations

import numpy as np
import pytest

from exlm_chem.data.descriptors import (
    LIMIT,
    DescriptorScaler,
    compute_descriptors,
    descriptor_names,
)


def test_rows_follow_the_input_and_an_unparsable_smiles_is_a_nan_row():
    names = descriptor_names("rdkit2d")
    values = compute_descriptors(["CCO", "C1CC(N", "c1ccccc1O"])
    assert values.shape == (3, len(names)) and values.dtype == np.float32
    assert np.isnan(values[1]).all()
    weight = names.index("MolWt")
    assert values[0, weight] == pytest.approx(46.069, abs=1e-2)
    assert values[2, weight] == pytest.approx(94.113, abs=1e-2)
    assert np.isfinite(values[[0, 2]]).mean() > 0.95


def test_worker_processes_give_the_same_rows(monkeypatch):
    import exlm_chem.data.descriptors as module

    monkeypatch.setattr(module, "_CHUNK", 2)  # several chunks over two processes
    smiles = ["CCO", "CCN", "c1ccccc1", "CC(=O)O", "C1CC(N", "CCCl"]
    serial = compute_descriptors(smiles, n_jobs=1)
    parallel = compute_descriptors(smiles, n_jobs=2)
    np.testing.assert_array_equal(np.isnan(serial), np.isnan(parallel))
    np.testing.assert_allclose(np.nan_to_num(serial), np.nan_to_num(parallel))


def test_unknown_set_is_refused():
    with pytest.raises(ValueError, match="unknown descriptor set 'mordred'"):
        descriptor_names("mordred")


def test_scaler_clips_standardises_keeps_nan_and_round_trips():
    rng = np.random.default_rng(0)
    values = rng.normal(5.0, 2.0, size=(5000, 3)).astype(np.float32)
    values[:, 1] = 7.0  # constant: std 1, target 0
    values[0, 2] = 1e30  # an Ipc-like outlier
    values[1, 0] = np.nan
    scaler = DescriptorScaler.fit(values, ["a", "b", "c"])
    z = scaler.transform(values)
    assert np.isnan(z[1, 0]) and np.isfinite(np.delete(z, 1, axis=0)).all()
    assert np.abs(np.nanmean(z[:, 0])) < 0.05 and abs(np.nanstd(z[:, 0]) - 1) < 0.05
    assert (z[:, 1] == 0).all() and scaler.std[1] == 1.0
    assert z[0, 2] <= LIMIT and np.nanmax(np.abs(z)) <= LIMIT and z[2:, 2].std() > 0.5
    again = DescriptorScaler.from_dict(scaler.to_dict())
    np.testing.assert_array_equal(again.transform(values), z)
    with pytest.raises(ValueError, match="one value per name"):
        DescriptorScaler.from_dict({**scaler.to_dict(), "names": ["a"]})
