"""Pre-training input: ``--corpus`` files prepared into the run directory, and fragment
masking on a prepared corpus (which stores token ids, not strings)."""

from __future__ import annotations

import numpy as np
import pytest

from exlm_chem.data.collate import SpecialIds, collate_mlm, mask_tokens
from exlm_chem.data.corpus import tokenize_corpus
from exlm_chem.data.corpus_prepare import load_prepared
from exlm_chem.data.tokenizer import SmilesTokenizer
from exlm_chem.train.pretrain_args import PretrainArgs
from exlm_chem.train.pretrain_data import RUN_CORPUS, BatchMaker, prepare_run_corpus


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
