import gzip

import numpy as np

from exlm_chem.data.corpus import (
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


def _batches_one_molecule_at_a_time(lengths, max_tokens, seed, epoch, bucket_size=100):
    """The earlier per-molecule greedy loop, kept as the oracle of the bisection."""
    rng = np.random.default_rng([seed, epoch])
    order = rng.permutation(len(lengths))
    window = max(1, bucket_size * max(1, max_tokens // max(1, int(np.median(lengths)))))
    batches = []
    for start in range(0, len(order), window):
        chunk = order[start : start + window]
        chunk = chunk[np.argsort(lengths[chunk], kind="stable")]
        current, longest = [], 0
        for i in chunk:
            longest_next = max(longest, int(lengths[i]))
            if current and longest_next * (len(current) + 1) > max_tokens:
                batches.append(np.array(current))
                current, longest_next = [], int(lengths[i])
            current.append(int(i))
            longest = longest_next
        if current:
            batches.append(np.array(current))
    return [batches[i] for i in rng.permutation(len(batches))]


def test_bisected_batches_equal_the_per_molecule_loop():
    lengths = np.random.default_rng(4).integers(3, 300, size=5000)  # some over budget
    for max_tokens, bucket in ((256, 100), (1024, 3), (64, 1)):
        new = token_budget_batches(lengths, max_tokens, seed=5, epoch=2, bucket_size=bucket)
        old = _batches_one_molecule_at_a_time(lengths, max_tokens, 5, 2, bucket)
        assert len(new) == len(old)
        assert all(np.array_equal(a, b) for a, b in zip(new, old, strict=True))


def test_subset_takes_molecules_in_the_given_order():
    from exlm_chem.data.corpus import TokenizedCorpus

    ids = np.array([0, 7, 2, 0, 8, 9, 2, 0, 5, 2], dtype=np.uint8)
    corpus = TokenizedCorpus(ids, np.array([0, 3, 7, 10]), ["a", "b", "c"], 0)
    sub = corpus.subset(np.array([2, 0]))
    assert sub.ids.tolist() == [0, 5, 2, 0, 7, 2] and sub.ids.dtype == np.uint8
    assert sub.offsets.tolist() == [0, 3, 6] and sub.smiles == ["c", "a"]
    assert TokenizedCorpus(ids, corpus.offsets, [], 0).subset(np.array([1])).smiles == []
