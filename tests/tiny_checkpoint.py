"""A real (if barely trained) checkpoint for tests of fine-tuning, estimators and embedding.

Pre-trains the ``tiny`` preset with the ExLM objective on the first few hundred MOSES
SMILES for a few dozen steps. It takes seconds on one CPU thread and goes through the
real pre-training code, so the directory it writes is exactly what users get from
``exlm-chem pretrain``.
"""

from __future__ import annotations

from pathlib import Path


def make_tiny_checkpoint(
    out_dir: str | Path,
    corpus: str | Path,
    n_smiles: int = 300,
    steps: int = 40,
    seed: int = 0,
    objective: str = "exlm",
) -> Path:
    """Pre-train the tiny preset on ``n_smiles`` SMILES of ``corpus`` into ``out_dir``.

    Returns
    -------
    Path
        The checkpoint directory (``out_dir / "checkpoint"``): config.json,
        model.safetensors, vocab.txt, metadata.json.
    """
    from exlm_chem.train.pretrain import pretrain
    from exlm_chem.train.pretrain_args import PretrainArgs

    args = PretrainArgs(
        corpus=[str(corpus)],
        out=str(out_dir),
        preset="tiny",
        max_steps=steps,
        max_tokens=1024,
        lr=3e-3,
        warmup_steps=max(1, steps // 5),
        corpus_limit=n_smiles,
        valid_size=max(1, n_smiles // 10),
        valid_every=10**6,
        checkpoint_every=10**6,
        log_every=10**6,
        hygiene=False,
        progress=False,
        device="cpu",
        seed=seed,
        objective=objective,
    )
    pretrain(args)
    checkpoint = Path(out_dir) / "checkpoint"
    assert (checkpoint / "model.safetensors").is_file(), f"no checkpoint written in {out_dir}"
    return checkpoint
