"""Tests of exlm_chem.model.checkpoint: safetensors round trip, no pickle, atomic writes."""

from __future__ import annotations

import json
import pickle

import pytest
import safetensors.torch
import torch
from torch import nn

from exlm_chem.errors import OutputPathError
from exlm_chem.files.safe_write import atomic_directory, write_json_atomic
from exlm_chem.model.checkpoint import copy_checkpoint, load_checkpoint, save_checkpoint
from exlm_chem.model.checkpoint_format import CONFIG_FILE, METADATA_FILE, VOCAB_FILE, WEIGHTS_FILE
from exlm_chem.model.config import ExLMConfig
from exlm_chem.model.encoder import ExLMModel

V = 40
TOKENS = ["[CLS]", "[PAD]", "[SEP]", "[UNK]", "[MASK]", *(f"t{i}" for i in range(V - 5))]


def make_model(seed=0, **overrides):
    torch.manual_seed(seed)
    config = ExLMConfig.preset("tiny", V, **overrides)
    model = ExLMModel(config)
    with torch.no_grad():  # move the LM bias and LayerNorms off their init values
        for p in model.parameters():
            p.add_(0.01 * torch.randn_like(p))
    return model.eval(), config


def batch():
    ids = torch.tensor([[0, 0, 7, 4, 4, 9, 2, 2], [0, 0, 4, 4, 2, 2, 1, 1]])
    po = torch.tensor([[0, 0, 1, 2, 2, 3, 4, 4], [0, 0, 1, 1, 2, 2, 0, 0]])
    pc = torch.tensor([[1, 2, 0, 1, 2, 0, 1, 2], [1, 2, 1, 2, 1, 2, 0, 0]])
    mask = ids != 1
    state_index = torch.tensor([[0, 1, 3, 4, 6, 7], [0, 1, 2, 3, 4, 5]])
    lengths = torch.tensor([6, 6])
    return ids, po, pc, mask, state_index, lengths


def outputs(model):
    ids, po, pc, mask, state_index, lengths = batch()
    with torch.no_grad():
        hidden = model(ids, po, pc, mask)
        logits = model.lm_head(hidden)
        log_e = model.transition_head(hidden, state_index, lengths) \
            if model.transition_head is not None else None
    return hidden, logits, log_e


def test_round_trip_float32_is_exact(tmp_path, monkeypatch):
    model, config = make_model()
    path = save_checkpoint(tmp_path / "ckpt", model, config, TOKENS,
                           {"steps": 1234, "corpus_sha256": "abc"})
    assert sorted(p.name for p in path.iterdir()) == sorted(
        [CONFIG_FILE, WEIGHTS_FILE, VOCAB_FILE, METADATA_FILE])

    def no_unpickling(*args, **kwargs):
        raise AssertionError("checkpoint loading must not unpickle")

    monkeypatch.setattr(torch, "load", no_unpickling)
    monkeypatch.setattr(pickle, "load", no_unpickling)
    monkeypatch.setattr(pickle, "loads", no_unpickling)
    loaded, loaded_config, meta = load_checkpoint(path)

    assert loaded_config == config
    assert not loaded.training
    assert loaded.lm_head.weight is loaded.encoder.embed_tokens.weight
    for a, b in zip(outputs(model), outputs(loaded), strict=True):
        assert torch.equal(a, b)
    assert meta["steps"] == 1234 and meta["corpus_sha256"] == "abc"
    assert meta["objective"] == "exlm" and meta["dtype"] == "float32"
    assert meta["num_parameters"] == model.num_parameters()
    assert (path / VOCAB_FILE).read_text().splitlines() == TOKENS


def test_checkpoint_holds_no_pickle_and_stores_tied_weight_once(tmp_path):
    model, config = make_model()
    path = save_checkpoint(tmp_path / "ckpt", model, config, TOKENS, {})
    for f in path.iterdir():
        assert not f.read_bytes().startswith(b"\x80"), f"{f.name} looks like a pickle"
    json.loads((path / CONFIG_FILE).read_text())
    json.loads((path / METADATA_FILE).read_text())
    stored = safetensors.torch.load_file(str(path / WEIGHTS_FILE))
    assert "encoder.embed_tokens.weight" in stored and "lm_head.weight" not in stored
    assert set(stored) == set(model.state_dict()) - {"lm_head.weight"}


def test_round_trip_float16_is_close_and_smaller(tmp_path):
    model, config = make_model()
    full = save_checkpoint(tmp_path / "fp32", model, config, TOKENS, {})
    half = save_checkpoint(tmp_path / "fp16", model, config, TOKENS, {}, dtype=torch.float16)
    stored = safetensors.torch.load_file(str(half / WEIGHTS_FILE))
    assert all(t.dtype == torch.float16 for t in stored.values())
    size32 = (full / WEIGHTS_FILE).stat().st_size
    size16 = (half / WEIGHTS_FILE).stat().st_size
    assert size16 < 0.55 * size32
    loaded, _, meta = load_checkpoint(half)
    assert meta["dtype"] == "float16"
    assert loaded.encoder.embed_tokens.weight.dtype == torch.float32
    for a, b in zip(outputs(model), outputs(loaded), strict=True):
        finite = torch.isfinite(a)
        assert torch.equal(finite, torch.isfinite(b))
        torch.testing.assert_close(b[finite], a[finite], atol=2e-2, rtol=2e-2)
        assert not torch.equal(a, b)  # it really went through 16 bits


def test_copy_checkpoint_halves_the_weights_and_keeps_the_metadata(tmp_path):
    model, config = make_model()
    full = save_checkpoint(tmp_path / "run", model, config, TOKENS,
                           {"steps": 7, "recipe": {"mask_ratio": 0.3}})
    copied = copy_checkpoint(full, tmp_path / "milestone", metadata={"status": "milestone"})
    stored = safetensors.torch.load_file(str(copied / WEIGHTS_FILE))
    assert all(t.dtype == torch.float16 for t in stored.values())
    loaded, loaded_config, meta = load_checkpoint(copied)
    assert loaded_config == config
    assert (meta["steps"], meta["recipe"], meta["status"], meta["dtype"]) == (
        7, {"mask_ratio": 0.3}, "milestone", "float16")
    assert (copied / VOCAB_FILE).read_text() == (full / VOCAB_FILE).read_text()
    for name, tensor in model.state_dict().items():
        torch.testing.assert_close(loaded.state_dict()[name], tensor.half().float())


def test_mlm_model_round_trip_and_vocab_file(tmp_path):
    model, config = make_model(objective="mlm")
    vocab = tmp_path / "vocab_in.txt"
    vocab.write_text("\n".join(TOKENS) + "\n")
    path = save_checkpoint(tmp_path / "ckpt", model, config, vocab, {"steps": 1})
    loaded, _, meta = load_checkpoint(path)
    assert loaded.transition_head is None and meta["objective"] == "mlm"
    assert (path / VOCAB_FILE).read_text() == vocab.read_text()
    for a, b in zip(outputs(model)[:2], outputs(loaded)[:2], strict=True):
        assert torch.equal(a, b)


def test_wrapped_model_is_unwrapped(tmp_path):
    model, config = make_model()

    class Wrapper(nn.Module):  # stands in for DistributedDataParallel
        def __init__(self, module):
            super().__init__()
            self.module = module

    path = save_checkpoint(tmp_path / "ckpt", Wrapper(model), config, TOKENS, {})
    loaded, _, _ = load_checkpoint(path)
    assert torch.equal(outputs(model)[0], outputs(loaded)[0])


def test_vocab_larger_than_config_is_rejected(tmp_path):
    model, config = make_model()
    with pytest.raises(ValueError, match="vocab_size"):
        save_checkpoint(tmp_path / "ckpt", model, config, [*TOKENS, "extra"], {})
    assert not (tmp_path / "ckpt").exists()


def test_strict_key_and_shape_check(tmp_path):
    model, config = make_model()
    path = save_checkpoint(tmp_path / "ckpt", model, config, TOKENS, {})
    tensors = safetensors.torch.load_file(str(path / WEIGHTS_FILE))
    tensors["encoder.extra"] = torch.zeros(2)
    del tensors["lm_head.bias"]
    safetensors.torch.save_file(tensors, str(path / WEIGHTS_FILE))
    with pytest.raises(ValueError, match=r"missing \['lm_head.bias'\].*encoder.extra"):
        load_checkpoint(path)

    path2 = save_checkpoint(tmp_path / "ckpt2", model, config, TOKENS, {})
    cfg = json.loads((path2 / CONFIG_FILE).read_text())
    cfg["d_ffn"] = 64
    (path2 / CONFIG_FILE).write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match=r"ffn\.fc1\.\w+ has shape \(128,?.*implies \(64"):
        load_checkpoint(path2)

    cfg["n_layerz"] = 3
    (path2 / CONFIG_FILE).write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="n_layerz"):
        load_checkpoint(path2)

    (path2 / VOCAB_FILE).unlink()
    with pytest.raises(FileNotFoundError, match=r"vocab\.txt"):
        load_checkpoint(path2)


def test_failed_save_leaves_previous_checkpoint_intact(tmp_path, monkeypatch):
    old_model, config = make_model(seed=0)
    path = save_checkpoint(tmp_path / "ckpt", old_model, config, TOKENS, {"steps": 1})
    before = {f.name: f.read_bytes() for f in path.iterdir()}

    def broken_save(tensors, filename, metadata=None):
        with open(filename, "wb") as fh:
            fh.write(b"half a file")
        raise OSError("disk full")

    monkeypatch.setattr(safetensors.torch, "save_file", broken_save)
    new_model, _ = make_model(seed=1)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(path, new_model, config, TOKENS, {"steps": 2})
    monkeypatch.undo()

    assert {f.name: f.read_bytes() for f in path.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt"]  # no temporary debris
    loaded, _, meta = load_checkpoint(path)
    assert meta["steps"] == 1
    assert torch.equal(outputs(loaded)[0], outputs(old_model)[0])


def test_save_replaces_existing_checkpoint(tmp_path):
    model_a, config = make_model(seed=0)
    model_b, _ = make_model(seed=1)
    path = save_checkpoint(tmp_path / "ckpt", model_a, config, TOKENS, {"steps": 1})
    save_checkpoint(path, model_b, config, TOKENS, {"steps": 2})
    loaded, _, meta = load_checkpoint(path)
    assert meta["steps"] == 2
    assert torch.equal(outputs(loaded)[1], outputs(model_b)[1])
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt"]


def test_atomic_directory_and_json(tmp_path):
    target = tmp_path / "state"
    meta = {"format": "exlm_chem-checkpoint-1"}
    with atomic_directory(target) as tmp:
        assert tmp != target and tmp.parent == tmp_path
        write_json_atomic(tmp / "metadata.json", meta)
        write_json_atomic(tmp / "config.json", {"step": 3, "lr": [1e-4]})
    assert json.loads((target / "config.json").read_text()) == {"step": 3, "lr": [1e-4]}

    with pytest.raises(RuntimeError, match="boom"), atomic_directory(target) as tmp:
        (tmp / "vocab.txt").write_text("x\n")
        raise RuntimeError("boom")
    assert sorted(p.name for p in target.iterdir()) == ["config.json", "metadata.json"]
    assert [p.name for p in tmp_path.iterdir()] == ["state"]

    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputPathError, match="is not a directory"), \
            atomic_directory(tmp_path / "file"):
        pass
    assert (tmp_path / "file").read_text() == "x"

    with pytest.raises(TypeError):
        write_json_atomic(target / "config.json", {"bad": object()})
    assert json.loads((target / "config.json").read_text())["step"] == 3
    assert sorted(p.name for p in target.iterdir()) == ["config.json", "metadata.json"]


def test_atomic_directory_refuses_a_directory_it_did_not_write(tmp_path):
    target = tmp_path / "mine"
    target.mkdir()
    (target / "notes.txt").write_text("keep me")
    with pytest.raises(OutputPathError, match=r"mine already exists.*notes\.txt"), \
            atomic_directory(target) as tmp:
        (tmp / "metadata.json").write_text("{}")
    assert [p.name for p in target.iterdir()] == ["notes.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]
