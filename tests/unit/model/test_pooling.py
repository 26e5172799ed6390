"""exlm_chem.model.pooling: one default pooling, shared by every public entry point."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

from exlm_chem.model.pooling import DEFAULT_POOLING, POOLINGS


def _default(function) -> str:
    return inspect.signature(function).parameters["pooling"].default


def test_the_default_is_one_of_the_poolings():
    assert DEFAULT_POOLING in POOLINGS


def test_the_module_imports_without_torch():
    # the CLI reads DEFAULT_POOLING while building its parser, which must stay torch-free
    code = "import sys, exlm_chem.model.pooling\nprint('torch' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def test_python_entry_points_share_the_default():
    from exlm_chem.embedding import Embedder, embed, iter_embeddings
    from exlm_chem.screening.run import screen
    from exlm_chem.sklearn.base import ExLMEstimatorBase
    from exlm_chem.sklearn.embedder import ExLMEmbedder
    from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier, ExLMMoleculeRegressor
    from exlm_chem.train.finetune_net import FinetuneNet, build_finetune_net

    functions = [embed, iter_embeddings, Embedder.encode_valid, Embedder.pooled_batch,
                 Embedder.embed_rows, ExLMEmbedder, ExLMEstimatorBase, FinetuneNet,
                 build_finetune_net, screen]
    assert {f.__qualname__: _default(f) for f in functions} == {
        f.__qualname__: DEFAULT_POOLING for f in functions}
    # the estimators take the base's parameters
    assert ExLMMoleculeClassifier().pooling == ExLMMoleculeRegressor().pooling == DEFAULT_POOLING


def test_the_deepchem_featurizer_shares_the_default():
    pytest.importorskip("deepchem")
    from exlm_chem.integrations.deepchem import ExLMFeaturizer

    assert _default(ExLMFeaturizer) == DEFAULT_POOLING


def test_cli_commands_share_the_default():
    from exlm_chem.cli import build_parser
    from exlm_chem.cli.embed import export_embeddings

    parser = build_parser()
    assert parser.parse_args(["embed", "in.csv", "--out", "x.npy"]).pooling == DEFAULT_POOLING
    assert parser.parse_args(["screen", "model", "in.smi", "--out", "out"]).pooling == (
        DEFAULT_POOLING)
    assert _default(export_embeddings) == DEFAULT_POOLING
    # fit passes --pooling only when given, so the estimator's default applies
    assert parser.parse_args(["fit", "train.csv", "--target-columns", "y",
                              "--out", "m"]).pooling is None
