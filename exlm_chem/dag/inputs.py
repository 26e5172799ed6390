"""The one check of the DAG op's inputs (shapes, dtypes, devices, lengths), for every backend.

:func:`exlm_chem.dag.dag_logprob` calls :func:`check_inputs` once and hands the checked
inputs to the chosen backend (the Triton kernels through
:func:`~exlm_chem.dag.triton_kernels.run_checked`); the Triton entry point
:func:`~exlm_chem.dag.triton_kernels.dag_logprob_triton`, called directly, checks them
itself. What only the Triton kernels need (their dtypes, their largest S) they check
themselves.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["check_inputs"]


def _shape(x: object) -> object:
    return tuple(x.shape) if isinstance(x, Tensor) else type(x)


def check_inputs(
    emissions: Tensor,
    log_transitions: Tensor,
    target_lengths: Tensor,
    state_lengths: Tensor,
    check_lengths: bool = True,
) -> None:
    """Raise if the inputs of the states-alignment op do not fit together.

    Parameters
    ----------
    emissions, log_transitions, target_lengths, state_lengths, check_lengths
        As in :func:`exlm_chem.dag.dag_logprob`.

    Raises
    ------
    ValueError
        A shape, a device or (with ``check_lengths``) a length that does not fit.
    TypeError
        Non-floating scores or non-integer lengths.
    """
    if not isinstance(emissions, Tensor) or emissions.dim() != 3:
        raise ValueError(f"emissions must be a 3-D tensor [B, T, S], got {_shape(emissions)}")
    batch, t_max, s_max = emissions.shape
    if batch == 0 or t_max == 0 or s_max == 0:
        raise ValueError(
            f"emissions [B, T, S] must have no empty dimension, got {(batch, t_max, s_max)}"
        )
    if not isinstance(log_transitions, Tensor) or log_transitions.shape != (batch, s_max, s_max):
        raise ValueError(
            f"log_transitions must have shape [B, S, S] = {(batch, s_max, s_max)} to match "
            f"emissions {tuple(emissions.shape)}, got {_shape(log_transitions)}"
        )
    for name, tensor in (("emissions", emissions), ("log_transitions", log_transitions)):
        if not tensor.is_floating_point():
            raise TypeError(f"{name} must be a floating-point tensor, got {tensor.dtype}")
    if log_transitions.device != emissions.device:
        raise ValueError(
            f"log_transitions is on {log_transitions.device} but emissions on {emissions.device}"
        )
    for name, lengths in (("target_lengths", target_lengths), ("state_lengths", state_lengths)):
        if not isinstance(lengths, Tensor) or lengths.dim() != 1 or lengths.numel() != batch:
            raise ValueError(
                f"{name} must be a 1-D tensor [B] = [{batch}], got shape {_shape(lengths)}"
            )
        if lengths.is_floating_point() or lengths.is_complex() or lengths.dtype == torch.bool:
            raise TypeError(f"{name} must be an integer tensor, got {lengths.dtype}")
    if not check_lengths:
        return
    # One host sync per call; cheap next to the DP and it catches silent misindexing.
    for name, lengths, bound in (
        ("target_lengths", target_lengths, t_max),
        ("state_lengths", state_lengths, s_max),
    ):
        outside = (lengths < 1) | (lengths > bound)
        if bool(outside.any()):
            i = int(torch.nonzero(outside)[0, 0])
            raise ValueError(
                f"{name}[{i}] = {int(lengths[i])} is outside [1, {bound}] (the padded size of "
                f"that dimension): sample {i}: target length {int(target_lengths[i])}, "
                f"state length {int(state_lengths[i])}"
            )
