"""Old (format 1/2, rotate-half) checkpoints compute the same function after conversion.

The reference is the encoder forward of formats 1/2 written out with its own RoPE
(the NeoX "rotate half" of the first shipped code), run on the raw stored weights. The
current code loads the same directory through ``load_checkpoint``, which moves the q/k
rows to interleaved pairs; outputs must agree within 1e-5.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import safetensors.torch
import torch
from format1_reference import downgrade, old_forward, permute_qk_to_halves, raw_model

from exlm_chem.data.collate import SpecialIds
from exlm_chem.data.inference_inputs import inference_inputs
from exlm_chem.data.tokenizer import SmilesTokenizer
from exlm_chem.model.checkpoint import load_checkpoint, save_checkpoint
from exlm_chem.model.checkpoint_format import FORMAT_VERSION, METADATA_FILE, WEIGHTS_FILE
from exlm_chem.model.config import ExLMConfig
from exlm_chem.model.encoder import ExLMModel
from exlm_chem.model.rope_layout import (
    halves_to_interleaved_index,
    permute_qk_to_interleaved,
    to_current_layout,
)

REPO = Path(__file__).resolve().parents[3]
SMILES = ["CCO", "c1ccccc1O", "CC(=O)Nc1ccc(O)cc1", "CN1CCC[C@H]1c1cccnc1",
          "O=C(O)c1ccccc1OC(C)=O", "C1CC1"]


def inputs(directory: Path, smiles):
    tok = SmilesTokenizer(directory / "vocab.txt")
    special = SpecialIds(tok.bos_id, tok.pad_id, tok.eos_id, tok.mask_id)
    ids = [np.asarray(tok.encode(s)) for s in smiles]
    k = ExLMConfig.from_json(directory / "config.json").k_states
    return inference_inputs(ids, k, special)


def assert_same_function(old_dir: Path):
    reference = raw_model(old_dir)
    converted, _, _ = load_checkpoint(old_dir)
    for smiles in (SMILES, SMILES[:1] * 3):  # with padding; without (the unmasked path)
        ids, po, pc, mask = inputs(old_dir, smiles)
        with torch.no_grad():
            want = old_forward(reference, ids, po, pc, mask)
            got = converted(ids, po, pc, mask)
            torch.testing.assert_close(got[mask], want[mask], atol=1e-5, rtol=0)
            # a trained model's logits reach ~15: float32 summation order alone moves them
            # by ~1e-6 relative, so the logits are compared relative as well
            torch.testing.assert_close(converted.lm_head(got[mask]),
                                       reference.lm_head(want[mask]), atol=1e-5, rtol=1e-5)
    return reference, converted


# ---- the permutation itself -----------------------------------------------------------------
def test_interleaving_index_exact():
    assert halves_to_interleaved_index(8).tolist() == [0, 2, 1, 3, 4, 6, 5, 7]
    assert halves_to_interleaved_index(16)[:8].tolist() == [0, 4, 1, 5, 2, 6, 3, 7]
    with pytest.raises(ValueError, match="divisible by 4"):
        halves_to_interleaved_index(6)


def test_permutation_moves_only_q_and_k_rows_and_inverts():
    config = ExLMConfig.preset("tiny", 40)  # d 64, 2 heads of 32
    torch.manual_seed(0)
    state = ExLMModel(config).state_dict()
    new = permute_qk_to_interleaved(state, config)
    name = "encoder.blocks.1.attn.qkv.weight"
    w_old, w_new = state[name], new[name]
    # head 1 of k starts at row 64 + 32; its new dim 1 is its old dim 8 (hd/4)
    torch.testing.assert_close(w_new[96 + 1], w_old[96 + 8], rtol=0, atol=0)
    torch.testing.assert_close(w_new[128:], w_old[128:], rtol=0, atol=0)  # v untouched
    assert new["encoder.embed_tokens.weight"] is state["encoder.embed_tokens.weight"]
    assert not torch.equal(w_new, w_old)
    back = permute_qk_to_halves(new, config)
    for key in state:
        assert torch.equal(back[key], state[key]), key
    # the prefix does not matter: a bare encoder or a fine-tuning net's state converts too
    bare = {k.removeprefix("encoder."): v for k, v in state.items() if k.startswith("encoder.")}
    assert torch.equal(permute_qk_to_interleaved(bare, config)["blocks.1.attn.qkv.bias"],
                       new["encoder.blocks.1.attn.qkv.bias"])
    assert to_current_layout(state, config, FORMAT_VERSION)[name] is w_old


# ---- old checkpoints keep their function ----------------------------------------------------
@pytest.mark.parametrize("name", ["exlm-small", "mlm-small"])
def test_shipped_weights_written_as_format1_compute_the_same_function(name, tmp_path):
    """Full-size weights (the shipped ones, 9 layers, d 256) in the rotate-half layout the
    first release wrote: the conversion on load keeps their function."""
    assert_same_function(downgrade(REPO / "models" / name, tmp_path / "old"))


@pytest.mark.parametrize("version", [None, 2])
def test_tiny_old_checkpoint_computes_the_same_function(tiny_checkpoint, tmp_path, version):
    assert json.loads((tiny_checkpoint / METADATA_FILE).read_text())["format_version"] == \
        FORMAT_VERSION == 3
    old_dir = downgrade(tiny_checkpoint, tmp_path / "old", version)
    reference, converted = assert_same_function(old_dir)
    current, _, _ = load_checkpoint(tiny_checkpoint)
    for name, tensor in current.state_dict().items():  # the conversion is exact
        assert torch.equal(converted.state_dict()[name], tensor), name
    assert not torch.equal(reference.encoder.blocks[0].attn.qkv.weight,
                           converted.encoder.blocks[0].attn.qkv.weight)


def test_saving_writes_the_current_format_and_round_trips(tmp_path):
    old_dir = REPO / "models" / "mlm-small"
    model, config, _ = load_checkpoint(old_dir)
    saved = save_checkpoint(tmp_path / "new", model, config, old_dir / "vocab.txt")
    assert json.loads((saved / METADATA_FILE).read_text())["format_version"] == FORMAT_VERSION
    again, _, _ = load_checkpoint(saved)
    for name, tensor in model.state_dict().items():
        assert torch.equal(again.state_dict()[name], tensor), name


def test_fitted_estimator_weights_of_format1_are_converted(tmp_path):
    from exlm_chem.model.molecule_model import build_model
    from exlm_chem.model.saved_model import (
        load_model,
        model_from_bytes,
        model_to_bytes,
        save_model,
    )

    tokenizer = SmilesTokenizer()
    config = ExLMConfig.preset("tiny", len(tokenizer), objective="mlm")
    torch.manual_seed(0)
    net = build_model(config, tokenizer, n_out=2)
    state = {k: v.contiguous() for k, v in net.state_dict().items()}
    old_state = permute_qk_to_halves(state, config)
    # pickles of format 1 held no format_version
    old_bytes = safetensors.torch.save(old_state, metadata={"format": "exlm_chem-estimator-1"})
    for data in (old_bytes, model_to_bytes(net)):
        restored = model_from_bytes(data, config, tokenizer, 2)
        for name, tensor in state.items():
            assert torch.equal(restored.state_dict()[name], tensor), name
    # a saved estimator directory of format 1: the same files, no format_version
    saved = save_model(tmp_path / "est", net, {"estimator": "X"})
    assert json.loads((saved / METADATA_FILE).read_text())["format_version"] == FORMAT_VERSION
    safetensors.torch.save_file(old_state, str(saved / WEIGHTS_FILE))
    meta = json.loads((saved / METADATA_FILE).read_text())
    del meta["format_version"]
    (saved / METADATA_FILE).write_text(json.dumps(meta))
    restored = load_model(saved, 2, **meta["net"])
    for name, tensor in state.items():
        assert torch.equal(restored.state_dict()[name], tensor), name
