import gzip

import numpy as np

from exlm_chem.data.corpus import read_smiles_file, split_validation


def test_read_smiles_file_gz_takes_first_field_and_limit(tmp_path):
    path = tmp_path / "c.smi.gz"
    with gzip.open(path, "wt") as handle:
        handle.write("CCO name1\n\nc1ccccc1\tname2\nCC(=O)O\n")
    assert read_smiles_file(path) == ["CCO", "c1ccccc1", "CC(=O)O"]
    assert read_smiles_file(path, limit=2) == ["CCO", "c1ccccc1"]


def test_split_validation_is_disjoint_and_seeded():
    train, valid = split_validation(100, 10, seed=0)
    assert len(valid) == 10 and len(np.intersect1d(train, valid)) == 0
    assert len(train) + len(valid) == 100
    assert not np.array_equal(valid, split_validation(100, 10, seed=1)[1])


def test_subset_takes_molecules_in_the_given_order():
    from exlm_chem.data.corpus import TokenizedCorpus

    ids = np.array([0, 7, 2, 0, 8, 9, 2, 0, 5, 2], dtype=np.uint8)
    corpus = TokenizedCorpus(ids, np.array([0, 3, 7, 10]), 0)
    sub = corpus.subset(np.array([2, 0]))
    assert sub.ids.tolist() == [0, 5, 2, 0, 7, 2] and sub.ids.dtype == np.uint8
    assert sub.offsets.tolist() == [0, 3, 6]


def test_tokenize_corpus_gives_the_tokenizer_s_ids_compactly():
    from exlm_chem.data.corpus import tokenize_corpus
    from exlm_chem.data.tokenizer import SmilesTokenizer

    tok = SmilesTokenizer()
    smiles = ["CCO", "c1ccccc1Cl", "CC(=O)O" * 20, "C[Xx]C"]
    tok.encode("C[Yy]")  # an unknown token counted before: the corpus count leaves it be
    corpus = tokenize_corpus(smiles, tok, max_length=12)
    assert corpus.n_unknown_tokens == 1 and sum(tok.unknown_token_counts.values()) == 2
    assert corpus.ids.dtype == np.uint8  # the packaged vocabulary fits a byte
    for i, s in enumerate(smiles):
        assert corpus.get(i).tolist() == tok.encode(s, max_length=12)
    assert len(tokenize_corpus([], tok)) == 0


def test_decode_corpus_gives_back_the_canonical_smiles_tokenised(pretrain_dir):
    from exlm_chem.data.corpus import decode_corpus, tokenize_corpus
    from exlm_chem.data.hygiene import canonical_smiles
    from exlm_chem.data.tokenizer import SmilesTokenizer

    tok = SmilesTokenizer()
    canon = [canonical_smiles(s)
             for s in read_smiles_file(pretrain_dir / "chembl_mix.smi.gz", limit=300)]
    assert None not in canon
    corpus = tokenize_corpus(canon, tok, max_length=256)
    assert decode_corpus(corpus, tok, max_length=256) == canon  # none reaches 256 tokens
    # truncated molecules (max_length or more tokens) and unknown tokens cannot be read back
    short = tokenize_corpus([*canon[:50], "C[Xx]C", "CC[MASK]"], tok, max_length=40)
    decoded = decode_corpus(short, tok, max_length=40)
    cut = short.lengths()[:50] >= 40
    assert 0 < cut.sum() < 50
    assert decoded[:50] == [None if c else s for s, c in zip(canon[:50], cut, strict=True)]
    assert decoded[50:] == [None, None]
    assert decode_corpus(tokenize_corpus([], tok), tok, max_length=40) == []
