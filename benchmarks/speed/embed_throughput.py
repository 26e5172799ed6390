"""Embedding throughput and peak memory: ExLM vs a same-size Hugging Face RoBERTa.

Both models are built in one process (random weights: the FLOPs, and so the speed, do not
depend on them) and timed in alternating rounds over the same batches (see
``_side_by_side.py``): the ExLM side is ``MoleculeModel.run`` on one batch (expand BOS/EOS,
forward, BOS pooling; the one inference loop of every entry point), the RoBERTa side a
``transformers.RobertaModel`` with the same layers, width, heads, FFN and vocabulary
(ChemBERTa's architecture) on the very same token ids, its ``<s>`` state pooled. Batches
are formed by token length as ``embed`` does. Eval mode, ``torch.inference_mode``, fp32
CPU. Peak RSS: each model alone in a subprocess over the same batches.

Runs against whichever ``exlm_chem`` is imported, so ``PYTHONPATH=<old checkout>`` times
older code with this script; ``--json`` keeps a run, ``--compare`` puts saved runs in one
before/after table.

Usage::

    python benchmarks/speed/embed_throughput.py --n 2048 --threads 1 2 --rounds 5 \\
        --label after --json /tmp/after.json --compare /tmp/before.json --out RESULT.md
"""

from __future__ import annotations

import argparse
import sys

from _side_by_side import (
    Bench,
    add_common_arguments,
    read_smiles,
    roberta_config,
    run_main,
    shared_data,
)


def build(spec: dict) -> tuple[dict, list, list[int]]:
    """Runners ``{"exlm", "roberta"}`` (one batch -> pooled [B, d]) and the batches."""
    import torch

    from exlm_chem.data.batching import sorted_batches
    from exlm_chem.data.tokenizer import SmilesTokenizer
    from exlm_chem.model import ExLMConfig, ExLMEncoder
    from exlm_chem.model.molecule_model import EMBED, MoleculeModel

    torch.manual_seed(0)
    tokenizer = SmilesTokenizer()
    config = ExLMConfig.preset(spec["preset"], vocab_size=tokenizer.vocab_size)
    smiles = read_smiles(spec["corpus"], spec["n"])
    encoded = tokenizer.batch_encode(smiles, max_length=spec["max_length"])
    ids, lengths = encoded.input_ids, encoded.lengths  # [n, N], [n]
    batches = list(sorted_batches(lengths, spec["batch_size"]))
    runners = {}
    if spec.get("impl") in (None, "exlm"):
        model = MoleculeModel(ExLMEncoder(config), tokenizer, "bos").eval()

        def exlm(batch):
            return model.run([ids[i, : lengths[i]] for i in batch], EMBED, len(batch))

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_arguments(parser, n=2048, batch_size=128)
    parser.add_argument("--corpus", default=str(shared_data() / "pretrain" / "moses_test.smi.gz"))
    args = parser.parse_args(argv)
    spec = {"preset": args.preset, "n": args.n, "batch_size": args.batch_size,
            "max_length": args.max_length, "corpus": args.corpus}
    title = (f"Embedding throughput, {args.preset} preset: ExLM vs same-size RoBERTa "
             f"({args.n} MOSES molecules per round, batch {args.batch_size}, length-sorted)")
    return run_main(Bench(__file__, build, inference=True), args, spec, title, argv)


if __name__ == "__main__":
    sys.exit(main())
