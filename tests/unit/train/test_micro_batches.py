"""Micro-batches of CPU fine-tuning: bounded tokens per pass, the same optimiser steps."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from exlm_chem.data.tokenizer import SmilesTokenizer
from exlm_chem.model.config import ExLMConfig
from exlm_chem.model.molecule_model import build_model
from exlm_chem.presets import FinetuneSettings
from exlm_chem.train.finetune import LabelledSmiles, finetune
from exlm_chem.train.micro_batches import micro_batches


def test_micro_batches_exact():
    lengths = np.array([5, 9, 4, 7, 30])
    idx = np.array([3, 0, 2, 4, 1])
    assert [p.tolist() for p in micro_batches(idx, lengths, 12)] == [[3, 0], [2], [4], [1]]
    assert [p.tolist() for p in micro_batches(idx, lengths, None)] == [idx.tolist()]
    assert [p.tolist() for p in micro_batches(idx, lengths, 55)] == [idx.tolist()]
    assert [p.tolist() for p in micro_batches(idx, lengths, 54)] == [[3, 0, 2, 4], [1]]


@pytest.fixture(scope="module")
def tox21(moleculenet_dir):
    from exlm_chem.data.moleculenet import load_moleculenet

    data = load_moleculenet("tox21", moleculenet_dir)
    labels = data.labels[:72, :3].astype(np.float64)
    labels[:6] = np.nan  # molecules without any label: a micro-batch of them adds nothing
    return data.smiles[:72], labels


def _train(smiles, labels, task, monkeypatch, step_tokens):
    monkeypatch.setattr("exlm_chem.train.finetune.STEP_TOKENS", step_tokens)
    tokenizer = SmilesTokenizer()
    config = ExLMConfig.preset("tiny", vocab_size=len(tokenizer), dropout=0.0,
                               attention_dropout=0.0)
    torch.manual_seed(0)
    net = build_model(config, tokenizer, 3, pooler_dropout=0.0)
    result = finetune(net, LabelledSmiles(smiles[:64], labels[:64]),
                      FinetuneSettings(epochs=2, batch_size=16, lr=1e-3), task=task, seed=1)
    return result, {n: p.detach().clone() for n, p in net.named_parameters()}


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_micro_batched_training_takes_the_same_steps(tox21, monkeypatch, task):
    whole, whole_params = _train(*tox21, task, monkeypatch, None)
    split, split_params = _train(*tox21, task, monkeypatch, 60)  # 2-6 molecules a pass
    assert split.n_steps == whole.n_steps == 8
    np.testing.assert_allclose([h.train_loss for h in split.history],
                               [h.train_loss for h in whole.history], rtol=1e-5)
    for name, value in whole_params.items():
        torch.testing.assert_close(split_params[name], value, atol=2e-5, rtol=1e-4, msg=name)
