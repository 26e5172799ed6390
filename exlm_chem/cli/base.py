"""The shape every subcommand has."""

from __future__ import annotations

import argparse

from exlm_chem.threads import add_threads_option

#: --model of the subcommands that read a pre-trained checkpoint ("default" resolves it)
MODEL_HELP = "checkpoint directory (default: $EXLM_CHEM_MODEL, then models/exlm-small)"


def add_run_options(parser: argparse.ArgumentParser, device: str | None = "auto") -> None:
    """``--device``, ``--threads`` and ``--no-progress`` of the commands that run a model."""
    parser.add_argument("--device", default=device, help="auto | cpu | cuda[:i]")
    add_threads_option(parser)
    parser.add_argument("--no-progress", dest="progress", action="store_false")


class Subcommand:
    group: str | None = None  # parent word, e.g. "data" for "exlm-chem data summary"
    name: str = ""
    help: str = ""

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """Declare the subcommand's options."""

    @classmethod
    def run(cls, args: argparse.Namespace) -> int:
        raise NotImplementedError
