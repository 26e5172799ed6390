"""The shape every subcommand has."""

from __future__ import annotations

import argparse

#: --model of the subcommands that read a pre-trained checkpoint ("default" resolves it)
MODEL_HELP = "checkpoint directory (default: $EXLM_CHEM_MODEL, then models/exlm-small)"


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
