"""Manual pages: a page whose NAME section reads ``name - what it does`` documents a
command.

Every man page opens with that line (the *whatis* line ``man -k`` searches), whatever
produced the page: asciidoc (Git's manual), mandoc, man2html, Sphinx's or pandoc's man
writers. It is recognised on the page's Markdown, so HTML, reStructuredText and Markdown
man pages are read alike:

- a heading ``NAME`` whose first paragraph is ``name[, name…] - description`` (a hyphen,
  ``\\-`` or a dash);
- and either the manual section in the title (``git-blame(1)``), or, without one, a
  ``SYNOPSIS`` section whose first line invokes the name.

Sections 1, 6 and 8 (user commands, games, administration) are commands. Files (5),
overviews (7), library calls (3) and the rest stay pages: ``gitattributes(5)`` is read,
not run.

The command is the name as the synopsis writes it: ``git-blame`` with the synopsis
``git blame [-c] …`` is the command ``git blame``, so a question typed as the command
finds it, and a command that no page documents gets no match with a did-you-mean rather
than the nearest page. A synopsis that invokes something else (``git-credential-cache``,
used through ``git config credential.helper``) leaves the name as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ..analyze.chunk import split_sections
from ..models import Document

COMMAND_SECTIONS = ("1", "6", "8")

_NAME = r"[\w.+:@-]+"
_WHATIS = re.compile(rf"^({_NAME}(?:\s*,\s*{_NAME})*)\s+(?:\\?-{{1,2}}|—|–)\s*(\S.*)$", re.S)
_TITLE = re.compile(rf"^\s*({_NAME})\s*\((\d)[a-z0-9]*\)", re.I)
_MARKUP = re.compile(r"[`*]|\\(?=[-_*\\.])")
_FENCE = re.compile(r"^\s*(```|~~~)")
_STOP = ("-", "<", "[", "{", "|", "'", '"', "$", "=")


@dataclass(frozen=True, slots=True)
class ManPage:
    command: str  # as the synopsis invokes it: "git blame"
    names: tuple[str, ...]  # the NAME line's names: ("git-blame",)
    description: str  # the whatis line's description
    section: str  # the manual section ("1"), "" when the title gives none


def _plain(text: str) -> str:
    return " ".join(_MARKUP.sub("", text).split())


def _first_line(blocks: tuple[str, ...]) -> str:
    for block in blocks:
        for line in block.splitlines():
            if line.strip() and not _FENCE.match(line):
                return _plain(line)
    return ""


def _invoked(line: str, name: str) -> str:
    """The command as ``line`` invokes ``name`` ("git blame" for git-blame), or ''."""
    words: list[str] = []
    for word in line.split():
        if word.startswith(_STOP) or "/" in word:
            break
        words.append(word)
        if "-".join(words).lower() == name.lower() or " ".join(words).lower() == name.lower():
            return " ".join(words)
    return ""


def man_page(title: str, markdown: str) -> ManPage | None:
    """The man page ``markdown`` is, when it is one of a command; else None."""
    if "NAME" not in markdown.upper():
        return None
    whatis: str | None = None
    synopsis: tuple[str, ...] | None = None
    for section in split_sections(markdown):
        heading = section.path[-1].strip().upper() if section.path else ""
        if heading == "NAME" and whatis is None:
            whatis = _plain(section.blocks[0])
        elif heading == "SYNOPSIS" and synopsis is None:
            synopsis = section.blocks
    m = _WHATIS.match(whatis or "")
    if m is None:
        return None
    names = tuple(n.strip() for n in m.group(1).split(","))
    description = m.group(2).strip()
    t = _TITLE.match(title)
    number = t.group(2) if t and t.group(1).lower() in (n.lower() for n in names) else ""
    if number and number not in COMMAND_SECTIONS:
        return None
    invoked = _invoked(_first_line(synopsis), names[0]) if synopsis else ""
    if not number and not invoked:
        return None  # no manual section and no synopsis that runs it: not sure enough
    return ManPage(invoked or names[0], names, description, number)


def as_command(doc: Document, man: ManPage, *, keep_summary: bool = False) -> Document:
    """``doc`` as the command document of its man page: the command, the whatis
    description as its summary (unless ``keep_summary``: one was given), the page's
    other names as aliases."""
    aliases = tuple(n for n in man.names if n.lower() != man.command.lower())
    metadata = {**doc.metadata, "command": man.command}
    if man.section:
        metadata["manual_section"] = man.section
    return replace(
        doc,
        type="command",
        summary=doc.summary if keep_summary else man.description,
        aliases=tuple(dict.fromkeys((*doc.aliases, *aliases))),
        metadata=metadata,
    )


__all__ = ["COMMAND_SECTIONS", "ManPage", "as_command", "man_page"]
