"""MkDocs hook: Sphinx cross-reference roles in docstrings read as plain code.

The package's NumPy docstrings name other objects the Sphinx way (``:func:`embed```,
``:mod:`~exlm_chem.screening.run```). mkdocstrings renders the role's text as it is, so a
page would show ``:func:`` before the name; this hook drops the role and, as Sphinx does
for a leading ``~``, keeps only the last part of the dotted name.
"""

from __future__ import annotations

import re

_ROLE = re.compile(r":(?:py:)?(?:meth|func|class|mod|attr|data|obj|exc|const):"
                   r"<code>(~?)([^<]*)</code>")


def _code(match: re.Match[str]) -> str:
    tilde, name = match.groups()
    return f"<code>{name.rsplit('.', 1)[-1] if tilde else name}</code>"


def strip_roles(html: str) -> str:
    """``:func:<code>~a.b.c</code>`` -> ``<code>c</code>``; without ``~`` the name stays."""
    return _ROLE.sub(_code, html)


def on_page_content(html: str, page, config, files) -> str:  # MkDocs calls it so
    return strip_roles(html)
