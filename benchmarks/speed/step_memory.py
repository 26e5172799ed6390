"""Peak RSS of one CPU fine-tuning step on the Table 8 BBBP batch of the 128 longest molecules.

One ``finetune`` epoch of exlm-small over exactly those 128 molecules (batch 128: one
AdamW step, no validation), fp32, one thread. Prints the process's VmHWM before and after
and the CPU seconds of the step. ``--step-tokens`` sets the micro-batch budget
(``exlm_chem.train.micro_batches``; ``none``: the whole batch in one pass). Runs against
whichever ``exlm_chem`` is imported (``PYTHONPATH=<checkout>``).

    python benchmarks/speed/step_memory.py --step-tokens none
    python benchmarks/speed/step_memory.py --step-tokens 2048
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def hwm_mib() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM")) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--step-tokens", default="2048")
    parser.add_argument("--model", default="models/exlm-small")
    parser.add_argument("--data", default=None, help="MoleculeNet folder ($EXLM_CHEM_DATA)")
    args = parser.parse_args()
    import torch

    import exlm_chem.train.finetune as ft
    from exlm_chem.data.moleculenet import load_moleculenet
    from exlm_chem.model.molecule_model import build_model
    from exlm_chem.model.pretrained import load_backbone
    from exlm_chem.presets import FinetuneSettings

    torch.set_num_threads(1)
    ft.STEP_TOKENS = None if args.step_tokens == "none" else int(args.step_tokens)
    data = load_moleculenet("bbbp", args.data)
    torch.manual_seed(0)
    backbone = load_backbone(args.model, preset="", dropout=0.1)
    net = build_model(backbone.config, backbone.tokenizer, 1, backbone.encoder_state, 0.1,
                      "bos", 256)
    longest = np.argsort([len(s) for s in data.smiles], kind="stable")[-128:]
    train = ft.LabelledSmiles([data.smiles[i] for i in longest], data.labels[longest])
    tokens = int(net.encode(train.smiles).lengths.sum())
    before, cpu = hwm_mib(), time.process_time()
    ft.finetune(net, train, FinetuneSettings(epochs=1, batch_size=128))
    print(f"step tokens {args.step_tokens}: {tokens} real tokens, VmHWM {before:.0f} MiB "
          f"before, {hwm_mib():.0f} MiB after, {time.process_time() - cpu:.1f} CPU s")


if __name__ == "__main__":
    main()
