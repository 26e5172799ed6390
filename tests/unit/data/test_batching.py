"""Length-bucketed batches (exlm_chem.data.batching) and the paths that use them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from exlm_chem.data.batching import (
    MAX_PADDING,
    POOL_BATCHES,
    BatchStream,
    bucketed_batches,
    padding_share,
    sorted_batches,
    token_budget_batches,
)
from exlm_chem.data.collate import SpecialIds
from exlm_chem.data.finetune_data import encode_rows
from exlm_chem.data.tokenizer import SmilesTokenizer
from exlm_chem.model.config import ExLMConfig


def test_sorted_batches_exact():
    lengths = [5, 1, 3, 1, 2]
    assert [b.tolist() for b in sorted_batches(lengths, 2, None)] == [[1, 3], [4, 2], [0]]
    # [2, 3] pads 1 of 6 slots (17%): cut; [3, 5] would pad 2 of 10 (20%): cut
    assert [b.tolist() for b in sorted_batches(lengths, 2)] == [[1, 3], [4], [2], [0]]
    assert [b.tolist() for b in sorted_batches(lengths, 5, 0.5)] == [[1, 3, 4, 2], [0]]
    assert sorted_batches([], 4) == []
    with pytest.raises(ValueError, match="batch_size"):
        sorted_batches([1], 0)


def test_bucketed_batches_cover_every_index_once_in_ceil_n_over_b_batches():
    lengths = np.random.default_rng(0).integers(5, 80, 1000)
    batches = bucketed_batches(lengths, 32, np.random.default_rng(1))
    assert len(batches) == 32  # ceil(1000 / 32), as with plain random batches
    assert sorted(np.concatenate(batches).tolist()) == list(range(1000))
    again = bucketed_batches(lengths, 32, np.random.default_rng(1))
    assert all(np.array_equal(a, b) for a, b in zip(batches, again, strict=True))
    other = bucketed_batches(lengths, 32, np.random.default_rng(2))
    assert not all(np.array_equal(a, b) for a, b in zip(batches, other, strict=True))
    # within a pool the batches are sorted runs; the batch order is shuffled
    assert [len(b) for b in batches].count(32) == 31
    assert bucketed_batches([], 8, np.random.default_rng(0)) == []


def test_padding_share_exact():
    assert padding_share([2, 4, 4, 4], [np.array([0, 1]), np.array([2, 3])]) == 0.125
    assert padding_share([3, 3], [np.array([0, 1])]) == 0.0
    assert padding_share([], []) == 0.0


@pytest.fixture(scope="module")
def bbbp_lengths(moleculenet_dir):
    """Encoder input lengths (expanded BOS/EOS) of every BBBP molecule, as fine-tuned."""
    from exlm_chem.data.moleculenet import load_moleculenet

    data = load_moleculenet("bbbp", moleculenet_dir)
    tok = SmilesTokenizer()
    config = ExLMConfig.preset("tiny", vocab_size=len(tok))
    special = SpecialIds(tok.bos_id, tok.pad_id, tok.eos_id, tok.mask_id)
    rows = [np.asarray(tok.encode(s, max_length=256)) for s in data.smiles]
    return encode_rows(rows, config.k_states, special).lengths


def test_bbbp_batches_pad_less_than_15_percent(bbbp_lengths):
    n = len(bbbp_lengths)
    random = [np.random.default_rng(0).permutation(n)[i : i + 32] for i in range(0, n, 32)]
    # measured: 2039 molecules; random batches of 32 pad 0.57, of 128 0.69
    assert padding_share(bbbp_lengths, random) > 0.5
    for batch_size in (32, 64, 128):
        batches = sorted_batches(bbbp_lengths, batch_size)
        assert max(padding_share(bbbp_lengths, [b]) for b in batches) <= MAX_PADDING
    for batch_size in (16, 32, 64):  # 128: one pool, the 128 longest pad 17% (the tail)
        for seed in range(3):
            batches = bucketed_batches(bbbp_lengths, batch_size, np.random.default_rng(seed))
            assert padding_share(bbbp_lengths, batches) < MAX_PADDING, (batch_size, seed)
    assert POOL_BATCHES * 32 < n  # the training pools mix: more than one pool per epoch


class _Widths:
    """Padding share of every encoder call: real tokens and padded slots."""

    def __init__(self, encoder: torch.nn.Module) -> None:
        self.real = self.slots = 0
        encoder.register_forward_pre_hook(self._hook)

    def _hook(self, module, args):
        padding_mask = args[3]
        self.real += int(padding_mask.sum())
        self.slots += padding_mask.numel()

    @property
    def share(self) -> float:
        return 1 - self.real / self.slots


def test_embed_predict_and_fine_tuning_batches_pad_little(tiny_checkpoint, moleculenet_dir):
    from exlm_chem.data.moleculenet import load_moleculenet
    from exlm_chem.embedding import embed
    from exlm_chem.model.heads import PredictionHead
    from exlm_chem.model.molecule_model import PREDICT, MoleculeModel
    from exlm_chem.presets import FinetuneSettings
    from exlm_chem.train.finetune import LabelledSmiles, finetune

    data = load_moleculenet("bbbp", moleculenet_dir)
    smiles, labels = data.smiles[:640], data.labels[:640].astype(np.float64)
    embedder = MoleculeModel.from_checkpoint(tiny_checkpoint, device="cpu")
    spy = _Widths(embedder.encoder)
    embed(smiles, model=embedder, batch_size=64)
    assert spy.share < MAX_PADDING, spy.share

    torch.manual_seed(0)
    net = MoleculeModel(embedder.encoder, embedder.tokenizer,
                        head=PredictionHead(embedder.dim, 1))
    spy = _Widths(net.encoder)
    finetune(net, LabelledSmiles(smiles, labels), FinetuneSettings(epochs=1, batch_size=16))
    assert spy.share < MAX_PADDING, spy.share
    spy.real = spy.slots = 0
    net.run(smiles, PREDICT, batch_size=64)
    assert spy.share < MAX_PADDING, spy.share


# ------------------------------------------------------------------ pre-training batches
def _rng(seed: int, epoch: int) -> np.random.Generator:
    """The generator :class:`BatchStream` draws an epoch's pre-training batches from."""
    return np.random.default_rng([seed, epoch])


def test_token_budget_batches_cover_everything_once_within_budget():
    lengths = np.random.default_rng(0).integers(5, 60, size=3000)
    batches = token_budget_batches(lengths, 512, _rng(3, 0))
    flat = np.concatenate(batches)
    assert sorted(flat.tolist()) == list(range(3000))
    for b in batches:
        assert len(b) == 1 or lengths[b].max() * len(b) <= 512
    # bucketing keeps padding low: < 15% of the padded tokens
    padded = sum(lengths[b].max() * len(b) for b in batches)
    assert lengths.sum() / padded > 0.85


def test_token_budget_batches_depend_on_seed_and_epoch_only():
    lengths = np.random.default_rng(1).integers(5, 40, size=500)
    a = token_budget_batches(lengths, 256, _rng(0, 1))
    b = token_budget_batches(lengths, 256, _rng(0, 1))
    c = token_budget_batches(lengths, 256, _rng(0, 2))
    d = token_budget_batches(lengths, 256, _rng(1, 1))
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
        new = token_budget_batches(lengths, max_tokens, _rng(5, 2), pool_batches=bucket)
        old = _batches_one_molecule_at_a_time(lengths, max_tokens, 5, 2, bucket)
        assert len(new) == len(old)
        assert all(np.array_equal(a, b) for a, b in zip(new, old, strict=True))
