"""``exlm-chem`` command line: one small class per subcommand."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from exlm_chem import __version__
from exlm_chem.cli.analysis import EntropyCommand, ExplainCommand
from exlm_chem.cli.base import Subcommand
from exlm_chem.cli.benchmark import BenchmarkCommand
from exlm_chem.cli.data import DataSummaryCommand
from exlm_chem.cli.embed import EmbedCommand
from exlm_chem.cli.fit import FitCommand
from exlm_chem.cli.predict import PredictCommand
from exlm_chem.cli.pretrain import PretrainCommand
from exlm_chem.cli.splits import PrepareSplitsCommand
from exlm_chem.cli.text import TextGlueCommand, TextPretrainCommand

COMMANDS: list[type[Subcommand]] = [
    DataSummaryCommand, PretrainCommand, EmbedCommand, FitCommand, PredictCommand,
    ExplainCommand, EntropyCommand, TextPretrainCommand, TextGlueCommand, BenchmarkCommand,
    PrepareSplitsCommand,
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="exlm-chem", description=__doc__)
    parser.add_argument("--version", action="version", version=f"exlm_chem {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    groups: dict[str, argparse._SubParsersAction] = {}
    top = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        if command.group:  # e.g. "data summary": a nested sub-command
            if command.group not in groups:
                group_parser = top.add_parser(command.group, help=f"{command.group} commands")
                groups[command.group] = group_parser.add_subparsers(
                    dest="subcommand", required=True
                )
            sub = groups[command.group].add_parser(command.name, help=command.help)
        else:
            sub = top.add_parser(command.name, help=command.help)
        command.add_arguments(sub)
        sub.set_defaults(handler=command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
    )
    return int(args.handler.run(args) or 0)


def console_main() -> int:
    """The installed ``exlm-chem`` command: user errors as one line, exit code 2."""
    try:
        return main()
    except (ValueError, FileNotFoundError, TypeError) as error:
        print(f"exlm-chem: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(console_main())
