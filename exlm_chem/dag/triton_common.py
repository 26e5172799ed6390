"""What both paths of the DAG Triton kernels share: ``-inf`` as a kernel constant and the
``@triton.jit`` device functions every kernel calls (a sample's lengths, the backward's
upstream scale, the emission gradient of one row).

The kernels of :mod:`exlm_chem.dag.triton_single_tile` and :mod:`exlm_chem.dag.triton_tiled`
import these names: Triton resolves a kernel's calls and constants among the globals of
the module that defines the kernel.
"""

from __future__ import annotations

import triton
import triton.language as tl

# kernels may only read module globals that are constexpr
_NEG_INF = tl.constexpr(float("-inf"))


@triton.jit
def _sample_lengths(tlen_ptr, slen_ptr, b, T, S):
    """Target and state counts of sample ``b``, clamped to the padded sizes (a bad length
    must not read out of bounds; the wrapper validates lengths anyway)."""
    return tl.minimum(tl.load(tlen_ptr + b), T), tl.minimum(tl.load(slen_ptr + b), S)


@triton.jit
def _backward_scale(logz_ptr, gout_ptr, b):
    """Upstream gradient of sample ``b``, whether it has a path, and its log Z made finite
    (a sample without a path gets zero gradients, not NaN)."""
    logz = tl.load(logz_ptr + b)
    valid = logz > _NEG_INF
    return tl.load(gout_ptr + b), valid, tl.where(valid, logz, 0.0)


@triton.jit
def _emission_gradient(alpha, beta, emission, logz_safe, g, valid):
    """Gradient of the emissions of one row: each state's posterior
    ``exp(alpha + beta - emission - log Z)`` times the upstream gradient ``g``; zero where
    the state is on no path (no -inf - -inf NaN) and for a sample without a path."""
    live = (alpha > _NEG_INF) & (beta > _NEG_INF)
    emission = tl.where(live, emission, 0.0)
    ge = tl.where(live, tl.exp(alpha + beta - emission - logz_safe) * g, 0.0)
    return tl.where(valid, ge, 0.0)
