import gzip

import numpy as np

from exlm_chem.corpus import (
    BatchStream,
    read_smiles_file,
    split_validation,
    token_budget_batches,
)


def test_read_smiles_file_gz_takes_first_field_and_limit(tmp_path):
    path = tmp_path / "c.smi.gz"
    with gzip.open(path, "wt") as handle:
        handle.write("CCO name1\n\nc1ccccc1\tname2\nCC(=O)O\n")
    assert read_smiles_file(path) == ["CCO", "c1ccccc1", "CC(=O)O"]
    assert read_smiles_file(path, limit=2) == ["CCO", "c1ccccc1"]


def test_token_budget_batches_cover_everything_once_within_budget():
    lengths = np.random.default_rng(0).integers(5, 60, size=3000)
    batches = token_budget_batches(lengths, max_tokens=512, seed=3, epoch=0)
    flat = np.concatenate(batches)
    assert sorted(flat.tolist()) == list(range(3000))
    for b in batches:
        assert len(b) == 1 or lengths[b].max() * len(b) <= 512
    # bucketing keeps padding low: < 15% of the padded tokens
    padded = sum(lengths[b].max() * len(b) for b in batches)
    assert lengths.sum() / padded > 0.85


def test_batches_depend_on_seed_and_epoch_only():
    lengths = np.random.default_rng(1).integers(5, 40, size=500)
    a = token_budget_batches(lengths, 256, seed=0, epoch=1)
    b = token_budget_batches(lengths, 256, seed=0, epoch=1)
    c = token_budget_batches(lengths, 256, seed=0, epoch=2)
    d = token_budget_batches(lengths, 256, seed=1, epoch=1)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c, strict=False))
    assert not all(np.array_equal(x, y) for x, y in zip(a, d, strict=False))


def test_stream_resumes_at_a_saved_position():
    lengths = np.random.default_rng(2).integers(5, 40, size=200)
    stream = BatchStream(lengths, 256, seed=0)
    straight = [next(it) for it in [stream.iterate()] for _ in range(40)]
    epoch, position, _ = straight[24]
    resumed = stream.iterate(epoch, position)
    for expected in straight[24:]:
        got = next(resumed)
        assert got[:2] == expected[:2] and np.array_equal(got[2], expected[2])


def test_split_validation_is_disjoint_and_seeded():
    train, valid = split_validation(100, 10, seed=0)
    assert len(valid) == 10 and len(np.intersect1d(train, valid)) == 0
    assert len(train) + len(valid) == 100
    assert not np.array_equal(valid, split_validation(100, 10, seed=1)[1])
