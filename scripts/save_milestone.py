"""Save a pre-training checkpoint as a milestone: 16-bit weights a later session continues.

    python scripts/save_milestone.py runs/ARM/checkpoint milestones/NAME

A run cut off with its session continues on a fresh machine from a committed milestone
(``exlm-chem pretrain --init-from milestones/NAME``): weights only, half size, no optimizer
state. The milestone's metadata keeps the run's tokens, CPU time, data position and recipe.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from exlm_chem.model.checkpoint import copy_checkpoint


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", type=Path, help="a run's checkpoint or snapshot directory")
    parser.add_argument("out", type=Path, help="milestone directory (replaced if present)")
    args = parser.parse_args()
    out = copy_checkpoint(args.checkpoint, args.out,
                          metadata={"status": f"milestone of {args.checkpoint}"})
    size = sum(f.stat().st_size for f in out.iterdir()) / 1e6
    print(f"{out}: {size:.1f} MB")


if __name__ == "__main__":
    main()
