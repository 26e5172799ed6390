"""RDKit 2D descriptors and Morgan counts per molecule, and their train-fitted scaling."""

from __future__ import annotations

import numpy as np
import pytest

from exlm_chem.data import descriptors, feature_spec
from exlm_chem.data.descriptors import (
    FAST_NAMES,
    descriptor_values,
    feature_names,
    molecule_features,
    morgan_counts,
    rdkit2d_descriptors,
    rdkit2d_names,
)
from exlm_chem.data.feature_spec import CLIP, FeatureScaler, FeatureSpec, feature_kinds

SMILES = ["CCO", "c1ccccc1O", "CC(=O)Oc1ccccc1C(=O)O", "[Na+].[Cl-]", "C1CC"]


def test_rdkit2d_is_rdkits_descriptor_list_row_aligned_with_nan_for_unparsable():
    from rdkit import Chem
    from rdkit.Chem import Descriptors

    values, names = rdkit2d_descriptors(SMILES)
    assert names == [n for n, _ in Descriptors._descList] == rdkit2d_names()
    assert values.shape == (5, len(names)) and values.dtype == np.float32
    assert np.isnan(values[4]).all()  # "C1CC" does not parse: a NaN row, nothing shifts
    expected = Descriptors.CalcMolDescriptors(Chem.MolFromSmiles("c1ccccc1O"))
    np.testing.assert_allclose(values[1], np.array([expected[n] for n in names], np.float32),
                               rtol=1e-6)


def test_fast_kind_computes_its_names_row_aligned_with_nan_for_unparsable():
    from rdkit import Chem
    from rdkit.Chem import Descriptors

    values, names = descriptor_values("rdkit2d_fast", SMILES, n_jobs=1)
    assert names == list(FAST_NAMES) == feature_names("rdkit2d_fast") and len(names) == 35
    assert set(names) <= set(rdkit2d_names())
    assert values.shape == (5, 35) and values.dtype == np.float32
    assert np.isnan(values[4]).all() and np.isfinite(values[:4]).all()
    for row in (1, 2):  # the same numbers as RDKit's own descriptor call
        expected = Descriptors.CalcMolDescriptors(Chem.MolFromSmiles(SMILES[row]))
        np.testing.assert_allclose(values[row], np.array([expected[n] for n in names],
                                                         np.float32), rtol=1e-6)
    # and the same columns as in the full set: a subset, computed alike
    full, all_names = rdkit2d_descriptors(SMILES[:4])
    np.testing.assert_array_equal(values[:4], full[:4, [all_names.index(n) for n in names]])
    # the estimators' features= option takes it like the other kinds
    assert feature_kinds("rdkit2d_fast") == ("rdkit2d_fast",)
    np.testing.assert_array_equal(molecule_features(["rdkit2d_fast"], SMILES[:2]), values[:2])
    with pytest.raises(ValueError, match="unknown feature kind 'rdkit3d'"):
        descriptor_values("rdkit3d", SMILES)


def test_fast_names_missing_from_the_installed_rdkit_are_named(monkeypatch):
    from rdkit.Chem import Descriptors

    monkeypatch.setattr(Descriptors, "_descList",
                        [d for d in Descriptors._descList if d[0] not in ("TPSA", "MolMR")])
    with pytest.raises(ValueError, match=r"no descriptor TPSA, MolMR of the rdkit2d_fast set"):
        descriptor_values("rdkit2d_fast", ["CCO"])


def test_morgan_counts_are_radius_2_counts():
    values, names = morgan_counts(["CCO", "CCCCCC"])
    assert values.shape == (2, 2048) and len(names) == 2048 and names[0] == "morgan_r2_0"
    assert values[1].max() > 1  # counts, not bits: hexane repeats its CH2 environments


def test_a_descriptor_rdkit_cannot_compute_is_nan(monkeypatch):
    from rdkit.Chem import Descriptors

    def broken(mol):
        raise RuntimeError("no")

    desc = list(Descriptors._descList)
    monkeypatch.setattr(Descriptors, "_descList", [desc[0], ("Broken", broken), desc[1]])
    values, names = rdkit2d_descriptors(["CCO", "CCN"])
    assert names[1] == "Broken" and np.isnan(values[:, 1]).all()
    assert np.isfinite(values[:, [0, 2]]).all()


def test_values_beyond_float32_become_nan(monkeypatch):
    from rdkit.Chem import Descriptors

    monkeypatch.setattr(Descriptors, "_descList", [("Huge", lambda mol: 1e300)])
    values, _ = rdkit2d_descriptors(["CCO"])
    assert np.isnan(values).all()


def test_each_distinct_smiles_is_computed_once_and_remembered(monkeypatch):
    calls = []
    real = descriptors._compute

    def counting(kind, smiles):
        calls.append(list(smiles))
        return real(kind, smiles)

    monkeypatch.setattr(descriptors, "_compute", counting)
    monkeypatch.setattr(descriptors, "MEMO", descriptors.RowMemo(descriptors.MEMO_BYTES))
    first = molecule_features(["rdkit2d", "morgan"], ["CCO", "CCN", "CCO"])
    assert calls == [["CCO", "CCN"], ["CCO", "CCN"]]
    np.testing.assert_array_equal(first[0], first[2])
    again = molecule_features(["rdkit2d", "morgan"], ["CCN", "CCO"])
    assert len(calls) == 2  # remembered from the first call
    np.testing.assert_array_equal(again, first[[1, 0]])
    again[:] = 0  # the caller's array is its own: the memo keeps its rows
    np.testing.assert_array_equal(molecule_features(["rdkit2d", "morgan"], ["CCN", "CCO"]),
                                  first[[1, 0]])
    mixed = molecule_features(["morgan"], ["CCC", "CCO"])
    assert calls[2:] == [["CCC"]]  # only the new molecule
    np.testing.assert_array_equal(mixed[1], first[0, -2048:])
    assert molecule_features([], ["CCO"]).shape == (1, 0)


def test_the_memo_drops_the_least_recently_used_rows_past_its_size():
    memo = descriptors.RowMemo(max_bytes=2 * 3 * 4)  # two rows of 3 float32
    memo.put(("k", "a"), np.ones(3))
    memo.put(("k", "b"), np.ones(3))
    assert memo.get(("k", "a")) is not None  # now "b" is the least recently used
    memo.put(("k", "c"), np.ones(3))
    assert memo.get(("k", "b")) is None and len(memo) == 2
    memo.put(("k", "a"), np.zeros(3))  # replaced, not added
    assert len(memo) == 2 and memo.get(("k", "a")).sum() == 0
    assert memo.get(("k", "c")).dtype == np.float32
    memo.clear()
    assert len(memo) == 0 and memo.get(("k", "a")) is None


def test_parallel_computation_gives_the_same_rows(monkeypatch):
    from exlm_chem.data import process_map

    monkeypatch.setattr(process_map, "available_cores", lambda: 2)  # a pool on any machine
    monkeypatch.setitem(descriptors._MIN_PER_WORKER, "rdkit2d", 2)
    monkeypatch.setattr(descriptors, "_CHUNK", 3)
    smiles = SMILES * 2
    serial, _ = rdkit2d_descriptors(smiles, n_jobs=1)
    parallel, _ = rdkit2d_descriptors(smiles, n_jobs=2)
    np.testing.assert_array_equal(np.isnan(serial), np.isnan(parallel))
    np.testing.assert_allclose(np.nan_to_num(serial), np.nan_to_num(parallel))


def test_scaler_is_robust_fills_missing_with_the_median_and_clips():
    train = np.array([[1.0, 0.0, np.nan], [2.0, 0.0, np.nan], [3.0, 0.0, np.nan],
                      [4.0, 1.0, np.nan], [1000.0, 0.0, np.nan]])
    scaler = FeatureScaler.fit(train)
    assert scaler.center.tolist() == [3.0, 0.0, 0.0]
    assert scaler.scale[0] == pytest.approx(2.0 / 1.349)  # IQR 2..4, not the outlier's std
    assert scaler.scale[1] == pytest.approx(np.std([0, 0, 0, 1, 0]))  # IQR 0: std
    assert scaler.scale[2] == 1.0  # nothing seen in training
    out = scaler.transform(np.array([[3.0, np.nan, 7.0], [np.inf, 0.0, np.nan],
                                     [1e9, -np.inf, 1.0]]))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out[0], [0.0, 0.0, CLIP])  # 7 - 0 = 7 > CLIP: clipped
    np.testing.assert_allclose(out[1], [0.0, 0.0, 0.0])  # inf and NaN: the median
    np.testing.assert_allclose(out[2], [CLIP, 0.0, 1.0])
    again = FeatureScaler.from_dict(scaler.to_dict())
    np.testing.assert_array_equal(again.transform(train), scaler.transform(train))
    with pytest.raises(ValueError, match=r"must be \[N, 3\]"):
        scaler.transform(np.zeros((2, 4)))


def test_scaler_in_column_blocks_is_each_column_scaled_on_its_own(monkeypatch):
    rng = np.random.default_rng(0)
    values = rng.lognormal(0.0, 3.0, size=(300, 150)).astype(np.float32)  # heavy tails
    values[rng.random(values.shape) < 0.05] = np.nan
    values[:, 7] = 2.0  # constant: scale 1
    values[:, 8] = np.nan  # never computable: centre 0, scale 1
    values[:, 9] = (rng.random(300) < 0.01).astype(np.float32)  # a rare bit: IQR 0, the SD
    monkeypatch.setattr(feature_spec, "_BLOCK", 64)  # 3 blocks, the last of 22 columns
    rows = np.arange(0, 300, 2)
    scaler = FeatureScaler.fit(values, rows=rows)
    alone = [FeatureScaler.fit(values[rows][:, [j]]) for j in range(values.shape[1])]
    np.testing.assert_array_equal(scaler.center, [a.center[0] for a in alone])
    np.testing.assert_array_equal(scaler.scale, [a.scale[0] for a in alone])
    out = scaler.transform(values, rows=rows[:10], dtype=np.float16)
    assert out.dtype == np.float16 and out.shape == (10, 150)
    expected = np.concatenate([a.transform(values[rows[:10]][:, [j]])
                               for j, a in enumerate(alone)], axis=1)
    np.testing.assert_array_equal(out, expected.astype(np.float16))


def test_feature_kinds_and_spec_round_trip():
    assert feature_kinds(None) == ()
    assert feature_kinds("rdkit2d") == ("rdkit2d",)
    assert feature_kinds(["morgan", "columns"]) == ("morgan", "columns")
    for bad in ("rdkit", ["rdkit2d", "rdkit2d"], 3):
        with pytest.raises(ValueError, match="features must be None"):
            feature_kinds(bad)
    names = {"rdkit2d": rdkit2d_names(), "columns": ["logp"]}
    scaler = FeatureScaler.fit(np.zeros((3, len(names["rdkit2d"]) + 1)))
    spec = FeatureSpec(("rdkit2d", "columns"), names, scaler, descriptors.rdkit_version())
    assert spec.installed_differences() == []
    again = FeatureSpec.from_dict(spec.to_dict())
    assert (again.kinds, again.names, again.n_features) == (spec.kinds, names, spec.n_features)


def test_spec_names_what_the_installed_rdkit_lacks():
    names = {"rdkit2d": [*rdkit2d_names()[1:], "FutureDescriptor"]}
    spec = FeatureSpec(("rdkit2d",), names, FeatureScaler.fit(np.zeros((2, len(names["rdkit2d"])))),
                       "2099.01.1")
    (problem,) = spec.installed_differences()
    assert "RDKit 2099.01.1" in problem and "missing ['FutureDescriptor']" in problem
    assert f"new [{rdkit2d_names()[0]!r}]" in problem


def test_avalon_counts_and_erg_are_row_aligned_with_nan_for_a_bad_row() -> None:
    from exlm_chem.data.descriptors import AVALON_BITS, ERG_WIDTH, descriptor_values

    smiles = ["CCOc1ccccc1C(=O)N", "not a molecule", "c1ccncc1"]
    avalon, names = descriptor_values("avalon", smiles)
    assert avalon.shape == (3, AVALON_BITS) and names[0] == "avalon_0"
    assert np.isnan(avalon[1]).all() and not np.isnan(avalon[[0, 2]]).any()
    assert (avalon[0] == np.round(avalon[0])).all() and avalon[0].sum() > avalon[2].sum() > 0
    erg, names = descriptor_values("erg", smiles)
    assert erg.shape == (3, ERG_WIDTH) and len(names) == ERG_WIDTH
    assert np.isnan(erg[1]).all() and np.isfinite(erg[[0, 2]]).all() and erg[0].any()


def test_maccs_keys_and_atom_pair_counts_are_row_aligned_with_nan_for_a_bad_row() -> None:
    from rdkit import Chem
    from rdkit.Chem import MACCSkeys

    from exlm_chem.data.descriptors import ATOMPAIR_BITS, MACCS_WIDTH

    smiles = ["CCOc1ccccc1C(=O)N", "not a molecule", "c1ccncc1"]
    maccs, names = descriptor_values("maccs", smiles)
    assert maccs.shape == (3, MACCS_WIDTH) and names[-1] == f"maccs_{MACCS_WIDTH - 1}"
    assert np.isnan(maccs[1]).all() and set(np.unique(maccs[[0, 2]])) == {0.0, 1.0}
    keys = MACCSkeys.GenMACCSKeys(Chem.MolFromSmiles(smiles[2]))
    assert np.flatnonzero(maccs[2]).tolist() == list(keys.GetOnBits())
    pairs, names = descriptor_values("atompair", smiles)
    assert pairs.shape == (3, ATOMPAIR_BITS) and len(names) == ATOMPAIR_BITS
    assert np.isnan(pairs[1]).all() and (pairs[[0, 2]] == np.round(pairs[[0, 2]])).all()
    n = Chem.MolFromSmiles(smiles[0]).GetNumAtoms()
    assert pairs[0].sum() == n * (n - 1) // 2  # one count per pair of heavy atoms


def test_mordred_descriptors_are_mordreds_own_row_aligned_with_nan_for_a_bad_row() -> None:
    pytest.importorskip("mordred")  # the dev extra installs it
    from mordred import Calculator, descriptors
    from rdkit import Chem

    smiles = ["CCOc1ccccc1C(=O)N", "not a molecule", "c1ccncc1"]
    values, names = descriptor_values("mordred", smiles)
    calculator = Calculator(descriptors, ignore_3D=True)
    assert values.shape == (3, len(calculator.descriptors)) == (3, len(names))
    assert names[0] == f"mordred_{calculator.descriptors[0]}"
    assert np.isnan(values[1]).all() and np.isfinite(values[[0, 2]]).any(axis=1).all()
    expected = np.array(list(calculator(Chem.MolFromSmiles(smiles[2])).fill_missing(np.nan)),
                        dtype=np.float32)
    np.testing.assert_array_equal(values[2], expected)  # NaN where Mordred has none
    heavy = names.index("mordred_nHeavyAtom")
    assert values[0, heavy] == Chem.MolFromSmiles(smiles[0]).GetNumHeavyAtoms()
