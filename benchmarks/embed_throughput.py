"""Embedding throughput and peak memory: ExLM vs a same-size Hugging Face RoBERTa.

Both models are built in one process (random weights: the FLOPs, and so the speed, do not
depend on them) and timed in alternating rounds over the same batches (see
``_side_by_side.py``): the ExLM side is ``exlm_chem.embed.Embedder.pooled_batch`` (expand
BOS/EOS, forward, BOS pooling), the RoBERTa side a ``transformers.RobertaModel`` with the
same layers, width, heads, FFN and vocabulary (ChemBERTa's architecture) on the very same
token ids, its ``<s>`` state pooled. Batches are formed by token length as ``embed`` does.
Eval mode, ``torch.inference_mode``, fp32 CPU. Peak RSS: each model alone in a subprocess
over the same batches.

Runs against whichever ``exlm_chem`` is imported, so ``PYTHONPATH=<old checkout>`` times
older code with this script; ``--json`` keeps a run, ``--compare`` puts saved runs in one
before/after table.

Usage::

    python benchmarks/embed_throughput.py --n 2048 --threads 1 2 --rounds 5 \\
        --label after --json /tmp/after.json --compare /tmp/before.json --out RESULT.md
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

from _side_by_side import (
    alternate,
    markdown,
    peak_rss_in_subprocess,
    peak_rss_mb,
    provenance,
    read_smiles,
    roberta_config,
    shared_data,
    summarise,
)

from exlm_chem.provenance import load_average


def build(spec: dict) -> tuple[dict, list, list[int]]:
    """Runners ``{"exlm", "roberta"}`` (one batch -> pooled [B, d]) and the batches."""
    import torch

    from exlm_chem.embed import Embedder
    from exlm_chem.featurize import length_sorted_batches
    from exlm_chem.inference_inputs import inference_expansion
    from exlm_chem.model import ExLMConfig, ExLMModel
    from exlm_chem.tokenizer import SmilesTokenizer

    torch.manual_seed(0)
    tokenizer = SmilesTokenizer()
    config = ExLMConfig.preset(spec["preset"], vocab_size=tokenizer.vocab_size)
    smiles = read_smiles(spec["corpus"], spec["n"])
    encoded = tokenizer.batch_encode(smiles, max_length=spec["max_length"])
    ids, lengths = encoded.input_ids, encoded.lengths  # [n, N], [n]
    batches = list(length_sorted_batches(lengths, spec["batch_size"]))
    runners = {}
    if spec.get("impl") in (None, "exlm"):
        embedder = Embedder(ExLMModel(config).eval(), tokenizer, inference_expansion(config),
                            device="cpu")

        def exlm(batch):
            return embedder.pooled_batch([ids[i, : lengths[i]] for i in batch], "bos")

        runners["exlm"] = exlm
    if spec.get("impl") in (None, "roberta"):
        from transformers import RobertaModel

        roberta = RobertaModel(roberta_config(config, spec["max_length"]),
                               add_pooling_layer=False).eval()

        def hf(batch):
            width = int(lengths[batch].max())
            input_ids = torch.from_numpy(ids[batch, :width])  # [B, N]
            mask = (input_ids != config.pad_id).long()
            hidden = roberta(input_ids=input_ids, attention_mask=mask).last_hidden_state
            return hidden[:, 0].float().numpy()  # [B, d]

        runners["roberta"] = hf
    return runners, batches, [len(b) for b in batches]


def worker(spec: dict) -> dict:
    """One model alone over all batches: its peak RSS and rate."""
    import torch

    torch.set_num_threads(spec["threads"])
    runners, batches, sizes = build(spec)
    (run,) = runners.values()
    with torch.inference_mode():
        start = time.perf_counter()
        for batch in batches:
            run(batch)
        seconds = time.perf_counter() - start
    return {"peak_rss_mb": peak_rss_mb(), "mol_per_s": sum(sizes) / seconds}


def measure(args: argparse.Namespace) -> dict:
    import torch

    spec = {"preset": args.preset, "n": args.n, "batch_size": args.batch_size,
            "max_length": args.max_length, "corpus": args.corpus}
    runners, batches, sizes = build(spec)
    rows = []
    with torch.inference_mode():
        for threads in args.threads:
            torch.set_num_threads(threads)
            for run in runners.values():  # warm-up: allocator, kernels, not timed
                run(batches[-1])
            rates = alternate(runners, batches, sizes, args.rounds)
            rows.append({"threads": threads, **summarise(rates, "exlm", "roberta")})
            print(f"{threads} thread(s): ratio {rows[-1]['ratio']:.2f}", file=sys.stderr)
    rss = {impl: peak_rss_in_subprocess(__file__, {**spec, "impl": impl, "threads": 1})
           ["peak_rss_mb"] for impl in ("exlm", "roberta")}
    return {"rows": rows, "rss": rss, "load_average_end": load_average()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, default=2048, help="molecules per round")
    parser.add_argument("--preset", default="small")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds per model")
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--corpus", default=str(shared_data() / "pretrain" / "moses_test.smi.gz"))
    parser.add_argument("--label", default="this code")
    parser.add_argument("--json", help="save this run (figures and provenance) here")
    parser.add_argument("--compare", nargs="*", default=[],
                        help="saved runs (--json of earlier runs) to put first in the table")
    parser.add_argument("--out", help="write the markdown table here")
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return 0
    command = "python benchmarks/embed_throughput.py " + shlex.join(sys.argv[1:] if argv is None
                                                                    else argv)
    run = {"label": args.label, "provenance": provenance(command), **measure(args)}
    if args.json:
        Path(args.json).write_text(json.dumps(run, indent=1) + "\n", encoding="utf-8")
    runs = [json.loads(Path(p).read_text(encoding="utf-8")) for p in args.compare] + [run]
    table = markdown(f"Embedding throughput, {args.preset} preset: ExLM vs same-size RoBERTa "
                     f"({args.n} MOSES molecules per round, batch {args.batch_size}, "
                     "length-sorted)", runs, "mol/s")
    print(table)
    if args.out:
        Path(args.out).write_text(table + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
