"""Child process of the kill tests: saves (or embeds) and pauses at a chosen point.

``python kill_child.py serve KIND SOURCE`` loads the model in SOURCE (a fitted estimator
or a pre-trained checkpoint) once, prints ``READY`` and then, for each line ``MODE TARGET``
read from stdin, forks a saver (printing ``CHILD pid``) and prints ``DEAD`` once the test
has killed it. Forking spares every kill the seconds of importing torch and friends.

The saver saves the model to TARGET over and over, each time slightly changed, printing
``SAVING n`` before each save. With a MODE other than ``loop`` it prints ``PAUSE`` at that
point of the first save and sleeps, so that the test's SIGKILL lands exactly there:

* ``in_body``: half the files written into the temporary directory;
* ``before_swap``: the new version complete, not yet published;
* ``after_swap``: published, the old version not yet deleted;
* ``between_renames``: the fallback without an atomic exchange, the old version moved
  aside and the new one not yet in place.

``python kill_child.py embed ARGV...`` runs ``exlm-chem embed ARGV`` and pauses after the
second chunk is written.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path


def say(line: str) -> None:
    """One write(2) per line: server and saver share the pipe, lines must not interleave."""
    os.write(1, f"{line}\n".encode())


def pause() -> None:
    say("PAUSE")
    time.sleep(600)


def arm(mode: str, target: Path) -> None:
    import safetensors.torch

    from exlm_chem.files import safe_write

    if mode == "in_body":
        original = safetensors.torch.save_file

        def save_file(*args, **kwargs):
            original(*args, **kwargs)
            pause()

        safetensors.torch.save_file = save_file
    elif mode in ("before_swap", "after_swap"):
        swap = safe_write._swap_in

        def swap_in(tmp, path):
            if mode == "before_swap":
                pause()
            swap(tmp, path)
            pause()

        safe_write._swap_in = swap_in
    elif mode == "between_renames":
        safe_write._exchange = lambda a, b: False
        replace = os.replace

        def replace_then_pause(src, dst):
            replace(src, dst)
            if Path(src) == target:  # the old version has just been moved aside
                pause()

        safe_write.os.replace = replace_then_pause


def load(kind: str, source: Path):
    """The model and a function saving it (changed a little each time) to a path."""
    import torch

    torch.set_num_threads(1)  # also keeps forking safe: no OpenMP pool to inherit
    if kind == "estimator":
        from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier

        model = ExLMMoleculeClassifier.load(source)
        weights, save = model.model_.head.out.bias, model.save
    else:
        from exlm_chem.model.checkpoint import load_checkpoint, save_checkpoint

        net, config, meta = load_checkpoint(source)
        tokens = (source / "vocab.txt").read_text().splitlines()
        weights = net.lm_head.bias

        def save(path):
            save_checkpoint(path, net, config, tokens, {"steps": meta.get("steps")})

    def change_and_save(path: Path) -> None:
        with torch.no_grad():
            weights.add_(0.01)
        save(path)

    return change_and_save


def saver(save, mode: str, target: Path) -> None:
    if mode != "loop":
        arm(mode, target.resolve())
    for n in range(10**6):
        say(f"SAVING {n}")
        save(target)


def serve(kind: str, source: Path) -> None:
    save = load(kind, source)
    say("READY")
    for line in sys.stdin:
        mode, target = line.split(maxsplit=1)
        pid = os.fork()
        if pid == 0:  # the saver: never returns to this loop
            try:
                saver(save, mode, Path(target.strip()))
            finally:
                os._exit(1)
        say(f"CHILD {pid}")
        os.waitpid(pid, 0)
        say("DEAD")


def embed(argv: list[str]) -> None:
    from exlm_chem.cli import main
    from exlm_chem.cli.outputs import TableSink

    write, chunks = TableSink.write, []

    def write_then_pause(self, frame):
        write(self, frame)
        chunks.append(len(frame))
        if len(chunks) == 2:
            pause()

    TableSink.write = write_then_pause
    main(argv)


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2], Path(sys.argv[3]))
    else:
        embed(sys.argv[2:])
