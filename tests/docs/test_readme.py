"""Every example in README.md runs, on tiny inputs; the README stays a first screen.

How each fenced block is covered (``scripts/readme_blocks.py`` finds them; the rules are
``doc_examples``'s, shared with the docs site's test):

- the two top commands, between ``<!-- ci:... -->`` markers, are run by ``.ci/run``;
- a block after ``<!-- readme-test: skip: REASON -->`` is not run here, for that reason;
- the blocks of the ``## ADMET panel`` section run once ``models/admet/manifest.json``
  exists, and are skipped with that reason until then;
- every other ``python`` block runs, in README order, in one namespace seeded with small
  real inputs (BBBP molecules); every ``bash`` block runs command by command in a scratch
  folder holding the files the examples name, with the options ``doc_examples.SHORTEN``
  appends where an example would take minutes.

The Python examples start from the tiny test checkpoint (``$EXLM_CHEM_MODEL``) instead of
the shipped one and CatBoost fits 30 trees instead of 1,000 (``few_catboost_trees``): they
check that each example runs and returns what it says, not its figures.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from doc_examples import (
    REPO,
    admet_skip_reason,
    is_admet,
    make_scratch,
    readme_blocks,
    run_bash,
    run_python,
    runnable,
    seed_namespace,
)

README = REPO / "README.md"
BLOCKS = readme_blocks.readme_blocks(README)
LINES = README.read_text(encoding="utf-8").splitlines()


def _blocks(lang: str, admet: bool = False) -> list:
    return [b for b in runnable(BLOCKS) if b.lang == lang and is_admet(README, b) == admet]


def test_every_block_is_run_somewhere():
    for block in BLOCKS:
        where = f"README.md:{block.line}"
        assert block.lang in ("bash", "python"), f"{where}: no test runs ```{block.lang}"
        if block.skip is not None:
            assert len(block.skip) > 20, f"{where}: say why the block is not run"
    assert [b.ci for b in BLOCKS if b.ci] == ["ci:main-job", "ci:test"]
    ci_script = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "scripts/readme_blocks.py" in ci_script and "main-job test" in ci_script
    for name in ("ci:main-job", "ci:test"):
        command = readme_blocks.ci_block(name, README).code.strip()
        assert "\n" not in command and "EXLM_CHEM_DATA=../shared/data/moleculenet" in command
    assert len(_blocks("python")) >= 2 and len(_blocks("bash")) >= 1
    # the ADMET section shows the command and the Python call, as its guide promises
    assert len(_blocks("bash", admet=True)) == 1 and len(_blocks("python", admet=True)) == 1


def _first_line(pattern: str) -> int:
    return next(i for i, line in enumerate(LINES, 1) if pattern in line)


def test_readme_is_a_first_screen():
    """What it is, how to install, what to type: within the first 60 lines; the history of
    versions lives in CHANGELOG.md and the records, not here."""
    assert len(LINES) <= 200, f"README.md has {len(LINES)} lines (at most 200)"
    for what, pattern in [("install", "bash scripts/setup.sh"), ("fit", ".fit("),
                          ("predict", ".predict_proba("), ("benchmark", "exlm-chem benchmark"),
                          ("the ADMET panel", "## ADMET panel")]:
        assert _first_line(pattern) <= 60, f"README.md: {what} after line 60"
    assert "## Which option when" in LINES and (REPO / "CHANGELOG.md").is_file()


# ----------------------------------------------------------------------------- python
def test_python_examples_run_in_order(bbbp, tiny_checkpoint, few_catboost_trees, monkeypatch,
                                      tmp_path):
    monkeypatch.setenv("EXLM_CHEM_MODEL", str(tiny_checkpoint))  # see the module docstring
    monkeypatch.chdir(tmp_path)
    namespace = seed_namespace(bbbp)
    for block in _blocks("python"):
        run_python(block, f"README.md:{block.line}", namespace)
    assert namespace["proba"].shape == (10, 2) and namespace["vectors"].shape[0] == 20
    assert np.isnan(namespace["proba"]).sum() == 0 and namespace["valid"].all()
    assert (tmp_path / "my_model").is_dir()  # saved, then loaded again


@pytest.mark.parametrize("lang", ["python", "bash"])
def test_admet_examples_run_once_the_panel_exists(lang, bbbp, tmp_path, monkeypatch,
                                                  moleculenet_dir, tiny_checkpoint):
    """The ``## ADMET panel`` section: skipped (with the reason) until the panel is built."""
    if (reason := admet_skip_reason()) is not None:
        pytest.skip(reason)
    work = make_scratch(tmp_path, moleculenet_dir, bbbp)
    monkeypatch.chdir(work)
    for block in _blocks(lang, admet=True):
        where = f"README.md:{block.line}"
        if lang == "python":
            namespace: dict = {}
            run_python(block, where, namespace)
            assert len(namespace["table"]) == 2
        else:
            run_bash(block, where, {}, tiny_checkpoint)
            assert len(pd.read_csv(work / "predictions.csv")) == 5
            assert (work / "report.html").stat().st_size > 0


# ----------------------------------------------------------------------------- bash
@pytest.fixture(scope="module")
def scratch(tmp_path_factory, moleculenet_dir, bbbp):
    return make_scratch(tmp_path_factory.mktemp("readme"), moleculenet_dir, bbbp)


@pytest.mark.slow  # ~30 s: the benchmark (finetune, regression) and embed examples
@pytest.mark.parametrize("block", _blocks("bash"), ids=lambda b: f"line{b.line}")
def test_bash_examples_run(block, scratch, tiny_checkpoint, monkeypatch):
    monkeypatch.chdir(scratch)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    run_bash(block, f"README.md:{block.line}", {}, tiny_checkpoint)
    if "exlm-chem embed" in block.code:
        assert len(pd.read_parquet(scratch / "mols.parquet")) == 20
    if "exlm-chem benchmark" in block.code:
        report = (scratch / "runs" / "bench" / "report.md").read_text(encoding="utf-8")
        assert "(finetune)" in report
        summary = pd.read_csv(scratch / "runs" / "bench" / "summary.csv")
        assert np.isfinite(summary["roc_auc_mean"]).all()
        regression = pd.read_csv(scratch / "runs" / "reg" / "summary.csv")
        assert regression["task"].tolist() == ["freesolv"]
        assert np.isfinite(regression["rmse_mean"]).all()
