"""Optimizer and RNG state for exact resume, stored without pickle.

Tensors go to ``training_state.safetensors``; everything else (step counters, data
position, hyper-parameters) to ``training_state.json``. Loading never unpickles.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

TENSORS = "training_state.safetensors"
SCALARS = "training_state.json"


def _to_jsonable(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.item()
    if isinstance(value, tuple | list):
        return [_to_jsonable(v) for v in value]
    return value


def write_training_state(
    directory: Path,
    optimizer: torch.optim.Optimizer,
    progress: dict[str, Any],
) -> None:
    """Write optimizer and RNG state and ``progress`` into ``directory``.

    The learning rate is a pure function of the step (see
    :mod:`exlm_chem.train.pretrain_args`), so there is no scheduler object to save.
    """
    opt = optimizer.state_dict()
    tensors: dict[str, torch.Tensor] = {"rng.torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        for i, state in enumerate(torch.cuda.get_rng_state_all()):
            tensors[f"rng.cuda.{i}"] = state
    scalars: dict[str, dict[str, Any]] = {}
    for param_id, state in opt["state"].items():
        for key, value in state.items():
            if isinstance(value, torch.Tensor) and value.dim() > 0:
                tensors[f"optim.{param_id}.{key}"] = value.detach().cpu().contiguous()
            else:
                scalars.setdefault(str(param_id), {})[key] = _to_jsonable(value)
    payload = {
        "progress": progress,
        "optimizer_scalars": scalars,
        "param_groups": [
            {k: _to_jsonable(v) for k, v in group.items()} for group in opt["param_groups"]
        ],
    }
    save_file(tensors, str(directory / TENSORS))
    (directory / SCALARS).write_text(json.dumps(payload, indent=1))


def read_training_state(
    directory: Path,
    optimizer: torch.optim.Optimizer,
) -> dict[str, Any]:
    """Restore optimizer and RNG state; return the saved ``progress`` dict."""
    tensors = load_file(str(directory / TENSORS))
    payload = json.loads((directory / SCALARS).read_text())
    state: dict[int, dict[str, Any]] = {}
    for name, value in tensors.items():
        if name.startswith("optim."):
            _, param_id, key = name.split(".", 2)
            state.setdefault(int(param_id), {})[key] = value
    for param_id, values in payload["optimizer_scalars"].items():
        for key, value in values.items():
            # Adam keeps "step" as a tensor; restore the type it had
            state.setdefault(int(param_id), {})[key] = (
                torch.tensor(float(value)) if key == "step" else value
            )
    groups = payload["param_groups"]
    for group in groups:
        if "betas" in group:
            group["betas"] = tuple(group["betas"])
    optimizer.load_state_dict({"state": state, "param_groups": groups})
    torch.set_rng_state(tensors["rng.torch"])
    cuda_states = [tensors[k] for k in sorted(tensors) if k.startswith("rng.cuda.")]
    if cuda_states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(cuda_states[: torch.cuda.device_count()])
    return payload["progress"]
