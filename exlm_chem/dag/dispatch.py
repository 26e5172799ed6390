"""Public entry point of the states-alignment op: the backend choice.

Backends: ``"reference"`` (torch, :mod:`exlm_chem.dag.reference`) and ``"triton"``
(:mod:`exlm_chem.dag.triton_kernels`, imported lazily so that importing this package never
pulls in triton). ``"auto"`` picks triton for CUDA tensors when it imports, else the
reference; the environment variable ``EXLM_DAG_BACKEND=reference|triton`` overrides
``"auto"`` (an explicit ``backend=`` argument always wins).
"""

from __future__ import annotations

import importlib
import logging
import os
from types import ModuleType

import torch
from torch import Tensor

from exlm_chem.dag.inputs import check_inputs
from exlm_chem.dag.reference import dag_logprob_reference

__all__ = ["BACKENDS", "ENV_VAR", "dag_logprob", "select_backend"]

logger = logging.getLogger(__name__)

BACKENDS = ("auto", "reference", "triton")
ENV_VAR = "EXLM_DAG_BACKEND"
_warned_too_many_states = False


def _load_triton() -> ModuleType:
    return importlib.import_module("exlm_chem.dag.triton_kernels")


def _warn_once_too_many_states(num_states: int, limit: int) -> None:
    global _warned_too_many_states
    if not _warned_too_many_states:
        _warned_too_many_states = True
        logger.warning(
            "DAG has %d states, above the Triton kernel's limit of %d; "
            "using the torch reference for such batches (slower, same result).",
            num_states,
            limit,
        )


def select_backend(
    backend: str,
    device: torch.device,
    num_states: int,
    dtypes: tuple[torch.dtype, ...] = (),
) -> str:
    """Resolve ``backend`` to ``"reference"`` or ``"triton"`` for tensors on ``device``.

    Parameters
    ----------
    backend : {"auto", "reference", "triton"}
    device : torch.device
        Device of the emissions.
    num_states : int
        S, the padded number of states.
    dtypes : tuple of torch.dtype
        Dtypes of the float inputs; ``"auto"`` keeps float64 (gradient checks) on the
        reference, which the Triton kernels do not support.

    Returns
    -------
    str
        ``"reference"`` or ``"triton"``.

    Raises
    ------
    ValueError
        Unknown backend name (argument or ``$EXLM_DAG_BACKEND``).
    RuntimeError
        ``"triton"`` requested for CPU tensors without ``TRITON_INTERPRET=1``, or the
        Triton module cannot be imported.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    override = os.environ.get(ENV_VAR, "").strip()
    if backend == "auto" and override:
        if override not in BACKENDS:
            raise ValueError(f"${ENV_VAR} must be 'reference', 'triton' or 'auto', "
                             f"got {override!r}")
        backend = override
    if backend == "reference":
        return "reference"

    explicit = backend == "triton"
    if not explicit and torch.float64 in dtypes:
        return "reference"
    if device.type != "cuda":
        if not explicit:
            return "reference"
        if os.environ.get("TRITON_INTERPRET", "") != "1":
            raise RuntimeError(
                "the triton DAG backend needs CUDA tensors; for CPU tensors set "
                "TRITON_INTERPRET=1 (before triton is first imported) or use "
                "backend='reference'"
            )
    try:
        module = _load_triton()
    except ImportError as err:
        if not explicit:
            return "reference"
        raise RuntimeError(
            f"the triton DAG backend is unavailable ({err}); install triton or use "
            "backend='reference'"
        ) from err
    limit = int(module.TRITON_MAX_STATES)
    if num_states > limit:
        _warn_once_too_many_states(num_states, limit)
        return "reference"
    return "triton"


def dag_logprob(
    emissions: Tensor,
    log_transitions: Tensor,
    target_lengths: Tensor,
    state_lengths: Tensor,
    backend: str = "auto",
    check_lengths: bool = True,
) -> Tensor:
    """log P(Y) of each target sequence summed over all its alignments to the DAG states
    (the forward recursion of :mod:`exlm_chem.dag.reference`).

    Parameters
    ----------
    emissions : Tensor [B, T, S], floating (fp32, bf16, fp16, fp64)
        ``emissions[b, t, s] = log P_s(y_t)``; entries with ``t >= T_b`` or ``s >= L_b``
        are padding (ignored, zero gradient).
    log_transitions : Tensor [B, S, S], floating
        ``log E[u, v]``; entries with ``v <= u`` or a padding state are non-edges.
    target_lengths : Tensor [B], integer
        ``T_b`` in ``[1, T]``.
    state_lengths : Tensor [B], integer
        ``L_b`` in ``[1, S]``.
    backend : {"auto", "reference", "triton"}
        See the module docstring; ``$EXLM_DAG_BACKEND`` overrides ``"auto"``.
    check_lengths : bool
        Check that every length is in range. That reads the lengths on the host, which
        waits for the device: a training step whose lengths come from the collate skips it
        (the Triton kernels clamp lengths; the reference's indexing fails on bad ones).

    Returns
    -------
    Tensor [B], float32 (float64 for float64 inputs, which "auto" keeps on the reference)
        ``-inf`` (with zero gradient) for samples that have no valid path.
    """
    check_inputs(emissions, log_transitions, target_lengths, state_lengths, check_lengths)
    chosen = select_backend(
        backend,
        emissions.device,
        emissions.shape[2],
        dtypes=(emissions.dtype, log_transitions.dtype),
    )
    if chosen == "triton":
        return _load_triton().run_checked(emissions, log_transitions, target_lengths,
                                          state_lengths)
    return dag_logprob_reference(emissions, log_transitions, target_lengths, state_lengths)
