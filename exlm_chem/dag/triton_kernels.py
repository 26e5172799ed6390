"""The Triton path of the DAG states-alignment log-likelihood (forward and fused backward).

Here: the launch configuration (:func:`kernel_config`), the launchers, the
``autograd.Function`` (:class:`DagLogProbTriton`) and the entry point
(:func:`dag_logprob_triton`, :func:`run_checked` for the dispatcher). The kernels live in
:mod:`exlm_chem.dag.triton_single_tile` and :mod:`exlm_chem.dag.triton_tiled`, the device
functions they share in :mod:`exlm_chem.dag.triton_common`.

The op, its forward recursion ``alpha`` and its closed-form backward with the mirror
recursion ``beta`` are those written out in :mod:`exlm_chem.dag.reference`.

Design. SMILES graphs are small (S = k * T states, T of 3-40 targets), so one program
handles one sample and loops over t; everything is fp32 in log space whatever the input
dtype. Two paths, chosen from ``BLOCK_S = next_pow2(S)``:

* single tile (``BLOCK_S <= SINGLE_TILE_MAX_STATES`` = 64, most SMILES batches): the
  whole ``[BLOCK_S, BLOCK_S]`` log-transition tile stays in registers; the forward stores
  the alpha rows for the backward, which computes beta rows and both gradients in one
  reverse loop.
* tiled (``64 < S <= TRITON_MAX_STATES`` = 1024, e.g. the paper's text shape S ~ 308): a
  register tile of S x S would spill (it already does at 128), so the transitions are read
  in row blocks of ``BLOCK_U``; alpha and beta rows round-trip through global memory, and
  the transition gradient is a second backward kernel over (sample, row block).

Beyond ``TRITON_MAX_STATES`` the dispatcher (``exlm_chem.dag.dispatch``) falls back to the
torch reference.

Padding and non-edges are masked here, not by the caller, with the reference's results:
exactly zero gradient there, ``-inf`` and zero gradients for a sample with no valid path.

CPU: kernels run under Triton's interpreter only, which is chosen when ``@triton.jit`` runs
(for triton's own helpers at triton's import), so ``TRITON_INTERPRET=1`` must be in the
environment before triton is first imported. The interpreter is slow (it executes each
program in Python); it is for tests. :func:`exlm_chem.dag.triton_compile.compile_for_gpu`
compiles the kernels for an NVIDIA target without a GPU, which catches what the
interpreter does not check.

Triton 3.6's interpreter (the GPU image's version) turns a runtime loop bound into a Python
int with ``int(array)`` on a one-element 1-d array, which NumPy >= 2.4 rejects
(``TypeError: only 0-dimensional arrays can be converted to Python scalars``); Triton 3.9
squeezes first. Every runtime scalar is such an array there, so no rewrite of a
data-dependent loop avoids it: interpret with triton 3.6 under NumPy < 2.4 (what
``scripts/setup.sh dev`` puts in ``.venv-triton36``). The compiled kernels are unaffected.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import NamedTuple

import torch
import triton
import triton.language as tl

from exlm_chem.dag.inputs import check_inputs
from exlm_chem.dag.triton_single_tile import _bwd_single_tile_kernel, _fwd_single_tile_kernel
from exlm_chem.dag.triton_tiled import (
    _bwd_beta_tiled_kernel,
    _bwd_trans_tiled_kernel,
    _fwd_tiled_kernel,
)

__all__ = [
    "SINGLE_TILE_MAX_STATES",
    "TRITON_MAX_STATES",
    "DagLogProbTriton",
    "KernelConfig",
    "dag_logprob_triton",
    "kernel_config",
]

#: Largest padded state count (power of two) handled by the fused single-tile kernels.
SINGLE_TILE_MAX_STATES = 64
#: Largest state count S the Triton path accepts; the dispatcher falls back above it.
TRITON_MAX_STATES = 1024
# Elements of one [BLOCK_U, BLOCK_S] row block in the tiled path.
_TILE_ELEMS = 8192
# (forward, backward) warps per BLOCK_S. Chosen so that every kernel compiles for sm_90
# without register spills (ptxas resource usage with triton 3.9; reproduce with
# `python benchmarks/pretraining/dag_loss.py --ptxas`): the fused single-tile backward already needs
# ~210 registers per thread at BLOCK_S=64 with 8 warps and spills at BLOCK_S=128 whatever
# the warp count (2 KB of stack at 8 or 16 warps), hence the tiled path from 65 states on.
# Not yet tuned by timing on a GPU.
_SINGLE_TILE_WARPS = {16: (1, 1), 32: (2, 4), 64: (4, 8)}
_TILED_WARPS = {128: (8, 8), 256: (8, 16), 512: (8, 16), 1024: (8, 8)}

_SUPPORTED_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


# launch configuration
class KernelConfig(NamedTuple):
    """Launch parameters chosen from the state count (see :func:`kernel_config`)."""

    tiled: bool
    block_s: int
    block_u: int
    fwd_warps: int
    bwd_warps: int


def kernel_config(num_states: int) -> KernelConfig:
    """Block sizes and warp counts for ``num_states`` (S) states.

    Parameters
    ----------
    num_states : int
        Padded state dimension S of the batch.

    Returns
    -------
    KernelConfig
        ``tiled`` says which path runs; ``block_s`` is the padded power of two (at least
        16); ``block_u`` is the row-block height of the tiled path (``block_s`` for the
        single tile).
    """
    if num_states < 1 or num_states > TRITON_MAX_STATES:
        raise ValueError(
            f"S={num_states} states is outside the Triton path's range "
            f"[1, {TRITON_MAX_STATES}]; use the torch reference"
        )
    block_s = max(16, triton.next_power_of_2(num_states))
    if block_s <= SINGLE_TILE_MAX_STATES:
        return KernelConfig(False, block_s, block_s, *_SINGLE_TILE_WARPS[block_s])
    return KernelConfig(True, block_s, _TILE_ELEMS // block_s, *_TILED_WARPS[block_s])


# launchers
def _forward(
    emissions: torch.Tensor,
    log_transitions: torch.Tensor,
    target_lengths: torch.Tensor,
    state_lengths: torch.Tensor,
    store_alpha: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    B, T, S = emissions.shape
    cfg = kernel_config(S)
    logz = torch.empty(B, dtype=torch.float32, device=emissions.device)
    if store_alpha or cfg.tiled:
        # padded rows t >= T_b are never read; states s >= L_b of valid rows hold -inf
        alpha = torch.empty((B, T, S), dtype=torch.float32, device=emissions.device)
    else:
        alpha = logz  # never dereferenced when STORE_ALPHA is False
    if B == 0:
        return logz, alpha
    if cfg.tiled:
        _fwd_tiled_kernel[(B,)](
            emissions, log_transitions, target_lengths, state_lengths, alpha, logz,
            T, S, BLOCK_S=cfg.block_s, BLOCK_U=cfg.block_u, num_warps=cfg.fwd_warps,
        )  # fmt: skip
    else:
        _fwd_single_tile_kernel[(B,)](
            emissions, log_transitions, target_lengths, state_lengths, alpha, logz,
            T, S, BLOCK_S=cfg.block_s, STORE_ALPHA=store_alpha, num_warps=cfg.fwd_warps,
        )  # fmt: skip
    return logz, alpha


def _backward(
    emissions: torch.Tensor,
    log_transitions: torch.Tensor,
    target_lengths: torch.Tensor,
    state_lengths: torch.Tensor,
    alpha: torch.Tensor,
    logz: torch.Tensor,
    grad_out: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    B, T, S = emissions.shape
    cfg = kernel_config(S)
    grad_emis = torch.zeros_like(emissions)
    grad_logE = torch.empty_like(log_transitions)
    if B == 0:
        return grad_emis, grad_logE
    if cfg.tiled:
        beta = torch.empty((B, T, S), dtype=torch.float32, device=emissions.device)
        _bwd_beta_tiled_kernel[(B,)](
            emissions, log_transitions, target_lengths, state_lengths, alpha, logz, grad_out,
            beta, grad_emis, T, S,
            BLOCK_S=cfg.block_s, BLOCK_U=cfg.block_u, num_warps=cfg.bwd_warps,
        )  # fmt: skip
        _bwd_trans_tiled_kernel[(B, triton.cdiv(S, cfg.block_u))](
            log_transitions, target_lengths, state_lengths, alpha, beta, logz, grad_out,
            grad_logE, T, S,
            BLOCK_S=cfg.block_s, BLOCK_U=cfg.block_u, num_warps=cfg.bwd_warps,
        )  # fmt: skip
    else:
        _bwd_single_tile_kernel[(B,)](
            emissions, log_transitions, target_lengths, state_lengths, alpha, logz, grad_out,
            grad_emis, grad_logE, T, S,
            BLOCK_S=cfg.block_s, num_warps=cfg.bwd_warps,
        )  # fmt: skip
    return grad_emis, grad_logE


class DagLogProbTriton(torch.autograd.Function):
    """Autograd wrapper: forward kernel saves alpha, backward runs the fused kernels.

    Inputs must already be validated and contiguous (see :func:`dag_logprob_triton`).
    Not twice differentiable.
    """

    @staticmethod
    def forward(
        ctx,
        emissions: torch.Tensor,
        log_transitions: torch.Tensor,
        target_lengths: torch.Tensor,
        state_lengths: torch.Tensor,
    ) -> torch.Tensor:
        needs_grad = bool(ctx.needs_input_grad[0] or ctx.needs_input_grad[1])
        logz, alpha = _forward(
            emissions, log_transitions, target_lengths, state_lengths, store_alpha=needs_grad
        )
        if needs_grad:
            ctx.save_for_backward(
                emissions, log_transitions, target_lengths, state_lengths, alpha, logz
            )
        return logz

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_out: torch.Tensor):
        emissions, log_transitions, target_lengths, state_lengths, alpha, logz = ctx.saved_tensors
        grad_out = grad_out.to(torch.float32).contiguous()
        with _explained_interpreter_errors():
            grad_emis, grad_logE = _backward(
                emissions, log_transitions, target_lengths, state_lengths, alpha, logz, grad_out
            )
        return (
            grad_emis if ctx.needs_input_grad[0] else None,
            grad_logE if ctx.needs_input_grad[1] else None,
            None,
            None,
        )


# what triton 3.6's interpreter raises under NumPy >= 2.4 (see the module docstring)
_NUMPY_SCALAR_ERROR = "only 0-dimensional arrays can be converted to Python scalars"


@contextlib.contextmanager
def _explained_interpreter_errors() -> Iterator[None]:
    """Re-raise the interpreter's NumPy-scalar failure with its cause and the fix."""
    try:
        yield
    except Exception as err:
        if _NUMPY_SCALAR_ERROR not in str(err):
            raise
        import numpy

        raise RuntimeError(
            f"Triton {triton.__version__}'s interpreter cannot run these kernels with NumPy "
            f"{numpy.__version__}: it converts one-element arrays to loop bounds, which NumPy "
            ">= 2.4 rejects. Use NumPy < 2.4 with this triton (scripts/setup.sh dev builds "
            ".venv-triton36 so), or triton >= 3.9; compiled GPU kernels are not affected"
        ) from err


def _is_interpreted() -> bool:
    # The interpreter is picked when @triton.jit runs: for triton's own helpers (tl.max, ...)
    # at triton's import, for these kernels at their modules' import. Both must agree.
    return all(
        type(fn).__name__ == "InterpretedFunction" for fn in (_fwd_single_tile_kernel, tl.max)
    )


def _check_triton_inputs(emissions: torch.Tensor, log_transitions: torch.Tensor) -> None:
    """What the kernels need beyond :func:`exlm_chem.dag.inputs.check_inputs`."""
    for name, x in (("emissions", emissions), ("log_transitions", log_transitions)):
        if x.dtype not in _SUPPORTED_DTYPES:
            raise TypeError(
                f"{name} dtype {x.dtype} is not supported by the Triton path "
                f"(float32, bfloat16, float16); use the torch reference"
            )
    S = emissions.shape[2]
    if S > TRITON_MAX_STATES:
        raise ValueError(
            f"S={S} states exceeds TRITON_MAX_STATES={TRITON_MAX_STATES}; use the torch reference"
        )
    if emissions.device.type == "cpu" and not _is_interpreted():
        raise RuntimeError(
            "the Triton DAG kernels got CPU tensors but Triton's interpreter is off: set "
            "TRITON_INTERPRET=1 before triton and exlm_chem.dag.triton_kernels are first "
            "imported, or use the torch reference on CPU"
        )


def dag_logprob_triton(
    emissions: torch.Tensor,
    log_transitions: torch.Tensor,
    target_lengths: torch.Tensor,
    state_lengths: torch.Tensor,
    *,
    check_lengths: bool = True,
) -> torch.Tensor:
    """Log-likelihood log P(Y) of each sample's targets under the states DAG (Triton).

    Parameters
    ----------
    emissions, log_transitions, target_lengths, state_lengths : Tensor
        As in :func:`exlm_chem.dag.dag_logprob`; the scores float32, bfloat16 or float16.
    check_lengths : bool, keyword-only
        Validate the lengths (one host synchronisation on CUDA). The kernels clamp them
        anyway, so skipping the check cannot read out of bounds.

    Returns
    -------
    Tensor [B], float32
        ``log P(Y)``; ``-inf`` where no path exists (those samples get zero gradients).
        Gradients flow to ``emissions`` and ``log_transitions`` in their own dtypes.

    Raises
    ------
    ValueError, TypeError, RuntimeError
        Bad shapes, dtypes or lengths; ``S > TRITON_MAX_STATES``; CPU tensors without
        Triton's interpreter.
    """
    check_inputs(emissions, log_transitions, target_lengths, state_lengths, check_lengths)
    return run_checked(emissions, log_transitions, target_lengths, state_lengths)


def run_checked(emissions: torch.Tensor, log_transitions: torch.Tensor,
                target_lengths: torch.Tensor, state_lengths: torch.Tensor) -> torch.Tensor:
    """:func:`dag_logprob_triton` on inputs that passed
    :func:`~exlm_chem.dag.inputs.check_inputs` (the dispatcher's one check)."""
    _check_triton_inputs(emissions, log_transitions)
    device = emissions.device
    tlen = target_lengths.to(device=device, dtype=torch.int32).contiguous()
    slen = state_lengths.to(device=device, dtype=torch.int32).contiguous()
    with _explained_interpreter_errors():
        return DagLogProbTriton.apply(
            emissions.contiguous(), log_transitions.contiguous(), tlen, slen
        )
