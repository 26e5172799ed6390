"""``exlm-chem`` command line: one small class per subcommand.

Building the parser must stay cheap (``exlm-chem --help`` answers at once): subcommand
modules import only argparse at the top and do their heavy imports inside ``run``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from exlm_chem import __version__
from exlm_chem.cli.admet import AdmetBuildCommand, AdmetPredictCommand
from exlm_chem.cli.analysis import EntropyCommand, ExplainCommand
from exlm_chem.cli.base import Subcommand
from exlm_chem.cli.benchmark import BenchmarkCommand
from exlm_chem.cli.corpus import CorpusDescriptorsCommand, CorpusPrepareCommand
from exlm_chem.cli.data import DataSummaryCommand
from exlm_chem.cli.embed import EmbedCommand
from exlm_chem.cli.fit import FitCommand
from exlm_chem.cli.predict import PredictCommand
from exlm_chem.cli.pretrain import PretrainCommand
from exlm_chem.cli.screen import ScreenCommand
from exlm_chem.cli.splits import PrepareSplitsCommand
from exlm_chem.cli.text import TextGlueCommand, TextPretrainCommand

# One line per subcommand (each module imports only argparse at the top, so this is cheap).
COMMANDS: list[type[Subcommand]] = [
    DataSummaryCommand, PretrainCommand, EmbedCommand, FitCommand, PredictCommand,
    ExplainCommand, EntropyCommand, TextPretrainCommand, TextGlueCommand, BenchmarkCommand,
    CorpusPrepareCommand, CorpusDescriptorsCommand, ScreenCommand,
    PrepareSplitsCommand, AdmetPredictCommand, AdmetBuildCommand,
]
#: ``exlm-chem admet IN ...`` is ``exlm-chem admet predict IN ...``
SHORTHANDS = {"admet": "predict"}


class _LazyParser(argparse.ArgumentParser):
    """A subcommand's parser that declares its options only when that subcommand is used.

    ``exlm-chem --help`` and a mistyped subcommand then never run any ``add_arguments``,
    so they stay instant even if a subcommand needs a heavy import to list its options.
    """

    command: type[Subcommand] | None = None

    def _declare(self) -> None:
        command, self.command = self.command, None
        if command is not None:
            command.add_arguments(self)

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        self._declare()
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        self._declare()
        return super().format_help()

    def format_usage(self) -> str:
        self._declare()
        return super().format_usage()


def build_parser(declare_all: bool = False) -> argparse.ArgumentParser:
    """The ``exlm-chem`` parser; subcommand options are declared when first needed.

    ``declare_all=True`` declares every subcommand's options at once (tests use it to
    check that no declaration needs a heavy import).
    """
    parser = argparse.ArgumentParser(
        prog="exlm-chem", description="Molecular property prediction from SMILES with ExLM."
    )
    parser.add_argument("--version", action="version", version=f"exlm_chem {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.add_argument("--debug", action="store_true", help="show the traceback of any error")
    groups: dict[str, argparse._SubParsersAction] = {}
    top = parser.add_subparsers(dest="command", required=True, parser_class=_LazyParser)
    for command in COMMANDS:
        if command.group:  # e.g. "data summary": a nested sub-command
            if command.group not in groups:
                group_parser = top.add_parser(command.group, help=f"{command.group} commands")
                groups[command.group] = group_parser.add_subparsers(
                    dest="subcommand", required=True, parser_class=_LazyParser
                )
            sub = groups[command.group].add_parser(command.name, help=command.help)
        else:
            sub = top.add_parser(command.name, help=command.help)
        sub.command = command
        sub.set_defaults(handler=command)
        if declare_all:
            sub._declare()
    return parser


def expand_shorthand(argv: Sequence[str]) -> list[str]:
    """``argv`` with a group's default subcommand put in where it is left out
    (:data:`SHORTHANDS`: ``admet IN`` -> ``admet predict IN``)."""
    argv = list(argv)
    words = [i for i, a in enumerate(argv) if not a.startswith("-")]
    if not words or argv[words[0]] not in SHORTHANDS:
        return argv
    group = argv[words[0]]
    known = {c.name for c in COMMANDS if c.group == group}
    rest = argv[words[0] + 1:]
    if rest and (rest[0] in known or rest[0] in ("-h", "--help")):
        return argv
    return [*argv[:words[0] + 1], SHORTHANDS[group], *rest]


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(expand_shorthand(argv))
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
    )
    return int(args.handler.run(args) or 0)


def console_main() -> int:
    """The installed ``exlm-chem`` command: user errors as one line, exit code 2
    (tracebacks with ``--debug``); see :mod:`exlm_chem.cli.errors`."""
    from exlm_chem.cli.errors import run_console

    return run_console(main)


if __name__ == "__main__":
    sys.exit(console_main())
