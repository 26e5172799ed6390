"""The benchmark runner end to end on real MoleculeNet data: cells, resume, report."""

from __future__ import annotations

import time

import numpy as np
import pytest

from exlm_chem.benchmark.encoders import EncoderMethod, checkpoint_id
from exlm_chem.benchmark.records import Budget, ResultsFile
from exlm_chem.benchmark.rf import RandomForestSettings, rf_method
from exlm_chem.benchmark.runner import MethodSpec, run_benchmark
from exlm_chem.benchmark.tasks import load_task


def small_rf(data, seed, budget, progress):
    return rf_method(data, seed, budget, settings=RandomForestSettings(n_estimators=10))


class Interrupt(Exception):
    pass


def test_interrupted_run_resumes_without_repeating_cells(tmp_path, moleculenet_dir):
    calls = []

    def counted(data, seed, budget, progress):
        calls.append((data.name, seed))
        if len(calls) == 3 and not resumed:
            raise Interrupt  # e.g. Ctrl-C inside the third cell
        return small_rf(data, seed, budget, progress)

    spec = MethodSpec("rf_ecfp4", "RF", None, "supervised", counted, uses_budget=False)
    args = ([spec], ["bace", "clintox"], [0, 1], "scaffold", Budget(), tmp_path)
    resumed = False
    with pytest.raises(Interrupt):
        run_benchmark(*args, data_path=moleculenet_dir, progress=False)
    assert [(r.task, r.seed) for r in ResultsFile(tmp_path / "results.jsonl")] == [
        ("bace", 0), ("bace", 1)]
    resumed = True
    written = run_benchmark(*args, data_path=moleculenet_dir, progress=False)
    assert [(r.task, r.seed) for r in written] == [("clintox", 0), ("clintox", 1)]
    assert calls[3:] == [("clintox", 0), ("clintox", 1)]  # finished cells were not rerun
    records = ResultsFile(tmp_path / "results.jsonl").records()
    assert len(records) == 4 and len({r.key() for r in records}) == 4
    assert run_benchmark(*args, data_path=moleculenet_dir, progress=False) == []
    clintox = [r for r in records if r.task == "clintox"]
    assert all(r.n_tasks_scored == 2 and 0.5 < r.roc_auc <= 1 for r in clintox)
    assert records[0].n_train + records[0].n_valid + records[0].n_test == 1513


def test_rf_fits_its_training_set(moleculenet_dir):
    data = load_task("bbbp", "scaffold", 0, moleculenet_dir)
    rows = data.train[:200]
    overfit = data._replace(test=rows)
    from exlm_chem.benchmark.scoring import score_cell

    roc, _, _ = score_cell(overfit, small_rf(overfit, 0, Budget(), False))
    assert roc > 0.99


def test_splits_follow_the_requested_protocol(moleculenet_dir):
    paper = load_task("bace", "scaffold", 0, moleculenet_dir)
    deepchem = load_task("bace", "deepchem_scaffold", 0, moleculenet_dir)
    balanced = [load_task("bace", "scaffold_balanced", s, moleculenet_dir) for s in (0, 1)]
    assert (len(paper.train), len(paper.valid), len(paper.test)) == (1210, 151, 152)
    assert not np.array_equal(balanced[0].test, balanced[1].test)  # the seed moves it
    assert sorted(np.concatenate([deepchem.train, deepchem.valid, deepchem.test])) == list(
        range(1513))
    with pytest.raises(ValueError, match="split must be one of"):
        load_task("bace", "random", 0, moleculenet_dir)


def test_probe_is_cached_and_deterministic(tmp_path, moleculenet_dir, tiny_checkpoint,
                                           monkeypatch):
    data = load_task("bace", "scaffold", 0, moleculenet_dir)
    probe = EncoderMethod(tiny_checkpoint, "probe", cache_dir=tmp_path)
    first = probe(data, 0, Budget(), False)
    cached = list(tmp_path.rglob("*.npy"))
    assert len(cached) == 1 and checkpoint_id(tiny_checkpoint).split("@")[1] in str(cached[0])

    import importlib

    embed_module = importlib.import_module("exlm_chem.embedding")

    def no_embedding(*args, **kwargs):
        raise AssertionError("the cached embeddings should have been used")

    monkeypatch.setattr(embed_module, "embed", no_embedding)
    reloaded = EncoderMethod(tiny_checkpoint, "probe", cache_dir=tmp_path)
    again = reloaded(data, 1, Budget(), False)
    np.testing.assert_array_equal(first.test_scores, again.test_scores)
    assert first.test_scores.shape == (len(data.test), 1)

    from exlm_chem.train import probe as probe_module

    def no_refit(*args, **kwargs):
        raise AssertionError("a deterministic probe must not be refitted for another seed")

    monkeypatch.setattr(probe_module, "probe_scores", no_refit)
    np.testing.assert_array_equal(reloaded(data, 2, Budget(), False).test_scores,
                                  first.test_scores)
    with pytest.raises(AssertionError, match="must not be refitted"):
        reloaded(data._replace(test=data.test[:50]), 2, Budget(), False)  # another split


def test_encoders_read_canonical_smiles_so_the_writing_does_not_matter(
        tmp_path, moleculenet_dir, tiny_checkpoint):
    from exlm_chem.data.augment import tta_views

    data = load_task("bace", "scaffold", 0, moleculenet_dir)
    _, randomized = tta_views(data.smiles, 1, seed=0)  # canonical, randomized: [N] each
    rewritten = data._replace(smiles=randomized)
    assert sum(a != b for a, b in zip(rewritten.smiles, data.smiles, strict=True)) > 1000
    probe = EncoderMethod(tiny_checkpoint, "probe")
    assert probe.protocol("bace", Budget())[0]["smiles"] == "rdkit-canonical"
    np.testing.assert_array_equal(probe(rewritten, 0, Budget(), False).test_scores,
                                  EncoderMethod(tiny_checkpoint, "probe")(
                                      data, 0, Budget(), False).test_scores)


def test_finetune_cell_respects_the_budget(moleculenet_dir, tiny_checkpoint):
    data = load_task("bace", "scaffold", 0, moleculenet_dir)
    small = data._replace(train=data.train[:256], valid=data.valid[:64])
    method = EncoderMethod(tiny_checkpoint, "finetune")
    out = method(small, 0, Budget(max_epochs=2), False)
    assert out.epochs == 2 and out.settings["epochs"] == 2 and out.best_epoch in (0, 1, 2)
    assert out.settings["lr"] == 1e-4  # the paper's BACE setting (Table 8)
    assert np.isfinite(out.test_scores).all() and out.test_scores.shape == (len(data.test), 1)
    again = method(small, 0, Budget(max_epochs=2), False)
    np.testing.assert_allclose(again.test_scores, out.test_scores, rtol=1e-5)
    timed = method(small, 0, Budget(max_minutes=1e-4), False)
    assert timed.stopped_early and timed.epochs == 1


def test_finetune_regression_cell_returns_validation_predictions(moleculenet_dir,
                                                                  tiny_checkpoint):
    data = load_task("bace", "scaffold", 0, moleculenet_dir)
    sizes = np.array([[len(s)] for s in data.smiles], dtype=np.float64)
    rows = data.test[:32]
    small = data._replace(train=data.train[:128], valid=rows, test=rows, labels=sizes,
                          task_type="regression")
    out = EncoderMethod(tiny_checkpoint, "finetune")(small, 0, Budget(max_epochs=1), False)
    assert out.valid_scores.shape == (32, 1)  # the restored net on the same rows
    np.testing.assert_allclose(out.valid_scores, out.test_scores, rtol=1e-5)


def test_a_cell_records_its_cpu_time(tmp_path, moleculenet_dir):
    def busy_rf(data, seed, budget, progress):
        started = time.process_time()
        while time.process_time() - started < 0.5:  # at least half a CPU-second
            pass
        return small_rf(data, seed, budget, progress)

    spec = MethodSpec("rf_ecfp4", "RF", None, "supervised", busy_rf, uses_budget=False)
    (record,) = run_benchmark([spec], ["bace"], [0], "scaffold", Budget(), tmp_path,
                              data_path=moleculenet_dir, progress=False)
    assert 0.5 <= record.cpu_s < 0.5 + 60
    (stored,) = ResultsFile(tmp_path / "results.jsonl").records()
    assert stored.cpu_s == record.cpu_s


def test_regression_cell_records_conformal_intervals(tmp_path, moleculenet_dir):
    from exlm_chem.benchmark.scoring import score_intervals

    spec = MethodSpec("rf_ecfp4", "RF", None, "supervised", small_rf, uses_budget=False)
    (record,) = run_benchmark([spec], ["esol"], [0], "scaffold", Budget(), tmp_path,
                              data_path=moleculenet_dir, progress=False)
    data = load_task("esol", "scaffold", 0, moleculenet_dir)
    expected = score_intervals(data, small_rf(data, 0, Budget(), False))
    assert record.interval_coverage == pytest.approx(expected.coverage)
    assert record.interval_width == pytest.approx(expected.width)
    assert 0.5 < record.interval_coverage <= 1 and record.interval_width > 0
    (stored,) = ResultsFile(tmp_path / "results.jsonl").records()
    assert stored.interval_coverage == pytest.approx(expected.coverage)
