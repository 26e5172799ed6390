"""A model directory whose parts do not match never loads: one CheckpointError naming the file."""

from __future__ import annotations

import json

import numpy as np
import pytest
import safetensors.torch
import torch
from format1_reference import permute_qk_to_halves

from exlm_chem.embedding import embed
from exlm_chem.errors import CheckpointError, CheckpointFilesMissingError
from exlm_chem.model.checkpoint import load_checkpoint
from exlm_chem.model.checkpoint_format import FORMAT
from exlm_chem.model.config import ExLMConfig
from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier

KINDS = ["pretrained", "fitted"]


@pytest.fixture(params=KINDS)
def damaged(request, tiny_checkpoint, saved_classifier, model_copy):
    """A copy of a pre-trained checkpoint or of a fitted classifier, and its loader."""
    if request.param == "pretrained":
        return model_copy(tiny_checkpoint), load_checkpoint
    return model_copy(saved_classifier), ExLMMoleculeClassifier.load


def _edit_json(path, change):
    data = json.loads(path.read_text())
    change(data)  # in place
    path.write_text(json.dumps(data))


def _lines(path):
    return path.read_text().splitlines()


def test_vocab_one_line_short_or_long(damaged):
    directory, load = damaged
    vocab = directory / "vocab.txt"
    tokens = _lines(vocab)
    for changed in (tokens[:-1], [*tokens, "[Xx]", "[Yy]"]):
        vocab.write_text("\n".join(changed) + "\n")
        with pytest.raises(CheckpointError) as err:
            load(directory)
        assert f"{vocab} has {len(changed)} tokens but config.json says vocab_size=" \
               f"{len(tokens)}" in str(err.value)


def test_reordered_vocab_fails_its_checksum(damaged):
    directory, load = damaged
    tokens = _lines(directory / "vocab.txt")
    tokens[10], tokens[11] = tokens[11], tokens[10]
    (directory / "vocab.txt").write_text("\n".join(tokens) + "\n")
    with pytest.raises(CheckpointError, match=r"different vocab\.txt|vocab\.txt does not match"):
        load(directory)


def test_changed_k_states_is_caught(damaged):
    directory, load = damaged
    _edit_json(directory / "config.json", lambda c: c.update(k_states=3))
    with pytest.raises(CheckpointError) as err:
        load(directory)
    assert f"{directory / 'config.json'} says k_states=3" in str(err.value)
    assert "saved with k_states='2'" in str(err.value)


def test_changed_config_without_weight_stamp_fails_the_metadata_checksum(damaged):
    directory, load = damaged
    weights = directory / "model.safetensors"
    safetensors.torch.save_file(safetensors.torch.load_file(str(weights)), str(weights))
    _edit_json(directory / "config.json", lambda c: c.update(rope_base=500.0))
    with pytest.raises(CheckpointError, match=r"config\.json does not match the checksum"):
        load(directory)


def test_truncated_weights(damaged):
    directory, load = damaged
    weights = directory / "model.safetensors"
    for size in (5, weights.stat().st_size // 2):
        weights.write_bytes(weights.read_bytes()[:size])
        with pytest.raises(CheckpointError, match=f"{weights} is truncated or corrupt"):
            load(directory)


@pytest.mark.parametrize(("text", "problem"), [
    ('{"format": ', "is not valid JSON"),
    ("[1, 2]", "must hold a JSON object, got list"),
    ('{"format": "KIND", "format_version": 99}', "format version 99, newer than"),
    ('{"format": "KIND", "format_version": "2"}', "positive integer"),
])
def test_broken_metadata(damaged, text, problem):
    directory, load = damaged
    kind = json.loads((directory / "metadata.json").read_text())["format"]
    (directory / "metadata.json").write_text(text.replace("KIND", kind))
    with pytest.raises(CheckpointError, match=problem) as err:
        load(directory)
    assert str(directory) in str(err.value)


def test_broken_config(damaged):
    directory, load = damaged
    (directory / "config.json").write_text("{not json")
    with pytest.raises(CheckpointError, match=rf"{directory / 'config.json'} is not valid JSON"):
        load(directory)
    (directory / "config.json").write_text('{"vocab_size": 5, "n_layerz": 2}')
    with pytest.raises(CheckpointError, match=r"config\.json: unknown ExLMConfig field.*n_layerz"):
        load(directory)


def test_special_ids_must_match_the_vocabulary(damaged):
    directory, load = damaged
    _edit_json(directory / "config.json", lambda c: c.update(bos_id=2, eos_id=0))
    with pytest.raises(CheckpointError, match=r"config\.json: special token ids bos_id=2 "
                                              r"\(expected 0\), eos_id=0 \(expected 2\)"):
        load(directory)


def test_missing_file_is_named(damaged):
    directory, load = damaged
    (directory / "vocab.txt").unlink()
    with pytest.raises(CheckpointFilesMissingError, match=r"missing vocab\.txt"):
        load(directory)


def test_objective_disagreeing_with_the_weights(tiny_checkpoint, tiny_mlm_checkpoint,
                                                model_copy):
    exlm = model_copy(tiny_checkpoint, "exlm")
    _edit_json(exlm / "config.json", lambda c: c.update(objective="mlm"))
    with pytest.raises(CheckpointError, match=r"holds a transition head but config\.json says "
                                              r"objective='mlm'"):
        load_checkpoint(exlm)
    mlm = model_copy(tiny_mlm_checkpoint, "mlm")
    _edit_json(mlm / "config.json", lambda c: c.update(objective="exlm"))
    with pytest.raises(CheckpointError, match="has no transition head"):
        load_checkpoint(mlm)


def test_fitted_metadata_without_classes(saved_classifier, model_copy):
    directory = model_copy(saved_classifier)
    _edit_json(directory / "metadata.json", lambda m: m["fitted"].pop("classes_"))
    with pytest.raises(CheckpointError, match=r"metadata\.json: an entry is missing or "
                                              r"malformed \(KeyError: 'classes_'\)"):
        ExLMMoleculeClassifier.load(directory)
    _edit_json(directory / "metadata.json", lambda m: m.pop("fitted"))
    with pytest.raises(CheckpointError, match=r"metadata\.json: 'fitted' is missing"):
        ExLMMoleculeClassifier.load(directory)


def test_the_wrong_kind_of_model_says_so(saved_classifier, tiny_checkpoint):
    with pytest.raises(CheckpointError, match=r"holds a fitted ExLMMoleculeClassifier .*not a "
                                              r"pre-trained checkpoint.*\.load\(path\)"):
        embed(["CCO"], model=str(saved_classifier), device="cpu")
    with pytest.raises(CheckpointError, match="holds a fitted ExLMMoleculeClassifier"):
        ExLMMoleculeClassifier(str(saved_classifier), epochs=1).fit(["CCO", "CCN"], [0, 1])
    with pytest.raises(CheckpointError, match="holds a pre-trained checkpoint, not a fitted "
                                              "estimator"):
        ExLMMoleculeClassifier.load(tiny_checkpoint)


def test_format_1_directories_still_load_unchanged(damaged, bbbp_rows):
    """What was saved before format versions and checksums existed (and models/ ships)."""
    directory, load = damaged
    before = load(directory)
    _edit_json(directory / "metadata.json",
               lambda m: [m.pop(k) for k in ("format_version", "checksums")])
    weights = directory / "model.safetensors"
    kind = json.loads((directory / "metadata.json").read_text())["format"]
    # format 1 also paired q/k dims the rotate-half way (format 3 interleaves them)
    tensors = permute_qk_to_halves(safetensors.torch.load_file(str(weights)),
                                   ExLMConfig.from_json(directory / "config.json"))
    safetensors.torch.save_file(tensors, str(weights), metadata={"format": kind})
    after = load(directory)
    X, _ = bbbp_rows
    if kind == FORMAT:
        for a, b in zip(before[0].state_dict().values(), after[0].state_dict().values(),
                        strict=True):
            assert torch.equal(a, b)
    else:
        np.testing.assert_array_equal(before.predict_proba(X), after.predict_proba(X))


def test_shipped_checkpoints_load(tmp_path):
    from reliability_helpers import REPO

    from exlm_chem.model.checkpoint_format import FORMAT_VERSION

    for name in ("exlm-small", "mlm-small"):
        directory = REPO / "models" / name
        before = {f.name: f.stat().st_mtime_ns for f in directory.iterdir()}
        model, _, meta = load_checkpoint(directory)
        assert meta["format_version"] == FORMAT_VERSION  # shipped in the current format
        assert {f.name: f.stat().st_mtime_ns for f in directory.iterdir()} == before  # read only
        assert model.config.vocab_size == len(_lines(directory / "vocab.txt"))
