#!/usr/bin/env python
"""The ADMET panel against ADMET-AI on the same molecules and machine: molecules per second,
CPU time, cold start and peak memory, each tool at its own defaults.

Both run as a new user runs them, one command each, as separate processes started one after
the other (the order alternates between sizes, so load from elsewhere hits both alike):

- ours: ``exlm-chem admet IN --out OUT`` (the shipped panel, ``models/admet``);
- ADMET-AI: ``admet_predict --data_path IN --save_path OUT --smiles_column smiles``, from a
  virtual environment of its own (``pip install admet-ai==2.0.1`` beside ``torch==2.13.0``;
  it is not a dependency of this package).

The molecules are a seeded sample of the ChEMBL mix of the shared pre-training data (drug-like
molecules with charges, halogens and stereo), written to one CSV per size. A cold start is a
file of one molecule. Per run: wall seconds, CPU seconds of the process and everything it
waited for (``RUSAGE_CHILDREN``), and the peak resident memory of the largest of them. The
goal (issue 95): at least ADMET-AI's throughput; the ratio is ours over theirs.

Usage::

    python benchmarks/admet/throughput.py --admet-ai /path/to/venv/bin/admet_predict \
        [--sizes 1000 10000] [--out benchmarks/results/admet]
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

from exlm_chem.provenance import REPO, git_commit, load_average, machine

CORPUS = REPO.parent / "shared" / "data" / "pretrain" / "chembl_mix.smi.gz"


def sample(n: int, seed: int = 0) -> list[str]:
    """``n`` SMILES drawn without replacement from the ChEMBL mix (seeded)."""
    with gzip.open(CORPUS, "rt") as handle:
        smiles = [line.split()[0] for line in handle if line.strip()]
    return random.Random(seed).sample(smiles, n)


# run inside a fresh interpreter, so that RUSAGE_CHILDREN (CPU time of every process the
# command waited for, and the largest one's peak RSS in KiB) is this command's alone
_WRAPPER = ("import json, resource, subprocess, sys, time\n"
            "start = time.perf_counter()\n"
            "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
            "wall = time.perf_counter() - start\n"
            "use = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
            "print(json.dumps({'rc': done.returncode, 'err': done.stderr[-2000:], "
            "'wall': wall, 'cpu': use.ru_utime + use.ru_stime, 'rss_kib': use.ru_maxrss}))\n")


def timed(command: list[str]) -> dict[str, float]:
    """Wall and CPU seconds and peak RSS (MB) of one command and what it waited for."""
    got = json.loads(subprocess.run([sys.executable, "-c", _WRAPPER, *command],
                                    capture_output=True, text=True, cwd=REPO,
                                    check=True).stdout)
    if got["rc"] != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{got['err']}")
    return {"wall_s": round(got["wall"], 2), "cpu_s": round(got["cpu"], 2),
            "peak_rss_mb": round(got["rss_kib"] / 1024, 1)}


def commands(tool: str, data: Path, out: Path, admet_ai: str) -> list[str]:
    if tool == "exlm_chem":
        return [str(Path(sys.executable).with_name("exlm-chem")), "admet", str(data), "--out",
                str(out), "--no-progress"]
    return [admet_ai, "--data_path", str(data), "--save_path", str(out), "--smiles_column",
            "smiles"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--admet-ai", required=True, help="ADMET-AI's admet_predict command")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "admet"))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    tools = ["exlm_chem", "admet_ai"]
    with tempfile.TemporaryDirectory() as tmp:
        for i, size in enumerate([1, *args.sizes]):
            data = Path(tmp) / f"molecules_{size}.csv"
            data.write_text("smiles\n" + "\n".join(sample(size)) + "\n")
            for tool in tools if i % 2 == 0 else tools[::-1]:
                got = timed(commands(tool, data, Path(tmp) / f"{tool}_{size}.csv",
                                     args.admet_ai))
                row = {"tool": tool, "molecules": size, **got,
                       "mol_per_s": round(size / got["wall_s"], 2),
                       "mol_per_cpu_s": round(size / got["cpu_s"], 2),
                       "load_average": load_average()}
                rows.append(row)
                print(json.dumps(row), flush=True)
    header = {"commit": git_commit(), "machine": machine(),
              "command": "python benchmarks/admet/throughput.py --admet-ai "
                         "<venv>/bin/admet_predict --sizes " + " ".join(map(str, args.sizes))}
    (out / "throughput.jsonl").write_text(
        "\n".join(json.dumps({**header, **r}) for r in rows) + "\n")
    lines = ["# The ADMET panel against ADMET-AI 2.0.1: throughput on one machine", "",
             f"Commit `{header['commit']}`, {header['machine']}. Command: "
             f"`{header['command']}`. Molecules: a seeded sample of the shared ChEMBL mix. "
             "Each tool at its own defaults, one after the other (alternating order); CPU "
             "seconds include every process a run waited for; the load average is the "
             "machine's when the run ended.", "",
             "| molecules | tool | wall s | CPU s | mol/s | mol per CPU-s | peak RSS MB | load |",
             "|---:|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['molecules']} | {r['tool']} | {r['wall_s']} | {r['cpu_s']} | "
                     f"{r['mol_per_s']} | {r['mol_per_cpu_s']} | {r['peak_rss_mb']} | "
                     f"{r['load_average']} |")
    lines += ["", "Ratios, ours over ADMET-AI's (above 1: the panel is faster):", ""]
    for size in [1, *args.sizes]:
        ours = next(r for r in rows if r["tool"] == "exlm_chem" and r["molecules"] == size)
        theirs = next(r for r in rows if r["tool"] == "admet_ai" and r["molecules"] == size)
        what = "cold start (wall)" if size == 1 else "molecules per second"
        lines.append(f"- {size} molecule{'s' if size > 1 else ''}, {what}: "
                     f"x {theirs['wall_s'] / ours['wall_s']:.2f}; per CPU-second: "
                     f"x {theirs['cpu_s'] / ours['cpu_s']:.2f}")
    (out / "throughput.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
