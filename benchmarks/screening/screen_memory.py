"""Does a screening worker's memory grow with the rows it has processed?

One process runs :func:`exlm_chem.screening.worker.run_part` on ``--chunks`` consecutive
chunks of MOSES train (what a Dask worker does, without Dask) and prints its resident
size (VmRSS) and high-water mark (VmHWM) after each. Flat numbers mean memory depends on
the chunk, not on the library. The model is the throw-away classifier of
``screen_scaling.py`` (``--preset tiny`` keeps it quick).

Usage::

    nice python benchmarks/screening/screen_memory.py --chunks 30 --chunk-rows 5000 --preset tiny
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import re
import tempfile
from pathlib import Path

from screen_scaling import DATA, fit_model

from exlm_chem.provenance import git_commit, load_average, machine


def _status_mb(field: str) -> float:
    text = Path("/proc/self/status").read_text()
    return int(re.search(rf"{field}:\s+(\d+)", text).group(1)) / 1024  # kB -> MB


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=30)
    parser.add_argument("--chunk-rows", type=int, default=5000)
    parser.add_argument("--preset", choices=("small", "tiny"), default="tiny")
    args = parser.parse_args()

    import torch

    from exlm_chem.screening.manifest import model_sha256
    from exlm_chem.screening.worker import ModelSpec, PartTask, run_part

    torch.set_num_threads(1)
    print(f"commit {git_commit()}; {machine()}; load {load_average()}")
    with tempfile.TemporaryDirectory(prefix="screen_memory_") as tmp:
        model = fit_model(Path(tmp) / "model", args.preset)
        spec = ModelSpec(str(model), model_sha256(model), "predict", "cpu", "bos", None, 256)
        with gzip.open(DATA / "pretrain" / "moses_train.smi.gz", "rt") as fh:
            for i in range(args.chunks):
                smiles = [line.split()[0] for line in itertools.islice(fh, args.chunk_rows)]
                run_part(spec, PartTask(tmp, f"part-{i:04d}.parquet", "moses", i *
                                        args.chunk_rows, smiles, "memory"))
                print(f"after {(i + 1) * args.chunk_rows:>8} rows: RSS "
                      f"{_status_mb('VmRSS'):.0f} MB, peak {_status_mb('VmHWM'):.0f} MB",
                      flush=True)
    print(f"load {load_average()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
