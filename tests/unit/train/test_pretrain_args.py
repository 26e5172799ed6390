"""The descriptor loss's options (``aux_clip``, ``aux_share``): checked once in
:func:`check_args`, and offered by ``exlm-chem pretrain`` with their help."""

from __future__ import annotations

import argparse

import pytest

from exlm_chem.train.pretrain_args import PretrainArgs, check_args


def _args(**kw) -> PretrainArgs:
    return PretrainArgs(corpus=["c"], out="o", **kw)


def test_the_defaults_leave_the_descriptor_loss_as_it_was():
    args = check_args(_args())
    assert (args.aux_weight, args.aux_clip, args.aux_share) == (0.0, None, 1.0)
    args = check_args(_args(aux_weight=1.0, aux_clip=3.0, aux_share=0.15))
    assert (args.aux_clip, args.aux_share) == (3.0, 0.15)
    assert check_args(_args(aux_weight=1.0, aux_share=1.0)).aux_share == 1.0
    assert check_args(_args()).token_weight == 1.0
    assert check_args(_args(token_weight=0.0, aux_weight=1.0)).token_weight == 0.0


@pytest.mark.parametrize(("kw", "message"), [
    ({"aux_weight": 1.0, "aux_clip": 0.0}, "aux_clip must be > 0, got 0.0"),
    ({"aux_weight": 1.0, "aux_clip": -6.0}, "aux_clip must be > 0, got -6.0"),
    ({"aux_weight": 1.0, "aux_clip": float("nan")}, "aux_clip must be > 0, got nan"),
    ({"aux_clip": 6.0}, r"aux_clip needs aux_weight > 0"),
    ({"aux_weight": 1.0, "aux_share": 0.0}, r"aux_share must be in \(0, 1\], got 0.0"),
    ({"aux_weight": 1.0, "aux_share": 1.5}, r"aux_share must be in \(0, 1\], got 1.5"),
    ({"aux_weight": 1.0, "aux_share": -0.1}, r"aux_share must be in \(0, 1\], got -0.1"),
    ({"aux_share": 0.15}, r"aux_share < 1 needs aux_weight > 0"),
    ({"token_weight": -1.0}, "token_weight must be >= 0, got -1.0"),
    ({"token_weight": float("nan")}, "token_weight must be >= 0, got nan"),
    ({"token_weight": 0.0}, r"token_weight 0 needs aux_weight, contrast_weight or translate_w"),
    ({"aux_targets": "mordred"}, "aux_targets must be one of rdkit2d, rdkit2d_fast, morgan"),
    ({"contrast_weight": -1.0}, "contrast_weight must be >= 0, got -1.0"),
    ({"contrast_weight": float("nan")}, "contrast_weight must be >= 0, got nan"),
    ({"contrast_weight": 1.0, "repeat_k": 2}, "contrast_weight does not combine with repeat_k"),
    ({"contrast_temperature": 0.0}, "contrast_temperature must be > 0, got 0.0"),
    ({"translate_weight": -1.0}, "translate_weight must be >= 0, got -1.0"),
    ({"translate_weight": float("nan")}, "translate_weight must be >= 0, got nan"),
    ({"translate_weight": 1.0, "repeat_k": 2}, "translate_weight does not combine with repeat_k"),
])
def test_bad_descriptor_options_are_rejected(kw, message):
    with pytest.raises(ValueError, match=message):
        check_args(_args(**kw))


def test_the_equivalence_loss_alone_is_a_loss_to_train():
    args = check_args(_args(token_weight=0.0, contrast_weight=1.0))
    assert (args.token_weight, args.contrast_weight, args.contrast_temperature) == (0.0, 1.0, 0.1)
    assert check_args(_args()).contrast_weight == 0.0  # off unless asked for


def test_the_translation_loss_alone_is_a_loss_to_train():
    args = check_args(_args(token_weight=0.0, translate_weight=1.0))
    assert (args.token_weight, args.translate_weight) == (0.0, 1.0)
    assert check_args(_args()).translate_weight == 0.0  # off unless asked for


def test_text_pretraining_refuses_smiles_views():
    from exlm_chem.text.pretrain_args import TextPretrainArgs

    with pytest.raises(ValueError, match=r"contrast_weight .* does not apply to text"):
        TextPretrainArgs(corpus=["c"], out="o", train_tokenizer=True, contrast_weight=1.0)
    with pytest.raises(ValueError, match=r"translate_weight .* does not apply to text"):
        TextPretrainArgs(corpus=["c"], out="o", train_tokenizer=True, translate_weight=1.0)


def test_both_problems_are_named_at_once():
    with pytest.raises(ValueError, match=r"aux_clip needs aux_weight.*; aux_share < 1 needs"):
        check_args(_args(aux_clip=6.0, aux_share=0.15))


def test_pretrain_offers_both_with_their_help():
    from exlm_chem.cli.pretrain import PretrainCommand

    parser = argparse.ArgumentParser()
    PretrainCommand.add_arguments(parser)
    text = " ".join(parser.format_help().split())
    assert "--aux-clip AUX_CLIP clip the standardised descriptor targets" in text
    assert "--aux-share AUX_SHARE share of the descriptor columns" in text
    assert "--aux-targets AUX_TARGETS the molecule-level targets --corpus computes" in text
    parsed = parser.parse_args(["--prepared", "p", "--out", "o", "--aux-weight", "1",
                                "--aux-clip", "6", "--aux-share", "0.15"])
    assert (parsed.aux_clip, parsed.aux_share) == (6.0, 0.15)
    default = parser.parse_args(["--prepared", "p", "--out", "o"])
    assert (default.aux_clip, default.aux_share) == (None, 1.0)


def test_aux_targets_are_for_a_corpus_the_run_prepares():
    assert check_args(_args(aux_weight=1.0, aux_targets="morgan")).aux_targets == "morgan"
    with pytest.raises(ValueError, match="aux_targets is for --corpus"):
        check_args(PretrainArgs(prepared="p", out="o", aux_weight=1.0, aux_targets="morgan"))
