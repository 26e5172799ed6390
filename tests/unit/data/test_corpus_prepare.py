"""The prepared corpus: hygiene, deduplication, tokens, manifest, and reading it back."""

from __future__ import annotations

import gzip
import hashlib
import json
import re

import numpy as np
import pytest

from exlm_chem.data.corpus import read_smiles_file, split_validation
from exlm_chem.data.corpus_prepare import (
    PreparationSettings,
    add_descriptors,
    load_prepared,
    preparation_differences,
    prepare_corpus,
)
from exlm_chem.data.tokenizer import SmilesTokenizer
from exlm_chem.files.checksums import vocab_sha256


def _random_form(smiles: str, seed: int) -> str:
    """Another SMILES of the same molecule (RDKit's random atom order)."""
    from rdkit import Chem

    mol = Chem.MolFromSmiles(smiles)
    for attempt in range(50):
        Chem.rdBase.SeedRandomNumberGenerator(seed + attempt)
        other = Chem.MolToSmiles(mol, doRandom=True)
        if other != smiles:
            return other
    raise AssertionError(f"no second SMILES for {smiles}")


@pytest.fixture(scope="module")
def source(tmp_path_factory, pretrain_dir, moleculenet_dir):
    """120 MOSES lines, then a duplicate in another form, a BACE test molecule (written
    differently from the BACE file) and an unparsable line; and the BACE molecule."""
    from exlm_chem.benchmark.tasks import load_task

    moses = read_smiles_file(pretrain_dir / "moses_train.smi.gz", limit=120)
    bace = load_task("bace", "scaffold", 0, path=moleculenet_dir)
    test_molecule = bace.smiles[int(bace.test[0])]
    lines = [*moses, _random_form(moses[7], 1), _random_form(test_molecule, 2), "C1CC(N"]
    path = tmp_path_factory.mktemp("corpus") / "mix.smi.gz"
    with gzip.open(path, "wt") as handle:
        handle.write("\n".join(lines) + "\n")
    return path, moses, test_molecule


@pytest.fixture(scope="module")
def prepared(source, tmp_path_factory, moleculenet_dir, monkeypatch_module):
    monkeypatch_module.setenv("EXLM_CHEM_DATA", str(moleculenet_dir))
    out = tmp_path_factory.mktemp("prepared") / "corpus"
    settings = PreparationSettings(valid_size=10, seed=3, tasks=["bace"], split_seeds=(0,))
    manifest = prepare_corpus([source[0]], out, settings, n_jobs=1)
    return out, manifest


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def test_manifest_counts_every_removal(prepared, source):
    _, manifest = prepared
    assert manifest["counts"] == {
        "lines": 123, "unparsable_removed": 1, "duplicates_removed": 1, "hygiene_removed": 1,
        "molecules": 120, "train": 110, "valid": 10,
        "tokens": manifest["counts"]["tokens"], "at_max_length": 0, "unknown_tokens": 0,
    }
    hygiene = manifest["hygiene"]
    assert hygiene["split_modes"] == [["scaffold", 0], ["deepchem_scaffold", 0],
                                      ["scaffold_balanced", 0]]
    assert hygiene["removed_by_task"] == {"bace": 1} and hygiene["heldout_molecules"]["bace"] > 300
    assert manifest["sources"][0]["lines"] == 123
    tok = SmilesTokenizer()
    assert manifest["vocabulary"] == {"size": len(tok), "sha256": vocab_sha256(tok.tokens)}


def test_prepared_ids_are_the_tokenizer_s_ids_of_the_kept_molecules(prepared, source):
    out, manifest = prepared
    _, moses, _ = source
    tok = SmilesTokenizer()
    corpus = load_prepared(out, tok.tokens)
    assert corpus.train.ids.dtype == np.uint8
    train_idx, valid_idx = split_validation(120, 10, seed=3)
    for part, index in ((corpus.train, train_idx), (corpus.valid, valid_idx)):
        assert len(part) == len(index)
        for row, i in enumerate(index):
            assert part.get(row).tolist() == tok.encode(moses[i], max_length=256)
    assert int(corpus.train.offsets[-1] + corpus.valid.offsets[-1]) == manifest["counts"]["tokens"]


def test_loading_refuses_another_vocabulary_or_a_changed_file(prepared, tmp_path):
    import shutil

    out, _ = prepared
    tokens = SmilesTokenizer().tokens
    with pytest.raises(ValueError, match="another vocabulary"):
        load_prepared(out, [*tokens[:-1], "[Xx]"])
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    np.savez_compressed(copy / "valid.npz", ids=np.zeros(3, np.uint8),
                        lengths=np.array([3], np.uint16))
    with pytest.raises(ValueError, match=r"valid\.npz: sha256 differs"):
        load_prepared(copy, tokens)
    manifest = json.loads((copy / "manifest.json").read_text())
    (copy / "manifest.json").write_text(json.dumps({**manifest, "format_version": 99}))
    with pytest.raises(ValueError, match="version 99"):
        load_prepared(copy, tokens)
    # a stored corpus of format version 1 hashed its vocabulary otherwise: still read
    version1 = hashlib.sha256("\n".join(tokens).encode()).hexdigest()
    v1 = tmp_path / "v1"
    shutil.copytree(out, v1)
    (v1 / "manifest.json").write_text(json.dumps({
        **manifest, "format_version": 1, "vocabulary": {"size": len(tokens), "sha256": version1}}))
    assert len(load_prepared(v1, tokens).train) == len(load_prepared(out, tokens).train)
    with pytest.raises(FileNotFoundError, match="corpus prepare"):
        load_prepared(tmp_path, tokens)


def test_preparation_differences_name_what_another_preparation_would_change(prepared, source,
                                                                          tmp_path):
    import shutil

    out, _ = prepared
    same = PreparationSettings(valid_size=10, seed=3, tasks=["bace"], split_seeds=(0,))
    assert preparation_differences(out, [source[0]], same) == []
    copy = tmp_path / "copy.smi.gz"  # the same content by another path: the same source
    shutil.copy(source[0], copy)
    assert preparation_differences(out, [copy], same) == []
    changed = same._replace(seed=4, limit=50, tasks=["bbbp", "bace"], descriptors="rdkit2d")
    assert preparation_differences(out, [source[0]], changed) == [
        "seed: 3 there, 4 here", "limit: None there, 50 here",
        "hygiene tasks: ['bace'] there, ['bace', 'bbbp'] here",
        "descriptors: None there, rdkit2d here"]
    assert preparation_differences(out, [source[0]], same._replace(split_seeds=(0, 1))) == [
        "hygiene split modes: [['scaffold', 0], ['deepchem_scaffold', 0], "
        "['scaffold_balanced', 0]] there, [['scaffold', 0], ['deepchem_scaffold', 0], "
        "['scaffold_balanced', 0], ['scaffold_balanced', 1]] here"]
    assert preparation_differences(out, [source[0]], same._replace(hygiene=False)) == [
        "hygiene: True there, False here"]
    other = tmp_path / "other.smi"
    other.write_text("CCO\n")
    (differ,) = preparation_differences(out, [other], same)
    assert differ.startswith("sources: ") and str(other) in differ
    with pytest.raises(FileNotFoundError, match="corpus prepare"):
        preparation_differences(tmp_path, [source[0]])


def test_a_missing_benchmark_file_fails_before_the_corpus_is_canonicalised(source, tmp_path,
                                                                            monkeypatch):
    import exlm_chem.data.corpus_prepare as corpus_prepare
    import exlm_chem.data.moleculenet as moleculenet

    def missing(name, *args, **kwargs):
        raise FileNotFoundError(f"MoleculeNet dataset {name!r} not found")

    def canonicalised(*args, **kwargs):
        raise AssertionError("the corpus was canonicalised before the benchmark files were read")

    monkeypatch.setattr(moleculenet, "load_moleculenet", missing)
    monkeypatch.setattr(corpus_prepare, "_deduplicate", canonicalised)
    settings = PreparationSettings(valid_size=10, tasks=["bace"], split_seeds=(0,))
    with pytest.raises(FileNotFoundError, match="'bace' not found"):
        prepare_corpus([source[0]], tmp_path / "p", settings, n_jobs=1)
    assert not (tmp_path / "p").exists()


def test_cli_prepares_without_hygiene(source, tmp_path, capsys):
    from exlm_chem.cli import main

    out = tmp_path / "p"
    assert main(["corpus", "prepare", "--corpus", str(source[0]), "--out", str(out),
                 "--no-hygiene", "--valid-size", "5", "--max-length", "20"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["hygiene"] == {"enabled": False}
    assert manifest["counts"]["molecules"] == 121 and manifest["counts"]["valid"] == 5
    assert manifest["counts"]["at_max_length"] > 0  # long molecules were truncated
    corpus = load_prepared(out, SmilesTokenizer().tokens)
    assert corpus.train.lengths().max() == 20
    assert "116 train / 5 valid molecules" in capsys.readouterr().out


def test_descriptor_targets_are_aligned_with_the_molecules(source, tmp_path):
    from exlm_chem.data.descriptors import rdkit2d_descriptors
    from exlm_chem.data.feature_spec import FeatureScaler

    out = tmp_path / "p"
    settings = PreparationSettings(valid_size=10, seed=3, hygiene=False, descriptors="rdkit2d")
    manifest = prepare_corpus([source[0]], out, settings, n_jobs=1)
    corpus = load_prepared(out, SmilesTokenizer().tokens)
    entry = manifest["descriptors"]
    assert entry["kind"] == "rdkit2d" and entry["count"] == len(entry["names"]) > 200
    assert manifest["files"]["descriptors.npz"]
    scaler = FeatureScaler.from_dict(entry["scaler"])
    # the kept molecules: 120 MOSES lines and the BACE molecule (no hygiene), in file order
    from exlm_chem.data.hygiene import canonical_smiles

    lines = read_smiles_file(source[0])
    kept = [canonical_smiles(s) for s in [*lines[:120], lines[121]]]
    train_idx, valid_idx = split_validation(len(kept), 10, seed=3)
    expected = scaler.transform(rdkit2d_descriptors([kept[i] for i in valid_idx])[0])
    got = corpus.descriptors["valid"]
    assert got.shape == expected.shape == (10, entry["count"])
    np.testing.assert_allclose(got, expected, atol=2e-2, rtol=2e-3)  # stored as float16
    assert len(corpus.descriptors["train"]) == len(corpus.train) == len(train_idx)
    # a replaced descriptors file is refused like the token files
    np.savez_compressed(out / "descriptors.npz", train=got, valid=got)
    with pytest.raises(ValueError, match=r"descriptors\.npz: sha256 differs"):
        load_prepared(out, SmilesTokenizer().tokens)


def _stored_targets(directory) -> dict[str, np.ndarray]:
    with np.load(directory / "descriptors.npz", allow_pickle=False) as arrays:
        return {name: arrays[name] for name in arrays.files}


def test_descriptors_added_later_are_those_prepared_with_the_corpus(source, tmp_path):
    from exlm_chem.data.descriptors import FAST_NAMES
    from exlm_chem.files.checksums import file_sha256

    tokens = SmilesTokenizer().tokens
    settings = PreparationSettings(valid_size=10, seed=3, hygiene=False)
    fast = settings._replace(descriptors="rdkit2d_fast")
    first = prepare_corpus([source[0]], tmp_path / "first", fast, n_jobs=1)
    later = tmp_path / "later"
    prepare_corpus([source[0]], later, settings, n_jobs=1)
    manifest = add_descriptors(later, "rdkit2d_fast", n_jobs=1)
    entry = manifest["descriptors"]
    assert entry == {**first["descriptors"], "undecodable": 0}
    assert entry["kind"] == "rdkit2d_fast" and entry["names"] == list(FAST_NAMES)
    assert json.loads((later / "manifest.json").read_text()) == manifest
    assert manifest["files"]["descriptors.npz"] == file_sha256(later / "descriptors.npz")
    expected, got = _stored_targets(tmp_path / "first"), _stored_targets(later)
    assert sorted(got) == ["train", "valid"] and got["train"].dtype == np.float16
    for name in ("train", "valid"):
        np.testing.assert_array_equal(got[name], expected[name])
    corpus = load_prepared(later, tokens)
    assert corpus.descriptors["valid"].shape == (10, 35)
    np.testing.assert_array_equal(corpus.descriptors["train"], expected["train"].astype(np.float32))
    assert preparation_differences(later, [source[0]], fast) == []
    # replaced by another kind: the manifest follows, and no temporary file is left behind
    manifest = add_descriptors(later, "rdkit2d", n_jobs=1)
    count = manifest["descriptors"]["count"]
    assert manifest["descriptors"]["kind"] == "rdkit2d" and count > 200
    assert load_prepared(later, tokens).descriptors["valid"].shape == (10, count)
    assert sorted(p.name for p in later.iterdir()) == [
        "descriptors.npz", "manifest.json", "train.npz", "valid.npz"]
    # Morgan counts too: 2048 standardised columns (by the same robust scaler)
    manifest = add_descriptors(later, "morgan", n_jobs=1)
    entry = manifest["descriptors"]
    assert (entry["kind"], entry["count"], entry["names"][-1]) == ("morgan", 2048,
                                                                   "morgan_r2_2047")
    assert len(entry["scaler"]["center"]) == len(entry["scaler"]["scale"]) == 2048
    targets = load_prepared(later, tokens).descriptors
    assert targets["train"].shape == (len(corpus.train), 2048)
    assert all(np.abs(t).max() <= entry["scaler"]["clip"] for t in targets.values())
    assert (targets["train"] != 0).any(axis=0).sum() > 100  # bits that molecules hold
    with pytest.raises(ValueError,
                       match="descriptors must be one of rdkit2d, rdkit2d_fast, morgan"):
        add_descriptors(later, "mordred")


def test_targets_are_scaled_on_the_training_rows_and_stored_as_float16():
    from exlm_chem.data import corpus_prepare
    from exlm_chem.data.feature_spec import FeatureScaler

    rng = np.random.default_rng(0)
    values = rng.lognormal(0.0, 3.0, size=(300, 20)).astype(np.float32)
    values[250:] *= 100  # the validation rows would move the centre if they were seen
    train_idx, valid_idx = np.arange(250), np.arange(250, 300)
    scaler, targets = corpus_prepare._scaled(values, train_idx, valid_idx)
    assert scaler.to_dict() == FeatureScaler.fit(values[train_idx]).to_dict()
    for name, index in (("train", train_idx), ("valid", valid_idx)):
        assert targets[name].dtype == np.float16
        np.testing.assert_array_equal(targets[name],
                                      scaler.transform(values[index], dtype=np.float16))
        np.testing.assert_allclose(targets[name], scaler.transform(values[index]), atol=4e-3)


def test_added_descriptors_of_truncated_molecules_are_the_median(source, tmp_path):
    out = tmp_path / "p"
    settings = PreparationSettings(max_length=20, valid_size=10, seed=3, hygiene=False)
    cut = prepare_corpus([source[0]], out, settings, n_jobs=1)["counts"]["at_max_length"]
    assert cut > 0
    entry = add_descriptors(out, "rdkit2d_fast", n_jobs=1)["descriptors"]
    assert entry["undecodable"] == cut and entry["missing_values"] >= cut * entry["count"]
    corpus = load_prepared(out, SmilesTokenizer().tokens)
    for name in ("train", "valid"):
        truncated = getattr(corpus, name).lengths() >= 20
        targets = corpus.descriptors[name]
        assert (targets[truncated] == 0).all()  # all NaN, so the training median
        assert (targets[~truncated] != 0).any(axis=1).all()


def test_cli_adds_descriptors_that_pretrain_reads(source, tmp_path, capsys):
    from exlm_chem.cli import main

    out = tmp_path / "p"
    assert main(["corpus", "prepare", "--corpus", str(source[0]), "--out", str(out),
                 "--no-hygiene", "--valid-size", "5", "--n-jobs", "1"]) == 0
    capsys.readouterr()
    assert main(["corpus", "descriptors", "--prepared", str(out), "--n-jobs", "1"]) == 0
    line = capsys.readouterr().out.strip()
    assert re.fullmatch(r"rdkit2d_fast descriptors of 121 molecules in \S+: 35 descriptors, "
                        r"0 undecodable rows, \d+ missing values, [\d.]+ s", line), line
    corpus = load_prepared(out, SmilesTokenizer().tokens)  # as `pretrain --prepared` reads it
    assert corpus.manifest["descriptors"]["kind"] == "rdkit2d_fast"
    assert corpus.descriptors["train"].shape == (116, 35)
    assert corpus.descriptors["valid"].shape == (5, 35)
    assert np.isfinite(corpus.descriptors["train"]).all()
    with pytest.raises(SystemExit):
        main(["corpus", "descriptors", "--prepared", str(out), "--kind", "mordred"])
