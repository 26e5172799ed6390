"""The documentation site: its examples run, its references are complete.

- Every ``python`` block of ``docs/**/*.md`` runs, page by page in page order, in a scratch
  folder holding small real inputs, with ``$EXLM_CHEM_DATA`` set, the tiny test
  checkpoint as ``$EXLM_CHEM_MODEL`` and CatBoost at 30 trees; every ``bash`` block of
  ``exlm-chem`` / ``torchrun`` commands runs between them, shortened where an example
  would take minutes (``doc_examples`` has the rules, shared with the README's test). A
  block that cannot run says why in a ``<!-- readme-test: skip: REASON -->`` line above it;
  the ADMET panel's examples run once ``models/admet/manifest.json`` exists.
- Every public name (``exlm_chem.__all__`` and the ``__all__`` of the public subpackages)
  has a ``::: module.Name`` directive on an API page, under the module that defines it.
- The command-line page, generated from the parser at build time, holds every subcommand
  and every option. The build itself (``mkdocs build --strict``) is CI's step in
  ``scripts/test.sh``.
"""

from __future__ import annotations

import argparse
import importlib
import re

import numpy as np
import pandas as pd
import pytest
from doc_examples import (
    DOCS,
    RUNNABLE,
    admet_skip_reason,
    commands,
    is_admet,
    make_scratch,
    readme_blocks,
    run_bash,
    run_python,
    runnable,
    seed_namespace,
)
from repo_scripts import load_script

PAGES = sorted(p for p in DOCS.rglob("*.md") if "hooks" not in p.parts)
BLOCKS = {page: readme_blocks.readme_blocks(page) for page in PAGES}
RUN_PAGES = [page for page in PAGES if runnable(BLOCKS[page])]
#: packages whose ``__all__`` is public API (the lazily exported ones and ``exlm_chem.dag``)
PUBLIC_PACKAGES = ("exlm_chem", "exlm_chem.admet", "exlm_chem.model", "exlm_chem.dag",
                   "exlm_chem.analysis", "exlm_chem.screening", "exlm_chem.text")


def _name(page) -> str:
    return page.relative_to(DOCS).as_posix()


def test_every_block_is_run_or_says_why():
    for page, blocks in BLOCKS.items():
        for block in blocks:
            where = f"docs/{_name(page)}:{block.line}"
            assert block.lang in ("bash", "python"), f"{where}: no test runs ```{block.lang}"
            assert block.ci is None, f"{where}: ci markers belong to README.md"
            if block.skip is not None:
                assert len(block.skip) > 20, f"{where}: say why the block is not run"
            elif block.lang == "bash":
                for words in commands(block):
                    assert words[0] in RUNNABLE, (
                        f"{where}: `{words[0]}` is not run by the tests; mark the block "
                        "<!-- readme-test: skip: REASON -->")
    assert len(RUN_PAGES) >= 8


# ----------------------------------------------------------------------------- examples
def _check(page: str, ns: dict, work) -> None:
    """A glance at what some pages' examples leave behind (their own claims)."""
    if page == "getting-started.md":
        assert 0 <= ns["proba"].min() and ns["proba"].max() <= 1
        assert len(pd.read_csv(work / "pred.csv")) == 20
    if page == "guide/uncertainty.md":  # n_models=5, tta=8, calibrate="isotonic" as it says
        clf = ns["clf"]
        spread = clf.predict_uncertainty(ns["test_smiles"])
        np.testing.assert_array_equal(spread.total, ns["spread"])
        assert ((ns["proba"] >= 0) & (ns["proba"] <= 1)).all() and ns["proba"].shape == (10, 2)
        assert len(clf.models_) == 5 and clf.tta == 8 and clf.calibrator_.method == "isotonic"
        assert (spread.members > 0).all() and (spread.tta > 0).any()
        assert (ns["lower"] <= ns["upper"]).all()
    if page == "guide/embeddings.md":
        assert 0 <= ns["accuracy"] <= 1 and ns["dataset"].X.shape[0] == 20
        assert len(pd.read_parquet(work / "mols.parquet")) == 20
    if page == "guide/pretraining.md":
        assert ns["logp"].shape == (2,) and bool(ns["logp"].isfinite().all())
        for run in ("exlm", "mlm", "ddp"):
            assert (work / "runs" / run / "checkpoint" / "model.safetensors").is_file(), run
    if page == "guide/benchmarks.md":
        report = (work / "runs" / "bench" / "report.md").read_text(encoding="utf-8")
        assert "(probe)" in report and "(finetune)" in report
    if page == "guide/analyses.md":
        assert (work / "fig.png").stat().st_size > 0 and (work / "entropy" / "entropy.md").exists()


@pytest.mark.slow  # a fit or a short pre-training per page: seconds to a minute each
@pytest.mark.parametrize("page", RUN_PAGES, ids=_name)
def test_page_examples_run_in_order(page, bbbp, tiny_checkpoint, few_catboost_trees,
                                    moleculenet_dir, tmp_path, monkeypatch):
    work = make_scratch(tmp_path, moleculenet_dir, bbbp)
    monkeypatch.chdir(work)
    monkeypatch.setenv("EXLM_CHEM_MODEL", str(tiny_checkpoint))
    monkeypatch.setenv("EXLM_CHEM_DATA", str(moleculenet_dir))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    admet_reason = admet_skip_reason()
    namespace, previous, skipped = seed_namespace(bbbp), {}, []
    for block in runnable(BLOCKS[page]):
        where = f"docs/{_name(page)}:{block.line}"
        if admet_reason is not None and is_admet(page, block):
            skipped.append(where)
            continue
        if block.lang == "python":
            run_python(block, where, namespace)
        else:
            run_bash(block, where, previous, tiny_checkpoint)
    if skipped and len(skipped) == len(runnable(BLOCKS[page])):
        pytest.skip(f"{admet_reason}: {', '.join(skipped)}")
    _check(_name(page), namespace, work)


# ----------------------------------------------------------------------------- references
def _directives() -> set[str]:
    """Every object named by a ``::: path`` directive on the API pages."""
    found = set()
    for page in (DOCS / "reference" / "api").glob("*.md"):
        found |= set(re.findall(r"^::: ([\w.]+)\s*$", page.read_text(encoding="utf-8"), re.M))
    return found


def _documented(directives: set[str], module: str, name: str) -> bool:
    """``module.name`` has a directive, or its module has one that lists it as a member."""
    if f"{module}.{name}" in directives:
        return True
    if module not in directives:
        return False
    text = "\n".join(p.read_text(encoding="utf-8")
                     for p in (DOCS / "reference" / "api").glob("*.md"))
    block = text.split(f"::: {module}\n", 1)[1].split("\n:::", 1)[0]
    return re.search(rf"^\s+- {re.escape(name)}\s*$", block, re.M) is not None


@pytest.mark.parametrize("package", PUBLIC_PACKAGES)
def test_every_public_name_has_an_api_entry(package):
    module = importlib.import_module(package)
    directives = _directives()
    lazy = getattr(module, "_LAZY", {})  # name -> defining module, for lazy packages
    missing = []
    for name in module.__all__:
        if name == "__version__":
            continue
        # a class or function is documented where it is defined (a lazy package may name
        # a re-exporting package, e.g. exlm_chem.dag); a constant where the map says
        obj = getattr(module, name)
        home = obj.__module__ if isinstance(obj, type) or callable(obj) else lazy.get(name)
        home = home or package
        if not _documented(directives, home, name) and f"{package}.{name}" not in directives:
            missing.append(f"{home}.{name}")
    assert not missing, f"no API page documents {missing}: add '::: NAME' to docs/reference/api/"
    for directive in directives:  # and every directive names something that exists
        path, _, attr = directive.rpartition(".")
        try:
            importlib.import_module(directive)
        except ImportError:
            assert hasattr(importlib.import_module(path), attr), directive


def test_the_cli_page_holds_every_subcommand_and_option():
    hook = load_script("docs/hooks/cli_reference.py")
    assert hook.MARKER in (DOCS / hook.PAGE).read_text(encoding="utf-8")
    text = hook.render()
    from exlm_chem.cli import build_parser

    parser = build_parser(declare_all=True)
    leaves = list(hook.subcommands(parser))
    assert len(leaves) >= 14 and {" ".join(w) for w, _, _ in leaves} >= {
        "fit", "predict", "embed", "benchmark", "pretrain", "screen", "data summary",
        "text glue", "corpus prepare"}
    for words, _help, sub in leaves:
        assert f"## `exlm-chem {' '.join(words)}`" in text, words
        section = text.split(f"## `exlm-chem {' '.join(words)}`", 1)[1].split("\n## ", 1)[0]
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            for option in action.option_strings or [action.metavar or action.dest]:
                assert f"`{option}`" in section, f"exlm-chem {' '.join(words)}: {option}"
