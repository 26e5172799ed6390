"""The unmasked encoder input: ExLM checkpoints expand BOS/EOS, MLM twins never do."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from exlm_chem.data.collate import SpecialIds
from exlm_chem.data.inference_inputs import inference_expansion, inference_inputs
from exlm_chem.model.config import ExLMConfig
from exlm_chem.model.pooling import DEFAULT_POOLING

SPECIAL = SpecialIds(bos=0, pad=1, eos=2, mask=4)


def test_expansion_follows_the_objective_not_k_states():
    assert inference_expansion(ExLMConfig.preset("tiny", vocab_size=50)) == 2
    assert inference_expansion(ExLMConfig.preset("tiny", vocab_size=50, objective="mlm")) == 1
    assert inference_expansion({"objective": "exlm", "k_states": 4}) == 4
    assert inference_expansion({"objective": "mlm", "k_states": 4}) == 1
    with pytest.raises(ValueError, match="k_states=1"):
        inference_expansion({"objective": "exlm", "k_states": 1})
    with pytest.raises(ValueError, match="unknown objective"):
        inference_expansion({"objective": "bert", "k_states": 2})


def test_inputs_expanded_and_unexpanded():
    rows = [np.array([0, 7, 8, 2]), np.array([0, 9, 2])]
    ids, pos_o, pos_c, mask = inference_inputs(rows, 2, SPECIAL)
    assert ids.tolist() == [[0, 0, 7, 8, 2, 2], [0, 0, 9, 2, 2, 1]]
    assert pos_o.tolist() == [[0, 0, 1, 2, 3, 3], [0, 0, 1, 2, 2, 0]]
    assert pos_c.tolist() == [[1, 2, 0, 0, 1, 2], [1, 2, 0, 1, 2, 0]]
    assert mask.sum(1).tolist() == [6, 5]
    ids, pos_o, pos_c, mask = inference_inputs(rows, 1, SPECIAL)
    assert ids.tolist() == [[0, 7, 8, 2], [0, 9, 2, 1]]
    assert pos_o.tolist() == [[0, 1, 2, 3], [0, 1, 2, 0]]
    assert pos_c.tolist() == [[0, 0, 0, 0], [0, 0, 0, 0]]  # as in the twin's pre-training
    assert mask.tolist() == [[True] * 4, [True, True, True, False]]


class _Spy:
    """Records the (input_ids, pos_copy) of every encoder call."""

    def __init__(self, encoder: torch.nn.Module) -> None:
        self.calls: list[tuple[torch.Tensor, torch.Tensor]] = []
        encoder.register_forward_pre_hook(self._hook)

    def _hook(self, module, args):
        input_ids, _, pos_copy, padding_mask = args[:4]
        self.calls.append((input_ids[padding_mask], pos_copy[padding_mask]))

    def bos_per_row(self, bos: int) -> set[int]:
        return {int(n) for ids, _ in self.calls for n in [(ids == bos).sum()]}

    def max_copy(self) -> int:
        return max(int(c.max()) for _, c in self.calls)


def _finetune_inputs(checkpoint) -> _Spy:
    from exlm_chem.model.molecule_model import build_model
    from exlm_chem.model.pretrained import load_backbone
    from exlm_chem.presets import FinetuneSettings
    from exlm_chem.train.finetune import LabelledSmiles, finetune

    torch.manual_seed(0)
    backbone = load_backbone(checkpoint, preset="", dropout=0.1)
    net = build_model(backbone.config, backbone.tokenizer, 1, backbone.encoder_state)
    spy = _Spy(net.encoder)
    smiles = ["CCO", "c1ccccc1", "CC(=O)O", "CCN"]
    data = LabelledSmiles(smiles, np.array([[0.0], [1.0], [0.0], [1.0]]))
    finetune(net, data, FinetuneSettings(epochs=1, batch_size=2), valid=data)
    return spy


def _embed_inputs(checkpoint, one_per_batch: bool = True) -> _Spy:
    from exlm_chem.embedding import embed
    from exlm_chem.model.molecule_model import MoleculeModel

    embedder = MoleculeModel.from_checkpoint(checkpoint, device="cpu")
    spy = _Spy(embedder.encoder)
    embed(["CCO", "c1ccccc1N"], model=embedder, batch_size=1 if one_per_batch else 2)
    return spy


def test_twin_is_fed_unexpanded_inputs(tiny_mlm_checkpoint):
    for spy in (_finetune_inputs(tiny_mlm_checkpoint), _embed_inputs(tiny_mlm_checkpoint)):
        assert spy.calls and spy.max_copy() == 0
    assert _embed_inputs(tiny_mlm_checkpoint).bos_per_row(0) == {1}  # one BOS per molecule


def test_exlm_is_still_fed_expanded_inputs(tiny_checkpoint):
    for spy in (_finetune_inputs(tiny_checkpoint), _embed_inputs(tiny_checkpoint)):
        assert spy.calls and spy.max_copy() == 2
    assert _embed_inputs(tiny_checkpoint).bos_per_row(0) == {2}  # k = 2 BOS copies


def test_benchmark_encoder_rows_record_the_expansion(tiny_checkpoint, tiny_mlm_checkpoint):
    from exlm_chem.benchmark.encoders import EncoderMethod

    assert EncoderMethod(tiny_mlm_checkpoint, "probe").inputs == {
        "expansion_k": 1,
        "pooling": DEFAULT_POOLING,
        "max_length": 256,
        "smiles": "rdkit-canonical",
    }
    assert EncoderMethod(tiny_checkpoint, "finetune").inputs["expansion_k"] == 2
