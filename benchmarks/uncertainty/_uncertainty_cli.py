"""The command line shared by benchmarks/uncertainty_{probe,finetune}.py."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def parser(doc: str, augment: int, work: str) -> argparse.ArgumentParser:
    """Tasks, seeds, augmentation, tta, model, data and output options."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--tasks", nargs="+", default=["bace", "bbbp", "clintox", "sider"])
    p.add_argument("--uq-tasks", nargs="+", default=["bbbp", "bace"])
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--augment", type=int, default=augment)
    p.add_argument("--tta", type=int, default=4)
    p.add_argument("--model", default="models/exlm-small")
    p.add_argument("--data", default=None)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--work", type=Path, default=Path(work))
    return p


def prepare(args: argparse.Namespace, name: str, key: tuple[str, ...]) -> tuple[Path, set]:
    """One torch thread, the folders, and (results file, keys of the rows it holds)."""
    import torch

    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    args.work.mkdir(parents=True, exist_ok=True)
    results = args.out / name
    done = set()
    if results.is_file():
        done = {tuple(r[k] for k in key) for r in map(json.loads, results.open())}
    return results, done
