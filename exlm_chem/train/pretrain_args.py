"""Settings of a pre-training run and the learning-rate schedule (no torch import).

``exlm-chem pretrain`` declares its options from :class:`PretrainArgs`, so this module
stays light enough for ``--help``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from exlm_chem.presets import resolve_schedule


def _help(default, text: str):
    """A field with its ``--help`` text, which ``exlm-chem pretrain`` reads from the metadata."""
    return field(default=default, metadata={"help": text})


@dataclass
class PretrainArgs:
    corpus: list[str] | None = None  # SMILES files (.gz ok), prepared into OUT/corpus first ...
    out: str | None = None  # run directory: checkpoint/, log.jsonl, budget.json, corpus/
    prepared: str | None = None  # ... or a folder from `exlm-chem corpus prepare` (no RDKit)
    preset: str = _help("small", "model tiny | small | base, or 'paper': the base model with the "
                        "paper's schedule (120K steps, 10K warm-up, 64K tokens per step over "
                        "all GPUs, which was the paper's per-GPU batch; see exlm_chem.presets)")
    objective: str = _help("exlm", "exlm (states alignment) | mlm (the SMILES-BERT twin)")
    k_states: int | None = _help(None, "override the preset's expanded states per BOS/[MASK]/EOS")
    max_steps: int | None = _help(None, "optimizer steps (default: the preset's)")
    max_tokens: int | None = _help(None, "padded, unexpanded tokens per optimizer step, all "
                                         "ranks together (default: the preset's)")
    lr: float = _help(5e-4, "peak learning rate")
    warmup_steps: int | None = _help(None, "linear warm-up steps (default: the preset's)")
    end_lr: float = 0.0
    # decay only over the last N steps, constant lr before (warmup-stable-decay): a run of
    # unknown length trains at lr and decays once its budget is known (--resume --max-steps)
    decay_steps: int | None = None
    betas: tuple[float, float] = (0.9, 0.98)
    weight_decay: float = _help(0.0, "decoupled (AdamW; fairseq's Adam does the same)")
    clip_norm: float = 1.0
    mask_ratio: float = _help(0.15, "share of tokens masked (paper 0.15; MolEncoder found 0.3)")
    token_weight: float = _help(
        1.0, "weight of the objective's token loss (the states alignment, or MLM's "
             "cross-entropy); 0 with aux_weight > 0: the descriptor loss alone")
    aux_weight: float = _help(
        0.0, "weight of the descriptor-regression loss (targets: the prepared corpus's "
             "descriptors, or those --corpus computes: --aux-targets; 0: off)")
    aux_targets: str = _help(
        "rdkit2d", "the molecule-level targets --corpus computes for the descriptor loss: "
                   "rdkit2d | rdkit2d_fast | morgan (2048 counts); a --prepared corpus holds "
                   "its own")
    # CheMeleon (Burns et al. 2025) clips its standardised Mordred targets at 6; a prepared
    # corpus stores its targets clipped by FeatureScaler already (at feature_spec.CLIP, 5), so
    # only a value below that changes them
    aux_clip: float | None = _help(
        None, "clip the standardised descriptor targets to +-N in the loss (train and "
              "validation); the prepared corpus stores them clipped at 5 already, so only "
              "N < 5 changes them (default: no further clip)")
    aux_share: float = _help(
        1.0, "share of the descriptor columns that count in each training step's "
             "descriptor loss, drawn afresh every step from (seed, step) (CheMeleon: about "
             "0.15); validation always scores all columns (default 1: all)")
    # MolBERT's SMILES-equivalence task and CDDD's randomised inputs, as a contrastive loss:
    # a molecule-level target that no descriptor set spells out
    contrast_weight: float = _help(
        0.0, "weight of the SMILES-equivalence loss: each molecule's masked input and one "
             "randomised SMILES of it, mean-pooled, are matched against the batch's other "
             "molecules (InfoNCE; the randomised views need RDKit; 0: off)")
    contrast_temperature: float = _help(
        0.1, "temperature of the SMILES-equivalence loss's cosine similarities")
    # CDDD's own form of the randomised-input target: translation through one vector
    translate_weight: float = _help(
        0.0, "weight of the translation loss: a GRU decoder writes each molecule's "
             "canonical SMILES from the mean-pooled states of a randomised SMILES of it "
             "(cross-entropy per token; the randomised SMILES need RDKit; 0: off)")
    d_model: int | None = _help(None, "width override: heads d/64, FFN 4d (default: the preset's)")
    dropout: float | None = _help(
        None, "override of every dropout (paper 0.1; CPU runs see < 1 epoch)")
    masking: str = _help("token", "token | fragment (whole BRICS fragments; needs RDKit)")
    # Repeated MLM (paper sec. 3): each token k times, each copy masked w.p. mask_ratio
    repeat_k: int = 1
    max_length: int = _help(
        256, "tokens per molecule incl. BOS/EOS (prepared: fixed at preparation)")
    corpus_limit: int | None = _help(None, "read only the first N lines of each corpus file")
    valid_size: int = _help(2000, "held-out molecules (prepared: fixed at preparation)")
    valid_every: int = 500
    checkpoint_every: int = 500
    log_every: int = 10
    seed: int = 0
    hygiene: bool = True  # drop benchmark valid/test molecules (prepared: done at preparation)
    max_minutes: float | None = _help(None, "stop (with a checkpoint) after this wall time")
    stop_at_step: int | None = _help(None, "pause (with a checkpoint) here; --resume continues")
    max_cpu_minutes: float | None = _help(
        None, "stop (with a checkpoint) after this process CPU time")
    init_from: str | None = _help(
        None, "start from this checkpoint's weights with a fresh optimizer (warm-up again); "
        "its tokens and CPU time carry on, and its data position on the same corpus")
    snapshot_cpu_minutes: float | None = _help(
        None, "keep the weights every N CPU-minutes (snapshots/)")
    snapshot_every: int | None = _help(None, "... or every N optimizer steps (GPU runs)")
    budget_minutes: float | None = _help(None, "time the first steps, then fit max_steps "
                                         "(warm-up plus full decay) into this many minutes; "
                                         "the decision goes to OUT/budget.json")
    budget_from: list[str] | None = None  # partner runs (the twin): all take the fewest steps
    budget_probe_steps: int = _help(10, "timed steps of the pace probe (undone afterwards)")
    # the first batches wait for the DataLoader workers to start and compile kernels for each
    # new batch length: timed, they would plan a run far shorter than its budget
    budget_warmup_steps: int = _help(10, "untimed steps before them (worker start-up, compilation)")
    budget_margin: float = _help(0.1, "share of the remaining time kept for validation/checkpoints")
    budget_wait_minutes: float = _help(10.0, "longest wait for the partners' budget.json")
    num_workers: int = _help(0, "DataLoader processes that mask and collate batches")
    compile: bool = False  # torch.compile the encoder
    device: str = "auto"
    progress: bool = True
    extra: dict = field(default_factory=dict)  # free-form notes saved in metadata


def learning_rate(step: int, args: PretrainArgs) -> float:
    """Linear warm-up to ``lr``, then linear decay to ``end_lr`` at ``max_steps``: over all
    the remaining steps, or with ``decay_steps`` over the last ones only (lr until then)."""
    if step < args.warmup_steps:
        return args.lr * (step + 1) / args.warmup_steps
    decay_start = args.warmup_steps
    if args.decay_steps is not None:
        decay_start = max(decay_start, args.max_steps - args.decay_steps)
    span = max(1, args.max_steps - decay_start)
    frac = min(1.0, max(0, step - decay_start) / span)
    return args.end_lr + (args.lr - args.end_lr) * (1.0 - frac)


def check_args(args: PretrainArgs) -> PretrainArgs:
    """Reject contradictory settings; fill the schedule from the preset."""
    problems = []
    if not args.out:
        problems.append("out (the run directory) is required")
    if (args.corpus is None) == (args.prepared is None):
        problems.append("give exactly one of corpus (SMILES files) or prepared (a folder)")
    if (args.budget_minutes is not None or args.budget_from) and args.max_steps is not None:
        problems.append("give max_steps or a budget (budget_minutes, budget_from), not both")
    if args.repeat_k < 1 or (args.repeat_k > 1 and args.masking != "token"):
        problems.append("repeat_k must be >= 1, and > 1 only with masking 'token'")
    if not 0.0 < args.mask_ratio < 1.0:
        problems.append(f"mask_ratio must be in (0, 1), got {args.mask_ratio}")
    if args.aux_weight < 0:
        problems.append(f"aux_weight must be >= 0, got {args.aux_weight}")
    if not args.token_weight >= 0:
        problems.append(f"token_weight must be >= 0, got {args.token_weight}")
    elif args.token_weight == 0 and not (args.aux_weight > 0 or args.contrast_weight > 0
                                         or args.translate_weight > 0):
        problems.append("token_weight 0 needs aux_weight, contrast_weight or translate_weight "
                        "> 0 (else no loss is left to train)")
    if args.aux_weight > 0 and args.repeat_k > 1:
        problems.append("aux_weight does not combine with repeat_k > 1")
    if not args.contrast_weight >= 0:
        problems.append(f"contrast_weight must be >= 0, got {args.contrast_weight}")
    elif args.contrast_weight > 0 and args.repeat_k > 1:
        problems.append("contrast_weight does not combine with repeat_k > 1")
    if not args.translate_weight >= 0:
        problems.append(f"translate_weight must be >= 0, got {args.translate_weight}")
    elif args.translate_weight > 0 and args.repeat_k > 1:
        problems.append("translate_weight does not combine with repeat_k > 1")
    if not args.contrast_temperature > 0:
        problems.append(f"contrast_temperature must be > 0, got {args.contrast_temperature}")
    # each only shapes the descriptor loss: without it (aux_weight 0) a setting would be
    # recorded in the checkpoint while changing nothing
    if args.aux_clip is not None and not args.aux_clip > 0:
        problems.append(f"aux_clip must be > 0, got {args.aux_clip}")
    elif args.aux_clip is not None and not args.aux_weight > 0:
        problems.append("aux_clip needs aux_weight > 0 (it clips the descriptor loss's targets)")
    if not 0.0 < args.aux_share <= 1.0:
        problems.append(f"aux_share must be in (0, 1], got {args.aux_share}")
    elif args.aux_share < 1.0 and not args.aux_weight > 0:
        problems.append("aux_share < 1 needs aux_weight > 0 (it picks the descriptor loss's "
                        "columns)")
    from exlm_chem.data.corpus_prepare import DESCRIPTOR_KINDS

    if args.aux_targets not in DESCRIPTOR_KINDS:
        problems.append(f"aux_targets must be one of {', '.join(DESCRIPTOR_KINDS)}, got "
                        f"{args.aux_targets!r}")
    elif args.aux_targets != "rdkit2d" and args.prepared is not None:
        problems.append("aux_targets is for --corpus: a prepared corpus holds its own targets")
    if args.snapshot_every is not None and args.snapshot_every < 1:
        problems.append(f"snapshot_every must be >= 1, got {args.snapshot_every}")
    if args.decay_steps is not None and args.decay_steps < 1:
        problems.append(f"decay_steps must be >= 1, got {args.decay_steps}")
    if args.d_model is not None and (args.d_model < 64 or args.d_model % 64):
        problems.append(f"d_model must be a positive multiple of 64 (heads of 64), "
                        f"got {args.d_model}")
    if problems:
        raise ValueError("invalid pre-training arguments: " + "; ".join(problems))
    return resolve_schedule(args)


__all__ = ["PretrainArgs", "check_args", "learning_rate"]
