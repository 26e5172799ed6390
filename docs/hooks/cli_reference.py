"""MkDocs hook: the command-line reference, generated from ``exlm_chem.cli``'s parser.

``docs/reference/cli.md`` holds a ``<!-- cli-reference -->`` marker; at build time it is
replaced by one section per subcommand (usage, then every argument with its default and
help), read from :func:`exlm_chem.cli.build_parser`. The page therefore cannot drift from
the installed command: a new subcommand or option appears on the next build.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator

MARKER = "<!-- cli-reference -->"
PAGE = "reference/cli.md"
WIDTH = "88"  # usage lines wrap at this width on every machine, whatever its terminal


def subcommands(
    parser: argparse.ArgumentParser, words: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], str, argparse.ArgumentParser]]:
    """Every leaf subcommand under ``parser``: (its words, its help, its parser), in the
    order ``exlm-chem --help`` lists them; groups such as ``data`` are walked into."""
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
        for name, sub in action.choices.items():
            nested = any(isinstance(a, argparse._SubParsersAction) for a in sub._actions)
            if nested:
                yield from subcommands(sub, (*words, name))
            else:
                yield (*words, name), helps.get(name, ""), sub


def _cell(text: str) -> str:
    """Table-safe text: pipes escaped, newlines folded; brackets escaped, so that help
    such as "[CLS] [PAD]" is not read as a Markdown reference link, nor "emb_*" as emphasis
    or "<dir>" as HTML."""
    text = " ".join(str(text).split())
    for char in "|[]*":
        text = text.replace(char, "\\" + char)
    return text.replace("<", "&lt;")


def _default(action: argparse.Action) -> str:
    if action.default in (None, argparse.SUPPRESS) or action.required:
        return ""
    if isinstance(action, argparse._StoreTrueAction | argparse._StoreFalseAction):
        return ""  # a flag: its presence is the value
    if isinstance(action.default, list | tuple):
        return "`" + " ".join(map(str, action.default)) + "`"
    return f"`{action.default}`" if action.default != "" else '`""`'


def _argument(action: argparse.Action) -> str:
    if action.option_strings:
        names = ", ".join(f"`{s}`" for s in action.option_strings)
        if action.nargs != 0:
            metavar = action.metavar or action.dest.upper()
            if isinstance(metavar, tuple):
                metavar = " ".join(metavar)
            names += f" `{metavar}`" if action.choices is None else (
                " `{" + ",".join(map(str, action.choices)) + "}`")
        return names
    return f"`{action.metavar or action.dest}` (positional)"


def render_command(words: tuple[str, ...], help_text: str,
                   parser: argparse.ArgumentParser) -> str:
    """One subcommand's section: heading, help, usage and the argument table."""
    name = " ".join(("exlm-chem", *words))
    # "usage: " goes, and with it the indent that aligned the wrapped lines under it
    usage = "\n".join(line.removeprefix(" " * len("usage: ")) for line in
                      parser.format_usage().removeprefix("usage: ").rstrip().splitlines())
    lines = [f"## `{name}`", "", _cell(help_text) or "", "", "```text", usage, "```", ""]
    # subcommand choices get sections of their own; --help is on every command
    rows = [a for a in parser._actions
            if not isinstance(a, argparse._HelpAction | argparse._SubParsersAction)]
    if rows:
        lines += ["| argument | default | what it does |", "|---|---|---|"]
        for action in rows:
            required = " (required)" if action.required and action.option_strings else ""
            help_cell = "" if action.help == argparse.SUPPRESS else _cell(action.help or "")
            lines.append(f"| {_argument(action)}{required} | {_default(action)} "
                         f"| {help_cell} |")
        lines.append("")
    return "\n".join(lines)


def render() -> str:
    """The whole reference: the global options, then every subcommand."""
    from exlm_chem.cli import build_parser

    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH  # argparse reads the width when it formats
    try:
        parser = build_parser(declare_all=True)
        sections = [render_command((), parser.description or "", parser).replace(
            "## `exlm-chem`", "## `exlm-chem` (global options)", 1)]
        sections += [render_command(words, help_text, sub)
                     for words, help_text, sub in subcommands(parser)]
    finally:
        if saved is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = saved
    return "\n".join(sections)


def on_page_markdown(markdown: str, page, config, files) -> str:  # MkDocs calls it so
    """Replace the marker on the CLI page with the generated reference."""
    if page.file.src_uri != PAGE:
        return markdown
    if MARKER not in markdown:
        raise ValueError(f"docs/{PAGE} lost its {MARKER} marker")
    return markdown.replace(MARKER, render())
