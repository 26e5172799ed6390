"""Model hyper-parameters: one dataclass, its named sizes, JSON round trip.

This module imports no torch, so reading a checkpoint's ``config.json`` or listing presets
stays cheap.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from exlm_chem.presets import MODEL_SIZES, lookup

OBJECTIVES = ("exlm", "mlm")


@dataclass
class ExLMConfig:
    """Hyper-parameters of the ExLM encoder and its heads.

    The defaults are the paper's molecular model (the ``base`` preset) except for
    ``vocab_size``, which always comes from the tokenizer. Use :meth:`preset` for the
    named sizes.
    """

    vocab_size: int  # rows of the token embedding (and columns of the tied LM head)
    n_layers: int = 9  # pre-LN transformer blocks
    d_model: int = 768  # width of the residual stream
    n_heads: int = 12  # attention heads; also the number of transition-head mixture heads
    d_ffn: int = 2048  # hidden width of each block's feed-forward network
    k_states: int = 2  # expanded copies made of every BOS, [MASK] and EOS token
    dropout: float = 0.1  # on embeddings, attention output and FFN output (paper: 0.1)
    attention_dropout: float = 0.1  # on attention probabilities (paper: 0.1)
    activation_dropout: float = 0.0  # after the FFN's GELU (fairseq RoBERTa default: 0.0)
    max_expanded_positions: int = 1024  # transition head's learned position table size
    rope_base: float = 10000.0  # RoPE frequency base, shared by both coordinates
    pad_id: int = 1  # [PAD]: zero embedding row, masked out of attention
    bos_id: int = 0  # [CLS] = BOS
    eos_id: int = 2  # [SEP] = EOS
    mask_id: int = 4  # [MASK]
    objective: str = "exlm"  # "exlm" (DAG states alignment) or "mlm" (no transition head)
    layer_norm_eps: float = 1e-5  # epsilon of every LayerNorm
    n_descriptors: int = 0  # outputs of the physico-chemical head on the BOS state (0: none)
    # pre-training's translation head (CDDD): a GRU, d_model wide, that writes the
    # canonical SMILES from the mean-pooled states of a randomised SMILES
    smiles_decoder: bool = False

    def __post_init__(self) -> None:
        problems = []
        for name in ("vocab_size", "n_layers", "d_model", "n_heads", "d_ffn", "k_states",
                     "max_expanded_positions", "n_descriptors"):
            value, low = getattr(self, name), int(name != "n_descriptors")
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                kind = "positive" if low else "non-negative"
                problems.append(f"{name} must be a {kind} integer, got {value!r}")
        for name in ("dropout", "attention_dropout", "activation_dropout"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not 0.0 <= value < 1.0:
                problems.append(f"{name} must be in [0, 1), got {value!r}")
        for name in ("pad_id", "bos_id", "eos_id", "mask_id"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                problems.append(f"{name} must be a non-negative integer, got {value!r}")
            elif isinstance(self.vocab_size, int) and value >= self.vocab_size:
                problems.append(f"{name}={value} is outside the vocabulary "
                                f"(vocab_size={self.vocab_size})")
        if not isinstance(self.smiles_decoder, bool):
            problems.append(f"smiles_decoder must be true or false, got {self.smiles_decoder!r}")
        if self.objective not in OBJECTIVES:
            problems.append(f"objective must be one of {OBJECTIVES}, got {self.objective!r}")
        if not self.rope_base > 1.0:
            problems.append(f"rope_base must be > 1, got {self.rope_base!r}")
        if not self.layer_norm_eps > 0.0:
            problems.append(f"layer_norm_eps must be > 0, got {self.layer_norm_eps!r}")
        if not problems and self.d_model % self.n_heads:
            problems.append(f"d_model={self.d_model} is not divisible by "
                            f"n_heads={self.n_heads}")
        # 2D RoPE gives each of its two coordinates half a head: hd/4 adjacent pairs each
        if not problems and self.head_dim % 4:
            problems.append(f"head_dim = d_model / n_heads = {self.head_dim} must be "
                            "divisible by 4 (two RoPE halves, each rotated in pairs)")
        if problems:
            raise ValueError("invalid ExLMConfig: " + "; ".join(problems))

    @property
    def head_dim(self) -> int:
        """Width of one attention head, ``d_model // n_heads``."""
        return self.d_model // self.n_heads

    # ---- serialisation -------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain dict of every field (JSON-serialisable)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ExLMConfig:
        """Build a config from :meth:`to_dict` output; unknown keys are an error."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown ExLMConfig field(s): {', '.join(unknown)}")
        if "vocab_size" not in data:
            raise ValueError("ExLMConfig needs 'vocab_size'")
        return cls(**data)

    def to_json(self, path: str | Path) -> None:
        """Write the config as indented JSON (not atomic; checkpoints use their own writer)."""
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")

    @classmethod
    def from_json(cls, path: str | Path) -> ExLMConfig:
        """Read a config written by :meth:`to_json`."""
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise ValueError(f"{path} is not valid JSON: {err}") from err
        if not isinstance(data, dict):
            raise ValueError(f"{path} must hold a JSON object, got {type(data).__name__}")
        try:
            return cls.from_dict(data)
        except (TypeError, ValueError) as err:
            raise ValueError(f"{path}: {err}") from err

    # ---- presets ----------------------------------------------------------------------------
    @classmethod
    def preset(cls, name: str, vocab_size: int, **overrides: Any) -> ExLMConfig:
        """Config of a named size (:data:`exlm_chem.presets.MODEL_SIZES`) with optional
        field overrides.

        Examples
        --------
        >>> ExLMConfig.preset("tiny", vocab_size=300, objective="mlm").d_model
        64
        """
        size = lookup(MODEL_SIZES, name, "model")
        if "vocab_size" in overrides:
            raise ValueError("pass vocab_size as the second argument, not as an override")
        return cls.from_dict({**dataclasses.asdict(size), "vocab_size": vocab_size,
                              **overrides})
