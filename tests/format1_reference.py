"""The first checkpoint formats (1, 2) as they were, for tests that old checkpoints load.

Formats 1 and 2 paired dim ``j`` with ``j + hd/4`` inside each half of a head (NeoX
"rotate half"). :func:`old_forward` is the encoder forward of the first release, written out with
its own RoPE, so that tests compare the current code with it rather than with itself.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import safetensors.torch
import torch
import torch.nn.functional as F

from exlm_chem.model.checkpoint_format import METADATA_FILE, WEIGHTS_FILE
from exlm_chem.model.config import ExLMConfig
from exlm_chem.model.encoder import ExLMModel
from exlm_chem.model.rope_layout import halves_to_interleaved_index


def permute_qk_to_halves(state_dict, config: ExLMConfig) -> dict[str, torch.Tensor]:
    """Weights in the format-1/2 q/k layout: the inverse of the conversion on load, so that a
    test can write an old checkpoint from a current model. v and other tensors pass as they are."""
    inverse = torch.argsort(halves_to_interleaved_index(config.head_dim))
    H, hd = config.n_heads, config.head_dim
    out = dict(state_dict)
    for name, tensor in state_dict.items():
        if name.endswith(("attn.qkv.weight", "attn.qkv.bias")):
            rows = tensor.reshape(3, H, hd, *tensor.shape[1:])  # [3, H, hd, (d)]
            out[name] = torch.cat([rows[:2, :, inverse], rows[2:]]).reshape(tensor.shape)
    return out


def old_rope(x, pos_original, pos_copy, base):
    """Format-1/2 RoPE on [B, H, X, hd]: inside each half, dim j pairs with j + hd/4."""
    quarter = x.shape[-1] // 4
    freq = base ** (-torch.arange(quarter, dtype=torch.float32) / quarter)
    a1 = pos_original.float()[..., None] * freq  # [B, X, hd/4]
    a2 = pos_copy.float()[..., None] * freq
    angles = torch.cat([a1, a1, a2, a2], dim=-1)[:, None]  # [B, 1, X, hd]
    x1, x2, x3, x4 = x.split(quarter, dim=-1)
    return x * angles.cos() + torch.cat([-x2, x1, -x4, x3], dim=-1) * angles.sin()


def old_forward(model, ids, pos_original, pos_copy, padding_mask):
    """Hidden states [B, X, d] of format-1/2 weights, computed as the first release did."""
    encoder, base = model.encoder, model.config.rope_base
    key_mask = padding_mask[:, None, None, :]  # [B, 1, 1, X]
    x = encoder.embed_tokens(ids)
    for block in encoder.blocks:
        attn, h = block.attn, block.ln_attn(x)
        B, X, d = h.shape
        qkv = attn.qkv(h).view(B, X, 3, attn.n_heads, attn.head_dim)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # 3 x [B, H, X, hd]
        y = F.scaled_dot_product_attention(old_rope(q, pos_original, pos_copy, base),
                                           old_rope(k, pos_original, pos_copy, base), v,
                                           attn_mask=key_mask)
        x = x + attn.out(y.transpose(1, 2).reshape(B, X, d))
        x = x + block.ffn(block.ln_ffn(x))
    return encoder.ln_final(x)


def raw_model(directory: Path) -> ExLMModel:
    """The stored tensors copied as they are (no layout conversion) into a float32 model."""
    config = ExLMConfig.from_json(directory / "config.json")
    model = ExLMModel(config)
    model.load_state_dict(safetensors.torch.load_file(str(directory / WEIGHTS_FILE)),
                          strict=False)  # the tied lm_head.weight is not stored
    return model.eval()


def downgrade(checkpoint: Path, out: Path, version: int | None = None) -> Path:
    """A copy of a current checkpoint as format ``version`` (None: before versions
    existed) wrote it: rotate-half q/k layout."""
    shutil.copytree(checkpoint, out)
    config = ExLMConfig.from_json(out / "config.json")
    tensors = safetensors.torch.load_file(str(out / WEIGHTS_FILE))
    safetensors.torch.save_file(permute_qk_to_halves(tensors, config), str(out / WEIGHTS_FILE))
    meta = json.loads((out / METADATA_FILE).read_text())
    del meta["format_version"]
    if version is not None:
        meta["format_version"] = version
    (out / METADATA_FILE).write_text(json.dumps(meta))
    return out
