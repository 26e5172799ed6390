"""Cross-source pairs (``--suite cross-source``): fitted on one source's labels, tested on
another source's molecules that the first lacks; their cells, resumption and report."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from exlm_chem.benchmark.cross_source import (
    CROSS_SOURCE_SPLIT,
    CrossSourceTasks,
    load_cross_source_task,
)
from exlm_chem.benchmark.records import Budget, MethodOutput
from exlm_chem.benchmark.runner import MethodSpec, run_benchmark
from exlm_chem.data.cross_source import (
    CROSS_SOURCE_PAIRS,
    LabelSource,
    molecule_key,
    pair_sha256,
)
from exlm_chem.data.rdkit_reasons import canonical_or_failure

HERG = "herg_to_nvs_herg"


def test_a_salt_stereoisomer_or_charged_form_is_the_same_molecule_and_a_homologue_is_not():
    benzoic = molecule_key("OC(=O)c1ccccc1")
    assert molecule_key("[Na+].[O-]C(=O)c1ccccc1") == benzoic
    assert molecule_key("Cl.CN(C)CCc1ccccc1") == molecule_key("CN(C)CCc1ccccc1")
    assert (molecule_key("C[C@H](N)C(=O)O") == molecule_key("C[C@@H](N)C(=O)O")
            == molecule_key("CC(N)C(=O)O"))
    assert molecule_key("OC(=O)Cc1ccccc1") != benzoic
    assert molecule_key("C1CC") is None


@pytest.fixture(scope="module")
def herg():
    return load_cross_source_task(HERG)


def test_a_pair_fits_on_the_source_and_tests_the_targets_molecules_the_source_lacks(herg):
    source = LabelSource("tdc", "herg")
    target = LabelSource("moleculenet", "toxcast", "NVS_IC_hKhERGCh")
    assert CROSS_SOURCE_PAIRS[HERG][:2] == (source, target)
    s_smiles, s_labels, s_sha = source.load()
    t_smiles, t_labels, t_sha = target.load()
    labelled = ~np.isnan(s_labels)
    n_train = int(labelled.sum())
    # train: every labelled source molecule, with the source's labels
    assert np.array_equal(herg.train, np.arange(n_train)) and len(herg.valid) == 0
    assert herg.smiles[:n_train] == [s for s, keep in zip(s_smiles, labelled, strict=True) if keep]
    np.testing.assert_array_equal(herg.labels[herg.train, 0], s_labels[labelled])
    assert np.array_equal(herg.test, np.arange(n_train, len(herg.smiles)))
    assert herg.labels.shape == (len(herg.smiles), 1)
    assert (herg.metric, herg.task_type, herg.held_out_valid) == ("roc_auc", "classification",
                                                                   False)
    # test: the target's labelled molecules, none of them in the source file, whichever way
    test_smiles = [herg.smiles[i] for i in herg.test]
    source_keys = {molecule_key(s) for s in s_smiles}
    assert not source_keys & {molecule_key(s) for s in test_smiles}
    assert not ({canonical_or_failure(s)[0] for s in s_smiles}
                & {canonical_or_failure(s)[0] for s in test_smiles})
    target_label = dict(zip(t_smiles, t_labels, strict=True))
    np.testing.assert_array_equal(herg.labels[herg.test, 0],
                                  [target_label[s] for s in test_smiles])
    # and every labelled target molecule not tested is one the source has
    tested = set(test_smiles)
    skipped = [s for s, y in zip(t_smiles, t_labels, strict=True)
               if not np.isnan(y) and s not in tested]
    assert skipped and all(molecule_key(s) in source_keys for s in skipped)
    positives = int(herg.labels[herg.test, 0].sum())
    assert positives >= 30 and len(herg.test) - positives >= 30  # the rule pairs are kept by
    assert herg.data_sha256 == hashlib.sha256(f"{s_sha}\n{t_sha}".encode()).hexdigest()
    assert pair_sha256(HERG) == herg.data_sha256


def test_the_solubility_pair_runs_from_esol_because_aqsoldb_holds_all_of_esol():
    data = load_cross_source_task("esol_to_aqsoldb")
    assert (data.metric, data.task_type) == ("spearman", "regression")
    esol, _, _ = CROSS_SOURCE_PAIRS["esol_to_aqsoldb"].source.load()
    aqsoldb, _, _ = CROSS_SOURCE_PAIRS["esol_to_aqsoldb"].target.load()
    esol_keys = {molecule_key(s) for s in esol}
    aqsoldb_key = {s: molecule_key(s) for s in aqsoldb}
    assert esol_keys <= set(aqsoldb_key.values())  # the other way round would test nothing
    assert len(data.train) == len(esol) and len(data.test) > 5000
    assert not esol_keys & {aqsoldb_key[data.smiles[i]] for i in data.test}


def _oracle(data, seed, budget, progress):
    """The test labels as scores: ROC-AUC and PRC-AUC 1, whatever the pair."""
    return MethodOutput(data.labels[data.test].copy(), settings={"oracle": True})


def test_cells_record_the_pairs_metric_resume_and_the_cli_reports_them(tmp_path, herg):
    from exlm_chem.benchmark import report_cross_source
    from exlm_chem.cli import main

    spec = MethodSpec("oracle", "oracle", None, "supervised", _oracle, uses_budget=False)
    (record,) = run_benchmark([spec], [HERG], [0], CROSS_SOURCE_SPLIT, Budget(), tmp_path,
                              progress=False, source=CrossSourceTasks())
    assert (record.metric, record.score, record.roc_auc, record.prc_auc) == ("roc_auc", 1.0,
                                                                             1.0, 1.0)
    assert (record.split, record.n_train, record.n_valid, record.n_test) == (
        CROSS_SOURCE_SPLIT, len(herg.train), 0, len(herg.test))
    assert record.protocol["data_sha256"] == herg.data_sha256
    assert run_benchmark([spec], [HERG], [0], CROSS_SOURCE_SPLIT, Budget(), tmp_path,
                         progress=False, source=CrossSourceTasks()) == []  # resumed
    assert json.loads((tmp_path / "results.jsonl").read_text())["task"] == HERG

    assert main(["benchmark", "--suite", "cross-source", "--tasks", HERG, "--report-only",
                 "--out", str(tmp_path)]) == 0
    report = (tmp_path / report_cross_source.REPORT_FILE).read_text()
    positives = int(herg.labels[herg.test, 0].sum())
    assert (f"| {HERG} | TDC herg → ToxCast NVS_IC_hKhERGCh | AUROC | {len(herg.train)} | "
            f"{len(herg.test)} | {positives} | 0.2") in report
    assert "| 1.000 (n=1) |" in report
    assert f"| {HERG} | {positives / len(herg.test):.3f} | 1.000 (n=1) |" in report  # PRC


def test_the_cli_names_the_pairs_and_takes_no_split(tmp_path):
    from exlm_chem.benchmark.tasks import task_type
    from exlm_chem.cli import main
    from exlm_chem.cli.benchmark import BenchmarkCommand

    assert BenchmarkCommand._tasks(["regression"], "cross-source") == ["esol_to_aqsoldb"]
    assert BenchmarkCommand._tasks(["all"], "cross-source") == list(CROSS_SOURCE_PAIRS)
    assert task_type("esol_to_aqsoldb") == "regression" and task_type(HERG) == "classification"
    with pytest.raises(ValueError, match="unknown task"):
        main(["benchmark", "--suite", "cross-source", "--tasks", "esol", "--out",
              str(tmp_path)])
    for option in (["--split", "cluster"], ["--fit-on", "train"]):
        with pytest.raises(ValueError, match="do not apply"):
            main(["benchmark", "--suite", "cross-source", *option, "--out", str(tmp_path)])
    with pytest.raises(ValueError, match="one split"):
        CrossSourceTasks().load(HERG, "scaffold", 0)
