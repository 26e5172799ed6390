"""The named settings: model sizes, pre-training recipes, the paper's fine-tuning Table 8."""

from __future__ import annotations

import dataclasses

import pytest

from exlm_chem.model.config import ExLMConfig
from exlm_chem.presets import (
    FINETUNE_PRESETS,
    MODEL_SIZES,
    PRETRAIN_RECIPES,
    REGRESSION_FINETUNE,
    FinetuneSettings,
    finetune_preset,
    finetune_presets,
    fitted_warmup,
    lookup,
    model_preset,
)
from exlm_chem.train.pretrain_args import PretrainArgs, check_args, learning_rate

# the paper's Table 8: epochs, batch size, lr, warm-up ratio, dropout, pooler dropout
TABLE_8 = {
    "bace": (60, 64, 1e-4, 0.06, 0.1, 0.2),
    "bbbp": (40, 128, 4e-4, 0.06, 0.1, 0.1),
    "tox21": (80, 128, 1e-4, 0.06, 0.1, 0.1),
    "sider": (100, 32, 5e-4, 0.4, 0.1, 0.0),
    "muv": (40, 128, 2e-5, 0.2, 0.1, 0.1),
    "clintox": (100, 256, 5e-5, 0.1, 0.1, 0.5),
    "toxcast": (80, 64, 1e-4, 0.06, 0.1, 0.1),
}


def test_presets_are_table_8():
    presets = finetune_presets()
    assert set(presets) == set(TABLE_8)
    for name, row in TABLE_8.items():
        s = finetune_preset(name.upper())
        assert (s.epochs, s.batch_size, s.lr, s.warmup_ratio, s.dropout, s.pooler_dropout) == row
        assert (s.weight_decay, s.clip_norm) == (0.0, 1.0)
    finetune_presets()["bbbp"] = None  # a copy: the shipped table stays as it is
    assert finetune_preset("bbbp").lr == 4e-4
    with pytest.raises(ValueError, match="no fine-tuning preset 'esol'"):
        finetune_preset("esol")


def test_settings_reject_bad_values():
    with pytest.raises(ValueError, match=r"epochs must be an integer >= 0.*lr has an invalid"):
        FinetuneSettings(epochs=-1, lr=0.0)
    with pytest.raises(ValueError, match="pooler_dropout"):
        FinetuneSettings(pooler_dropout=1.0)
    with pytest.raises(ValueError, match="batch_size"):
        FinetuneSettings(batch_size=True)




def test_warmup_is_cut_to_a_tenth_of_a_short_run():
    assert fitted_warmup(10_000, 6_000) == 600
    assert fitted_warmup(100, 5_000) == 100
    assert fitted_warmup(30, 5) == 1


def test_paper_preset_fills_the_schedule_unless_given():
    paper = check_args(PretrainArgs(corpus=["c"], out="o", preset="paper"))
    assert (paper.max_steps, paper.warmup_steps, paper.max_tokens) == (120_000, 10_000, 65_536)
    assert (paper.lr, paper.betas, paper.clip_norm, paper.weight_decay) == (
        5e-4, (0.9, 0.98), 1.0, 0.0)
    assert model_preset("paper") == "base" and model_preset("tiny") == "tiny"
    mine = check_args(PretrainArgs(corpus=["c"], out="o", preset="paper", max_tokens=131_072))
    assert (mine.max_steps, mine.max_tokens) == (120_000, 131_072)
    tiny = check_args(PretrainArgs(corpus=["c"], out="o", preset="tiny"))
    assert (tiny.max_steps, tiny.warmup_steps, tiny.max_tokens) == (1000, 100, 8192)


def test_a_preset_warmup_shrinks_with_explicit_steps_but_an_explicit_one_stays():
    short = check_args(PretrainArgs(corpus=["c"], out="o", preset="paper", max_steps=3000))
    assert (short.max_steps, short.warmup_steps) == (3000, 300)
    assert learning_rate(2999, short) < learning_rate(299, short)  # it decays
    mine = check_args(PretrainArgs(corpus=["c"], out="o", preset="paper", max_steps=3000,
                                   warmup_steps=2000))
    assert mine.warmup_steps == 2000


def test_every_kind_is_a_table_of_frozen_records_read_through_one_lookup():
    for table in (MODEL_SIZES, PRETRAIN_RECIPES, FINETUNE_PRESETS):
        for record in table.values():
            assert dataclasses.is_dataclass(record)
            with pytest.raises(dataclasses.FrozenInstanceError):
                record.__setattr__(dataclasses.fields(record)[0].name, None)
    assert set(PRETRAIN_RECIPES) == {*MODEL_SIZES, "paper"}
    assert all(r.model in MODEL_SIZES for r in PRETRAIN_RECIPES.values())
    with pytest.raises(ValueError, match=r"no pre-training preset 'huge'; choose from "
                                         r"\['base', 'paper', 'small', 'tiny'\]"):
        lookup(PRETRAIN_RECIPES, "huge", "pre-training")


def test_model_sizes_build_their_configs():
    tiny = ExLMConfig.preset("tiny", vocab_size=50)
    assert (tiny.n_layers, tiny.d_model, tiny.n_heads, tiny.d_ffn, tiny.k_states,
            tiny.max_expanded_positions) == (2, 64, 2, 128, 2, 512)
    # fields a size leaves alone keep the config's defaults
    assert ExLMConfig.preset("small", vocab_size=50).max_expanded_positions == 1024
    assert tiny.dropout == ExLMConfig(vocab_size=50).dropout


def test_an_unknown_pretraining_preset_is_named_before_training():
    with pytest.raises(ValueError, match="no pre-training preset 'huge'"):
        check_args(PretrainArgs(corpus=["c"], out="o", preset="huge"))


def test_regression_settings_are_table_8s_bace_row_with_head_dropout_0_1():
    assert REGRESSION_FINETUNE == FinetuneSettings(epochs=60, batch_size=64, lr=1e-4,
                                                   warmup_ratio=0.06, dropout=0.1,
                                                   pooler_dropout=0.1)
