"""The task-adaptive pre-training study reads the molecules a fit reads, never test ones."""

from __future__ import annotations

import pytest
from repo_scripts import load_script


@pytest.fixture(scope="module")
def study():
    return load_script("benchmarks/pretraining/task_adaptive.py")


def test_export_writes_the_fit_rows_and_no_test_molecule(study, moleculenet_dir, tmp_path,
                                                        monkeypatch):
    from exlm_chem.benchmark.tasks import load_task, with_canonical_smiles

    monkeypatch.setenv("EXLM_CHEM_DATA", str(moleculenet_dir))
    out = tmp_path / "bace.smi"
    assert study.main(["export", "bace", str(out)]) == 0
    written = out.read_text(encoding="utf-8").splitlines()
    data = with_canonical_smiles(load_task("bace", "scaffold", 0, path=moleculenet_dir))
    fit = sorted([*data.train, *data.valid])
    assert written == [data.smiles[i] for i in fit]
    test = {data.smiles[i] for i in data.test}
    assert len(written) == len(data.train) + len(data.valid) and not test & set(written)
    # the paper's scaffold split ignores the seed, so one adapted encoder serves all seeds
    assert study.fit_smiles("bace", 2) == written
