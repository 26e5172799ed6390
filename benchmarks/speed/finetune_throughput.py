"""Fine-tuning step throughput and peak memory: ExLM vs a same-size Hugging Face RoBERTa.

One optimiser step per batch of BBBP molecules, both models built in one process and
timed in alternating rounds over the same batches (see ``_side_by_side.py``):

* ExLM: BOS/EOS expansion of the token ids (``inference_inputs.inference_inputs``), the
  encoder, the first-BOS pooling and the classification head (``exlm_chem.train.finetune``'s
  network), binary cross-entropy, backward, clipping at 1.0, AdamW;
* RoBERTa: ``transformers.RobertaForSequenceClassification`` of the same layers, width,
  heads, FFN and vocabulary on the same token ids, with the same loss and optimiser.

Dropout 0.1 everywhere, attention dropout 0.1 (the Table 8 setting). Tokenisation is done
once up front for both. ``--batching random`` (default) forms batches as the fine-tuning
loop does today: a seeded random order, cut every ``--batch-size``; ``sorted`` forms them
by length.
Peak RSS: each model alone in a subprocess over the same batches.

Runs against whichever ``exlm_chem`` is imported (``PYTHONPATH=<old checkout>``); see
``embed_throughput.py`` for ``--json``/``--compare``.

Usage::

    python benchmarks/speed/finetune_throughput.py --n 256 --threads 1 2 --rounds 5
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from _side_by_side import Bench, add_common_arguments, roberta_config, run_main, shared_data


def bbbp_smiles(path: str | Path, n: int) -> list[str]:
    """The first ``n`` BBBP SMILES that RDKit parses (the rows fine-tuning would use)."""
    import pandas as pd

    from exlm_chem.data.featurize import check_smiles

    frame = pd.read_csv(path)
    column = next(c for c in frame.columns if c.lower() == "smiles")
    smiles = frame[column].astype(str).tolist()
    valid = check_smiles(smiles).valid
    return [s for s, ok in zip(smiles, valid, strict=True) if ok][:n]


def make_batches(lengths, batch_size: int, batching: str) -> list:
    """``bucketed``: what fine-tuning draws (:func:`exlm_chem.data.batching.bucketed_batches`,
    seed 0); ``random``: plain random batches."""
    import numpy as np

    from exlm_chem.data.batching import bucketed_batches

    if batching == "bucketed":
        return bucketed_batches(lengths, batch_size, np.random.default_rng(0))
    order = np.random.default_rng(0).permutation(len(lengths))
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def build(spec: dict) -> tuple[dict, list, list[int]]:
    """Runners ``{"exlm", "roberta"}`` (one batch -> one optimiser step) and the batches."""
    import numpy as np
    import torch
    import torch.nn.functional as F

    from exlm_chem.data.collate import SpecialIds
    from exlm_chem.data.inference_inputs import inference_inputs
    from exlm_chem.data.tokenizer import SmilesTokenizer
    from exlm_chem.model import ExLMConfig
    from exlm_chem.model.molecule_model import build_model

    torch.manual_seed(0)
    tokenizer = SmilesTokenizer()
    config = ExLMConfig.preset(spec["preset"], vocab_size=tokenizer.vocab_size, objective="mlm",
                               dropout=0.1, attention_dropout=0.1)
    smiles = bbbp_smiles(spec["data"], spec["n"])
    encoded = tokenizer.batch_encode(smiles, max_length=spec["max_length"])
    ids, lengths = encoded.input_ids, encoded.lengths  # [n, N], [n]
    labels = torch.from_numpy(np.random.default_rng(0).integers(0, 2, (len(smiles), 1))).float()
    batches = make_batches(lengths, spec["batch_size"], spec["batching"])

    def optimiser(model):
        return torch.optim.AdamW(model.parameters(), lr=4e-4, betas=(0.9, 0.99), eps=1e-6)

    def step(model, opt, logits, batch):
        loss = F.binary_cross_entropy_with_logits(logits, labels[batch])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return float(loss.detach())

    runners = {}
    if spec.get("impl") in (None, "exlm"):
        # first-BOS like RoBERTa's <s> head, and what the committed results measured
        net = build_model(config, tokenizer, 1, pooling="bos").train()
        special = SpecialIds(tokenizer.bos_id, tokenizer.pad_id, tokenizer.eos_id,
                             tokenizer.mask_id)
        exlm_opt = optimiser(net)

        def exlm(batch):
            tensors = inference_inputs([ids[i, : lengths[i]] for i in batch],
                                        config.k_states, special)
            hidden = net.encoder(*tensors)  # [B, X, d]
            return step(net, exlm_opt, net.head(hidden[:, 0]), batch)

        runners["exlm"] = exlm
    if spec.get("impl") in (None, "roberta"):
        from transformers import RobertaForSequenceClassification

        roberta = RobertaForSequenceClassification(
            roberta_config(config, spec["max_length"])).train()
        hf_opt = optimiser(roberta)

        def hf(batch):
            width = int(lengths[batch].max())
            input_ids = torch.from_numpy(ids[batch, :width])  # [B, N]
            mask = (input_ids != config.pad_id).long()
            return step(roberta, hf_opt, roberta(input_ids=input_ids, attention_mask=mask).logits,
                        batch)

        runners["roberta"] = hf
    return runners, batches, [len(b) for b in batches]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # batch 32, not Table 8's 128: RoBERTa on random batches of 128 (padded to ~236 tokens,
    # math attention for the dropout) peaks near 8 GB, too much beside other jobs
    add_common_arguments(parser, n=256, batch_size=32)
    parser.add_argument("--batching", choices=("random", "bucketed"), default="bucketed")
    parser.add_argument("--data", default=str(shared_data() / "moleculenet" / "bbbp.csv.gz"))
    args = parser.parse_args(argv)
    spec = {"preset": args.preset, "n": args.n, "batch_size": args.batch_size,
            "max_length": args.max_length, "data": args.data, "batching": args.batching}
    title = (f"Fine-tuning step throughput, {args.preset} preset: ExLM vs same-size RoBERTa "
             f"({args.n} BBBP molecules per round, batch {args.batch_size}, {args.batching} "
             "batches, one AdamW step per batch)")
    return run_main(Bench(__file__, build, inference=False), args, spec, title, argv)


if __name__ == "__main__":
    sys.exit(main())
