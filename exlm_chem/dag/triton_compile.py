"""GPU developer tooling: the Triton kernels compiled ahead of time, with their resource use.

Not used at run time. ``benchmarks/pretraining/dag_loss.py --ptxas`` and the kernel tests call
:func:`compile_for_gpu` to check that every kernel compiles for an NVIDIA target (without
a GPU) and to read registers and spills from the cubin with ``cuobjdump``.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path
from typing import NamedTuple

import triton
import triton.language as tl

from exlm_chem.dag.triton_kernels import kernel_config
from exlm_chem.dag.triton_single_tile import _bwd_single_tile_kernel, _fwd_single_tile_kernel
from exlm_chem.dag.triton_tiled import (
    _bwd_beta_tiled_kernel,
    _bwd_trans_tiled_kernel,
    _fwd_tiled_kernel,
)

__all__ = ["CompiledKernelInfo", "compile_for_gpu"]


class CompiledKernelInfo(NamedTuple):
    """Resource usage of one kernel compiled ahead of time (see :func:`compile_for_gpu`)."""

    kernel: str
    num_states: int
    dtype: str
    num_warps: int
    registers: int | None  # per thread; None when cuobjdump is unavailable
    stack_bytes: int | None  # local memory per thread: > 0 means register spills
    shared_bytes: int | None


def compile_for_gpu(
    num_states: int, dtype: str = "fp32", arch: int = 90
) -> list[CompiledKernelInfo]:
    """Compile the kernels that ``num_states`` selects for an NVIDIA GPU, without a GPU.

    Catches what the interpreter cannot (constexpr rules, loop-carried types) and reports
    registers and spills from the cubin. Uses Triton's compiler API (``ASTSource``,
    ``GPUTarget``) and the ``cuobjdump`` shipped in Triton's NVIDIA backend. Must run in a
    process where ``TRITON_INTERPRET`` is off.

    Parameters
    ----------
    num_states : int
        S; picks the path and block sizes through :func:`kernel_config`.
    dtype : {"fp32", "bf16", "fp16"}
        Dtype of emissions, log_transitions and their gradients.
    arch : int
        Compute capability as an integer (90 = H100/H200).

    Returns
    -------
    list of CompiledKernelInfo
        One record per kernel of the selected path.
    """
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    if any(type(fn).__name__ == "InterpretedFunction" for fn in (_fwd_tiled_kernel, tl.max)):
        raise RuntimeError("compile_for_gpu needs TRITON_INTERPRET unset in this process")
    cfg = kernel_config(num_states)
    if cfg.tiled:
        blocks = {"BLOCK_S": cfg.block_s, "BLOCK_U": cfg.block_u}
        plan = [
            (_fwd_tiled_kernel, blocks, cfg.fwd_warps),
            (_bwd_beta_tiled_kernel, blocks, cfg.bwd_warps),
            (_bwd_trans_tiled_kernel, blocks, cfg.bwd_warps),
        ]
    else:
        plan = [
            (_fwd_single_tile_kernel, {"BLOCK_S": cfg.block_s, "STORE_ALPHA": True}, cfg.fwd_warps),
            (_bwd_single_tile_kernel, {"BLOCK_S": cfg.block_s}, cfg.bwd_warps),
        ]
    cuobjdump = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    # scores and their gradients in ``dtype``; alpha, beta, log Z and gout are fp32
    kinds = {"T": "i32", "S": "i32", "tlen_ptr": "*i32", "slen_ptr": "*i32",
             **dict.fromkeys(("emis_ptr", "logE_ptr", "gemis_ptr", "glogE_ptr"), f"*{dtype}")}
    records = []
    for kernel, constexprs, warps in plan:
        signature = {name: "constexpr" if name in constexprs else kinds.get(name, "*fp32")
                     for name in kernel.arg_names}
        compiled = triton.compile(
            ASTSource(kernel, signature, constexprs=constexprs),
            target=GPUTarget("cuda", arch, 32),
            options={"num_warps": warps},
        )
        usage = None
        if cuobjdump.exists() and "cubin" in compiled.asm:
            with tempfile.NamedTemporaryFile(suffix=".cubin") as handle:
                handle.write(compiled.asm["cubin"])
                handle.flush()
                dump = subprocess.run(
                    [str(cuobjdump), "--dump-resource-usage", handle.name],
                    capture_output=True,
                    text=True,
                    check=False,
                ).stdout
            usage = re.search(r"REG:(\d+).*?STACK:(\d+).*?SHARED:(\d+)", dump, re.S)
        regs, stack, shared = (int(x) for x in usage.groups()) if usage else (None,) * 3
        records.append(
            CompiledKernelInfo(kernel.fn.__name__, num_states, dtype, warps, regs, stack, shared)
        )
    return records
