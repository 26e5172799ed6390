#!/usr/bin/env python
"""How long ``exlm-chem --help`` takes, as a multiple of a bare interpreter.

Each round starts, one after the other, a Python that imports only ``argparse`` and a
Python that runs ``exlm-chem`` with ``--help`` (or with each subcommand's ``--help``);
the order alternates between rounds, so load from other processes hits both alike. A
round's ratio compares two timings taken a fraction of a second apart; the median over
rounds is reported, with the load average.

The target: the top-level ``--help`` within 8x of the bare interpreter (importing torch
alone costs about 50x, pandas about 15x); exit status 1 if its median ratio misses it.
The subcommands' rows are reported beside it: those whose choices need numpy (about 0.1 s)
may import it. The tests check the cause (no heavy module is imported to answer
``--help``, ``tests/cli/test_cli_startup.py``); timings belong here, where the machine
and its load are printed next to them.

Usage::

    python benchmarks/speed/cli_startup.py [--rounds 15] [--subcommands] [--out FILE]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from exlm_chem.provenance import REPO, git_commit, load_average, machine

TARGET = 8.0  # median ratio --help / bare interpreter
BARE = "import argparse"
HELP = ("import sys\nfrom exlm_chem.cli import main\ntry:\n    main({argv!r})\n"
        "except SystemExit:\n    pass")


def _seconds(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], capture_output=True, check=True, cwd=REPO,
                   timeout=120)
    return time.perf_counter() - start


def median_ratio(argv: list[str], rounds: int) -> tuple[float, float, float]:
    """Median help seconds, median bare seconds and the median of per-round ratios."""
    code = HELP.format(argv=argv)
    helps, bares, ratios = [], [], []
    for i in range(rounds):
        if i % 2:
            bare, help_ = _seconds(BARE), _seconds(code)
        else:
            help_, bare = _seconds(code), _seconds(BARE)
        helps.append(help_)
        bares.append(bare)
        ratios.append(help_ / bare)
    return statistics.median(helps), statistics.median(bares), statistics.median(ratios)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--subcommands", action="store_true",
                        help="also time each subcommand's --help")
    parser.add_argument("--out", type=Path, help="also write the table to this file")
    args = parser.parse_args(argv)

    from exlm_chem.cli import COMMANDS

    cases = [["--help"]]
    if args.subcommands:
        cases += [[c.group, c.name, "--help"] if c.group else [c.name, "--help"]
                  for c in COMMANDS]
    lines = [f"# `exlm-chem --help` against a bare interpreter ({args.rounds} rounds)", "",
             f"commit {git_commit()}; {machine()}; load average before: {load_average()}", "",
             "| command | help, s (median) | bare Python, s (median) | ratio (median) |",
             "|---|---:|---:|---:|"]
    ratios = []
    for case in cases:
        help_, bare, ratio = median_ratio(case, args.rounds)
        ratios.append(ratio)
        lines.append(f"| `exlm-chem {' '.join(case)}` | {help_:.3f} | {bare:.3f} | {ratio:.1f}x |")
    lines += ["", f"load average after: {load_average()}; target: `exlm-chem --help` "
              f"< {TARGET:g}x, measured {ratios[0]:.1f}x"]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    return 0 if ratios[0] < TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
