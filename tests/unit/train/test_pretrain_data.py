"""Pre-training input: ``--corpus`` files prepared into the run directory, fragment
masking on a prepared corpus (which stores token ids, not strings), and the descriptor
columns each step's auxiliary loss counts."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from exlm_chem.data.batching import BatchStream
from exlm_chem.data.collate import SpecialIds, collate_mlm, mask_tokens
from exlm_chem.data.corpus import tokenize_corpus
from exlm_chem.data.corpus_prepare import load_prepared
from exlm_chem.data.tokenizer import SmilesTokenizer
from exlm_chem.train.pretrain_args import PretrainArgs
from exlm_chem.train.pretrain_data import (
    RUN_CORPUS,
    BatchMaker,
    PretrainBatches,
    descriptor_columns,
    prepare_run_corpus,
)


def _molecules(directory) -> list[str]:
    """Every molecule of a prepared corpus, decoded from its ids (train, then valid)."""
    tok = SmilesTokenizer()
    prepared = load_prepared(directory, tok.tokens)
    return [tok.decode(part.get(i)) for part in (prepared.train, prepared.valid)
            for i in range(len(part))]


def _args(corpus, out, **kw) -> PretrainArgs:
    return PretrainArgs(corpus=[str(corpus)], out=str(out), valid_size=4, hygiene=False, **kw)


def test_corpus_files_are_prepared_canonical_and_deduplicated_then_reused(
        messy_corpus, tmp_path, monkeypatch):
    from exlm_chem.data.hygiene import canonical_smiles

    path, expected = messy_corpus
    directory = prepare_run_corpus(_args(path, tmp_path))
    assert directory == tmp_path / RUN_CORPUS
    molecules = _molecules(directory)
    # the molecules the encoder is later fed: canonical, each once, none lost
    assert sorted(molecules) == sorted(expected)
    assert all(canonical_smiles(s) == s for s in molecules)
    assert "C(C)O" not in molecules and "OC1=CC=CC=C1" not in molecules

    def prepare_again(*args, **kwargs):
        raise AssertionError("the prepared folder should have been reused")

    monkeypatch.setattr("exlm_chem.data.corpus_prepare.prepare_corpus", prepare_again)
    assert prepare_run_corpus(_args(path, tmp_path)) == directory
    # other settings would continue the run on other data: refused, naming the difference
    with pytest.raises(ValueError, match=r"other files or settings \(limit: None there, 30"):
        prepare_run_corpus(_args(path, tmp_path, corpus_limit=30))
    with pytest.raises(ValueError, match="descriptors: None there, rdkit2d here"):
        prepare_run_corpus(_args(path, tmp_path, aux_weight=1.0))
    with pytest.raises(ValueError, match="descriptors: None there, morgan here"):
        prepare_run_corpus(_args(path, tmp_path, aux_weight=1.0, aux_targets="morgan"))



def test_a_checkpoint_without_a_prepared_corpus_is_named_before_preparing(
        messy_corpus, tmp_path, caplog):
    from exlm_chem.train.pretrain_checkpoint import run_checkpoint_dir
    from exlm_chem.train.training_state import SCALARS

    path, _ = messy_corpus
    with caplog.at_level("WARNING", logger="exlm_chem.train.pretrain_data"):
        prepare_run_corpus(_args(path, tmp_path / "fresh"))
    assert "predates" not in caplog.text
    run_checkpoint_dir(tmp_path / "old").mkdir(parents=True)
    (run_checkpoint_dir(tmp_path / "old") / SCALARS).write_text("{}")
    with caplog.at_level("WARNING", logger="exlm_chem.train.pretrain_data"):
        directory = prepare_run_corpus(_args(path, tmp_path / "old"))
    assert f"checkpoint predates {directory}" in caplog.text

def test_fragment_masking_reads_the_smiles_back_from_the_ids():
    from exlm_chem.data.fragments import fragment_token_groups

    tok = SmilesTokenizer()
    special = SpecialIds(tok.bos_id, tok.pad_id, tok.eos_id, tok.mask_id)
    smiles = ["CC(=O)Nc1ccc(O)cc1", "O=C(O)c1ccccc1OC(C)=O", "CCN(CC)CCOC(=O)c1ccc(N)cc1"]
    corpus = tokenize_corpus(smiles, tok)  # ids only, as a prepared corpus holds them
    args = PretrainArgs(corpus=["-"], out="-", objective="mlm", masking="fragment",
                        mask_ratio=0.3)
    index = np.arange(len(smiles))
    got = BatchMaker(corpus, special, args, 2, tok)(index, np.random.default_rng(0))
    # what masking the source strings' BRICS fragments gives, with the same draws
    rng = np.random.default_rng(0)
    samples = []
    for s in smiles:
        ids = np.asarray(tok.encode(s))
        groups = fragment_token_groups(s, tok, len(ids))
        assert len(groups) > 1  # every molecule here has BRICS bonds to cut
        samples.append(mask_tokens(ids, 0.3, rng, special, groups))
    want = collate_mlm(samples, special)
    for a, b in zip(got, want, strict=True):
        assert a.equal(b)


def test_views_are_randomised_smiles_of_the_same_molecules_unmasked_and_reproducible():
    from rdkit import Chem

    tok = SmilesTokenizer()
    special = SpecialIds(tok.bos_id, tok.pad_id, tok.eos_id, tok.mask_id)
    smiles = ["CC(=O)Nc1ccc(O)cc1", "O=C(O)c1ccccc1OC(C)=O", "CCN(CC)CCOC(=O)c1ccc(N)cc1", "CO"]
    corpus = tokenize_corpus(smiles, tok)
    index = np.array([2, 0, 3, 1])
    off = BatchMaker(corpus, special, PretrainArgs(corpus=["-"], out="-"), 2, tok)
    assert off.views(index, np.random.default_rng(0)) is None
    maker = BatchMaker(corpus, special, PretrainArgs(corpus=["-"], out="-", contrast_weight=1.0),
                       2, tok)
    views = maker.views(index, np.random.default_rng(0))
    assert views.labels.eq(-100).all() and not views.input_ids.eq(tok.mask_id).any()
    strings = [tok.decode(row[mask].tolist()) for row, mask in
               zip(views.input_ids, views.padding_mask, strict=True)]
    # each row is its own molecule, in the batch's order, mostly written another way
    for got, i in zip(strings, index, strict=True):
        assert Chem.CanonSmiles(got) == Chem.CanonSmiles(smiles[i])
    assert sum(got != smiles[i] for got, i in zip(strings, index, strict=True)) >= 2
    again = maker.views(index, np.random.default_rng(0))
    assert all(a.equal(b) for a, b in zip(views, again, strict=True))
    other = maker.views(index, np.random.default_rng(1))
    assert not other.input_ids.equal(views.input_ids) if other.input_ids.shape == \
        views.input_ids.shape else True


def test_the_translation_loss_gets_views_and_the_canonical_ids_padded():
    tok = SmilesTokenizer()
    special = SpecialIds(tok.bos_id, tok.pad_id, tok.eos_id, tok.mask_id)
    smiles = ["CC(=O)Nc1ccc(O)cc1", "CO", "c1ccccc1"]
    corpus = tokenize_corpus(smiles, tok)
    index = np.array([1, 0, 2])
    off = BatchMaker(corpus, special, PretrainArgs(corpus=["-"], out="-", contrast_weight=1.0),
                     2, tok)
    assert off.canonical(index) is None  # the SMILES-equivalence loss alone needs no ids
    maker = BatchMaker(corpus, special, PretrainArgs(corpus=["-"], out="-",
                                                     translate_weight=1.0), 2, tok)
    assert maker.views(index, np.random.default_rng(0)) is not None
    canonical = maker.canonical(index)
    assert canonical.dtype == torch.long and canonical.shape == (3, len(corpus.get(0)))
    for row, i in zip(canonical, index, strict=True):
        ids = corpus.get(int(i))
        assert row[: len(ids)].tolist() == ids.tolist() and (row[len(ids):] == tok.pad_id).all()
        assert ids[0] == tok.bos_id and ids[-1] == tok.eos_id


def test_descriptor_columns_are_a_share_drawn_from_the_seed_and_step():
    first = descriptor_columns(217, 0.15, seed=0, step=7)
    assert first.dtype == torch.bool and first.shape == (217,)
    assert int(first.sum()) == round(0.15 * 217) == 33
    assert torch.equal(descriptor_columns(217, 0.15, seed=0, step=7), first)  # reproducible
    draws = [descriptor_columns(217, 0.15, seed=0, step=s) for s in range(20)]
    assert len({tuple(d.nonzero().flatten().tolist()) for d in draws}) == 20  # a new draw a step
    assert not torch.equal(descriptor_columns(217, 0.15, seed=1, step=7), first)
    # seeds are not offsets of steps (a naive seed + step would make these two equal)
    assert not torch.equal(descriptor_columns(217, 0.15, seed=1, step=0),
                           descriptor_columns(217, 0.15, seed=0, step=1))
    # at least one column, however small the share; a share near 1 can take them all
    assert int(descriptor_columns(35, 0.001, 0, 0).sum()) == 1
    assert bool(descriptor_columns(35, 0.99, 0, 0).all())
    # over many steps every column is drawn about as often (a uniform draw)
    counts = torch.stack([descriptor_columns(40, 0.25, 3, s) for s in range(2000)]).sum(0)
    assert counts.min() > 0.2 * 2000 and counts.max() < 0.3 * 2000


def _stream_and_maker(share: float, n: int = 60, width: int = 20):
    tok = SmilesTokenizer()
    special = SpecialIds(tok.bos_id, tok.pad_id, tok.eos_id, tok.mask_id)
    rng = np.random.default_rng(0)
    smiles = ["C" * int(k) for k in rng.integers(1, 12, n)]
    corpus = tokenize_corpus(smiles, tok)
    targets = rng.normal(size=(n, width)).astype(np.float32)
    args = PretrainArgs(corpus=["-"], out="-", aux_weight=1.0, aux_share=share)
    stream = BatchStream(corpus.lengths(), 64, seed=0)
    return stream, BatchMaker(corpus, special, args, 2, tok, targets)


def test_each_step_batch_carries_its_columns_and_a_resumed_stream_draws_the_same():
    stream, maker = _stream_and_maker(0.25)
    straight = list(itertools.islice(PretrainBatches(stream, maker, 5, 0, 0), 12))
    assert [int(b.columns.sum()) for b in straight] == [5] * 12
    for step, item in enumerate(straight):
        assert torch.equal(item.columns, descriptor_columns(20, 0.25, 5, step))
    # resumed after step 7 (the training state keeps step, epoch and position), the stream
    # goes on with step 7's batch and columns; the stream spans several epochs here
    assert len({b.epoch for b in straight}) > 1
    k = 7
    resumed = PretrainBatches(stream, maker, 5, straight[k].epoch, straight[k].position,
                              step=k)
    for want, got in zip(straight[k:], itertools.islice(resumed, 12 - k), strict=True):
        assert (got.epoch, got.position) == (want.epoch, want.position)
        assert torch.equal(got.targets, want.targets) and torch.equal(got.columns, want.columns)
    # every rank of a distributed run counts the same columns for its own rows
    rank1 = next(iter(PretrainBatches(stream, maker, 5, 0, 0, rank=1, world=2)))
    assert torch.equal(rank1.columns, straight[0].columns)


def test_all_columns_count_without_a_mask():
    stream, maker = _stream_and_maker(1.0)
    item = next(iter(PretrainBatches(stream, maker, 5, 0, 0)))
    assert item.targets is not None and item.columns is None  # today's loss, no mask made
