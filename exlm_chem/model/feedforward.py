"""The encoder's feed-forward block, with GELU recomputed in backward when training.

Autograd would keep both the FFN's pre-activation and its GELU output, 2 x 4d floats per
token per layer: in CPU fine-tuning that is a third of all saved activations. GELU is
cheap to redo, so :class:`GeluLinear` keeps only the pre-activation and recomputes GELU
(and uses its derivative) in backward. Outputs and gradients equal the plain composition.

Shapes: N tokens, d model dim, f FFN width.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from exlm_chem.model.config import ExLMConfig


class GeluLinear(torch.autograd.Function):
    """``linear(gelu(h), weight, bias)`` saving ``h`` instead of ``gelu(h)``."""

    @staticmethod
    def forward(ctx, h: torch.Tensor, weight: torch.Tensor,
                bias: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(h, weight)
        return F.linear(F.gelu(h), weight, bias)

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):
        h, weight = ctx.saved_tensors
        flat_grad = grad_out.reshape(-1, grad_out.shape[-1])  # [N, d]
        grad_h = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_h = torch.ops.aten.gelu_backward(grad_out @ weight, h)  # [N, f]
        if ctx.needs_input_grad[1]:
            grad_weight = flat_grad.t() @ F.gelu(h).reshape(-1, h.shape[-1])  # [d, f]
        if ctx.needs_input_grad[2]:
            grad_bias = flat_grad.sum(0)
        return grad_h, grad_weight, grad_bias


class FeedForward(nn.Module):
    """Linear -> GELU -> activation dropout -> Linear."""

    def __init__(self, config: ExLMConfig) -> None:
        super().__init__()
        self.fc1 = nn.Linear(config.d_model, config.d_ffn)
        self.fc2 = nn.Linear(config.d_ffn, config.d_model)
        self.activation_dropout = nn.Dropout(config.activation_dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc1(x)  # [N, f]
        dropout = self.activation_dropout.p if self.training else 0.0
        if dropout == 0.0 and torch.is_grad_enabled() and h.requires_grad \
                and h.dtype == self.fc2.weight.dtype:  # autocast mixes dtypes: plain path
            return GeluLinear.apply(h, self.fc2.weight, self.fc2.bias)
        return self.fc2(self.activation_dropout(F.gelu(h)))
