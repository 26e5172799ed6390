"""exlm_chem.model.pooling: the pooling module, checked once, one default for every entry point."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

from exlm_chem.model.pooling import DEFAULT_POOLING, POOLINGS, Pooling


def _default(function) -> str:
    return inspect.signature(function).parameters["pooling"].default


def test_the_default_is_one_of_the_poolings():
    assert DEFAULT_POOLING in POOLINGS


def test_a_pooling_is_checked_where_it_is_built():
    assert Pooling() == Pooling(DEFAULT_POOLING, -1) == Pooling.of(DEFAULT_POOLING)
    assert Pooling.of(Pooling("bos")) == Pooling("bos")
    with pytest.raises(ValueError, match=r"pooling must be one of \('bos', 'mean'\), got 'max'"):
        Pooling("max")
    with pytest.raises(ValueError, match="integer"):
        Pooling("mean", layer=1.0)
    assert [Pooling(layer=k).depth(3) for k in (-3, -1, 0, 2)] == [1, 3, 1, 3]
    with pytest.raises(ValueError, match="outside the encoder's 3 blocks"):
        Pooling(layer=3).depth(3)


def test_an_earlier_layer_runs_fewer_blocks():
    import torch

    from exlm_chem.model.config import ExLMConfig
    from exlm_chem.model.encoder import ExLMEncoder

    torch.manual_seed(0)
    encoder = ExLMEncoder(ExLMConfig.preset("tiny", 40)).eval()  # 2 blocks
    ids = torch.randint(5, 40, (3, 7))
    positions = torch.arange(7).expand(3, 7)
    mask = torch.ones_like(ids, dtype=torch.bool)
    mask[0, 5:] = False
    with torch.no_grad():
        last = encoder(ids, positions, torch.zeros_like(ids), mask, Pooling("mean", -1))
        first = encoder(ids, positions, torch.zeros_like(ids), mask, Pooling("mean", 0))
        encoder.blocks = encoder.blocks[:1]
        one_block = encoder(ids, positions, torch.zeros_like(ids), mask, Pooling("mean", -1))
    torch.testing.assert_close(first, one_block)
    assert not torch.allclose(first, last)


def test_the_module_imports_without_torch():
    # the CLI reads DEFAULT_POOLING while building its parser, which must stay torch-free
    code = "import sys, exlm_chem.model.pooling\nprint('torch' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def test_python_entry_points_share_the_default():
    from exlm_chem.embedding import embed, iter_embeddings
    from exlm_chem.model.molecule_model import MoleculeModel, build_model
    from exlm_chem.screening.run import screen
    from exlm_chem.sklearn.base import ExLMEstimatorBase
    from exlm_chem.sklearn.embedder import ExLMEmbedder
    from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier, ExLMMoleculeRegressor

    functions = [embed, iter_embeddings, ExLMEmbedder, ExLMEstimatorBase, MoleculeModel,
                 MoleculeModel.from_checkpoint, build_model, screen]
    assert {f.__qualname__: _default(f) for f in functions} == {
        f.__qualname__: DEFAULT_POOLING for f in functions}
    assert Pooling().states == DEFAULT_POOLING
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
