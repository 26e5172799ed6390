"""What a saved model directory must hold, checked on every load; older formats converted.

Used for pre-trained checkpoints and fitted estimators alike. Every problem is a
:class:`~exlm_chem.errors.CheckpointError` naming the file and what is wrong with it.

Format versions (``metadata.json`` ``format_version``, an integer; absent means 1):

1. config.json, model.safetensors, vocab.txt, metadata.json with a ``format`` tag.
2. adds ``format_version`` and ``checksums`` (sha256 of the config and of the
   vocabulary) to metadata.json, and the same checksums plus ``k_states`` and
   ``objective`` to the safetensors header, so that the weights say which config they
   were saved with.
3. the q/k rows of every attention block in the interleaved-pair layout of RoPE
   (:mod:`exlm_chem.model.rope_layout`); earlier versions are permuted on load.

:data:`CONVERTERS` maps version v to a function turning the parts read from a version-v
directory into those of version v + 1; loading applies them in turn, so old directories
load unchanged on disk.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from exlm_chem.errors import CheckpointError, CheckpointFilesMissingError
from exlm_chem.files.checksums import json_sha256, vocab_sha256
from exlm_chem.files.output_owner import CHECKPOINT_FORMAT, ESTIMATOR_FORMAT, describe
from exlm_chem.files.safe_write import sweep_debris
from exlm_chem.model.config import ExLMConfig

if TYPE_CHECKING:  # reading metadata alone (a screen's driver) must not import torch
    import torch

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
VOCAB_FILE = "vocab.txt"
METADATA_FILE = "metadata.json"
FILES = (CONFIG_FILE, WEIGHTS_FILE, VOCAB_FILE, METADATA_FILE)
FORMAT = CHECKPOINT_FORMAT
FORMAT_VERSION = 3


class CheckpointParts(NamedTuple):
    directory: Path
    config: ExLMConfig
    metadata: dict[str, Any]
    tokens: list[str]  # id -> token
    tensors: dict[str, torch.Tensor]  # as stored (CPU; 16-bit for shipped checkpoints)
    header: dict[str, str]  # the safetensors header's metadata
    config_dict: dict[str, Any]  # config.json as read
    version: int  # format version of the parts (FORMAT_VERSION once converted)


def _from_v1(parts: CheckpointParts) -> CheckpointParts:
    return parts._replace(version=2)  # version 2 only added checksums: nothing to convert


def _from_v2(parts: CheckpointParts) -> CheckpointParts:
    from exlm_chem.model.rope_layout import permute_qk_to_interleaved

    return parts._replace(tensors=permute_qk_to_interleaved(parts.tensors, parts.config),
                          version=3)


CONVERTERS: dict[int, Callable[[CheckpointParts], CheckpointParts]] = {
    1: _from_v1, 2: _from_v2}


def checksums(config: dict[str, Any], tokens: list[str]) -> dict[str, str]:
    """sha256 of the config (as a canonical JSON object) and of the token list."""
    return {CONFIG_FILE: json_sha256(config), VOCAB_FILE: vocab_sha256(tokens)}


def stamp(metadata: dict[str, Any], config: ExLMConfig, tokens: list[str],
          kind: str) -> tuple[dict[str, Any], dict[str, str]]:
    """``metadata`` with format tag, version and checksums, and the safetensors header."""
    sums = checksums(config.to_dict(), tokens)
    meta = {**metadata, "format": kind, "format_version": FORMAT_VERSION, "checksums": sums}
    header = {"format": kind, "format_version": str(FORMAT_VERSION),
              "config_sha256": sums[CONFIG_FILE], "vocab_sha256": sums[VOCAB_FILE],
              "k_states": str(config.k_states), "objective": config.objective}
    return meta, header


def _kind_error(directory: Path, meta: dict[str, Any], kind: str) -> CheckpointError:
    found = meta.get("format")
    if kind == FORMAT and found == ESTIMATOR_FORMAT:
        return CheckpointError(
            f"{directory} holds {describe(meta)}, not a pre-trained checkpoint; restore it "
            f"with {meta.get('estimator', 'the estimator')}.load(path) or use `exlm-chem "
            "predict`. Embedding and fine-tuning start from a pre-trained checkpoint")
    if kind == ESTIMATOR_FORMAT and found == FORMAT:
        return CheckpointError(
            f"{directory} holds a pre-trained checkpoint, not a fitted estimator; a "
            "pre-trained checkpoint goes to pretrained= (or `exlm-chem fit --pretrained`, "
            "`exlm-chem embed --model`)")
    return CheckpointError(f"{directory / METADATA_FILE}: format {found!r} is not an "
                           f"exlm_chem model format (expected {kind!r})")


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CheckpointError(f"{path} is not valid JSON: {err}") from err
    if not isinstance(data, dict):
        raise CheckpointError(f"{path} must hold a JSON object, got {type(data).__name__}")
    return data


def read_metadata(directory: Path, kind: str) -> tuple[dict[str, Any], int]:
    """metadata.json of a ``kind`` directory and its format version.

    A directory missing because a save was killed while it was set aside is put back
    first (:func:`exlm_chem.files.safe_write.sweep_debris`).
    """
    if not directory.exists():
        sweep_debris(directory.absolute())
    if not directory.is_dir():
        raise CheckpointFilesMissingError(f"{directory} does not exist or is not a directory")
    missing = [f for f in FILES if not (directory / f).is_file()]
    if missing:
        raise CheckpointFilesMissingError(f"{directory} is not a complete exlm_chem model "
                                          f"directory: missing {', '.join(missing)}")
    meta = _read_json(directory / METADATA_FILE)
    if meta.get("format") != kind:
        raise _kind_error(directory, meta, kind)
    version = meta.get("format_version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise CheckpointError(f"{directory / METADATA_FILE}: format_version must be a "
                              f"positive integer, got {version!r}")
    if version > FORMAT_VERSION:
        raise CheckpointError(f"{directory} has format version {version}, newer than this "
                              f"exlm_chem reads ({FORMAT_VERSION}); upgrade exlm_chem")
    return meta, version


def _read_vocab(path: Path, config: ExLMConfig) -> list[str]:
    from exlm_chem.data.tokenizer import SPECIAL_TOKENS, SpecialTokenIds
    from exlm_chem.data.vocabulary import parse_vocab

    try:
        tokens = parse_vocab(path.read_text(encoding="utf-8"), str(path), SPECIAL_TOKENS)
    except (UnicodeDecodeError, ValueError) as err:
        raise CheckpointError(f"{path} is not a valid vocabulary: {err}") from err
    if len(tokens) != config.vocab_size:
        raise CheckpointError(f"{path} has {len(tokens)} tokens but config.json says "
                              f"vocab_size={config.vocab_size}; every token id would shift. "
                              "The vocabulary does not belong to this model")
    ids = SpecialTokenIds
    wrong = [f"{name}={getattr(config, name)} (expected {getattr(ids, name)})"
             for name in ("bos_id", "pad_id", "eos_id", "mask_id")
             if getattr(config, name) != getattr(ids, name)]
    if wrong:
        raise CheckpointError(f"{path.parent / CONFIG_FILE}: special token ids "
                              f"{', '.join(wrong)} do not match the vocabulary's "
                              f"{list(SPECIAL_TOKENS)}")
    return tokens


def _read_weights(path: Path) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt", device="cpu") as fh:
            header = dict(fh.metadata() or {})
            tensors = {name: fh.get_tensor(name) for name in fh.keys()}
    except Exception as err:  # SafetensorError, OSError, ...: all mean an unusable file
        raise CheckpointError(f"{path} is truncated or corrupt ({type(err).__name__}: "
                              f"{err}); save or download the model again") from err
    return tensors, header


def _verify(parts: CheckpointParts) -> None:
    """Checksums in metadata.json and in the weights' header against the files."""
    directory, header, config = parts.directory, parts.header, parts.config
    actual = checksums(parts.config_dict, parts.tokens)
    weights = directory / WEIGHTS_FILE
    for field in ("k_states", "objective"):
        if field in header and header[field] != str(getattr(config, field)):
            raise CheckpointError(f"{directory / CONFIG_FILE} says {field}="
                                  f"{getattr(config, field)!r} but {weights} was saved with "
                                  f"{field}={header[field]!r}")
    for key, name in (("config_sha256", CONFIG_FILE), ("vocab_sha256", VOCAB_FILE)):
        if key in header and header[key] != actual[name]:
            raise CheckpointError(f"{weights} was saved with a different {name} than the one "
                                  "beside it: the files come from different models")
    stored = parts.metadata.get("checksums", {})
    if not isinstance(stored, dict):
        raise CheckpointError(f"{directory / METADATA_FILE}: 'checksums' must be an object")
    for name, digest in actual.items():
        if name in stored and stored[name] != digest:
            raise CheckpointError(f"{directory / name} does not match the checksum stored in "
                                  f"{METADATA_FILE}: it was changed or replaced after saving")


def read_parts(directory: str | Path, kind: str = FORMAT) -> CheckpointParts:
    """Read and convert (to :data:`FORMAT_VERSION`) a saved model directory.

    Checks the files one by one; the caller then builds the model and passes its state to
    :func:`validate`, which checks the weights against it and the checksums.
    """
    directory = Path(directory)
    meta, version = read_metadata(directory, kind)
    config_dict = _read_json(directory / CONFIG_FILE)
    try:
        config = ExLMConfig.from_dict(config_dict)
    except (TypeError, ValueError) as err:
        raise CheckpointError(f"{directory / CONFIG_FILE}: {err}") from err
    tokens = _read_vocab(directory / VOCAB_FILE, config)
    tensors, header = _read_weights(directory / WEIGHTS_FILE)
    parts = CheckpointParts(directory, config, meta, tokens, tensors, header, config_dict,
                            version)
    while parts.version < FORMAT_VERSION:
        parts = CONVERTERS[parts.version](parts)
    return parts


def validate(parts: CheckpointParts, reference: dict[str, torch.Tensor]) -> None:
    """Stored tensors against a freshly built model's state ``reference`` (the most
    specific message first), then the stored checksums against the files."""
    check_tensors(parts.directory / WEIGHTS_FILE, parts.tensors, reference)
    _verify(parts)


def check_tensors(path: str | Path, tensors: dict[str, torch.Tensor],
                  reference: dict[str, torch.Tensor]) -> None:
    """Names and shapes of the stored ``tensors`` against a freshly built model's."""
    missing = sorted(set(reference) - set(tensors))
    unexpected = sorted(set(tensors) - set(reference))
    head = "transition_head."
    if missing and all(n.startswith(head) for n in missing) and not unexpected:
        raise CheckpointError(f"{path} has no transition head but config.json says "
                              "objective='exlm': the weights are an 'mlm' model's")
    if unexpected and all(n.startswith(head) for n in unexpected) and not missing:
        raise CheckpointError(f"{path} holds a transition head but config.json says "
                              "objective='mlm': the weights are an 'exlm' model's")
    if missing or unexpected:
        raise CheckpointError(f"{path} does not match its config.json: missing "
                              f"{missing[:5] or 'nothing'}; "
                              f"unexpected {unexpected[:5] or 'nothing'}")
    for name, tensor in tensors.items():
        if tensor.shape != reference[name].shape:
            raise CheckpointError(f"{path}: {name} has shape {tuple(tensor.shape)}, config.json "
                                  f"implies {tuple(reference[name].shape)}")
