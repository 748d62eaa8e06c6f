"""Manual pages: a page whose NAME section reads ``name - what it does`` documents a
command.

Every man page opens with that line (the *whatis* line ``man -k`` searches), whatever
produced the page: asciidoc (Git's manual), mandoc, man2html, Sphinx's or pandoc's man
writers. It is recognised on the page's Markdown, so HTML, reStructuredText and Markdown
man pages are read alike:

- a heading ``NAME`` whose first paragraph is ``name[, name…] - description`` (a hyphen,
  ``\\-`` or a dash), or the title line of ronn's Markdown, ``git-foo(1) -- description``;
- and either the manual section in the title (``git-blame(1)``), or, without one, a
  ``SYNOPSIS`` section whose first line invokes the name.

Sections 1, 6 and 8 (user commands, games, administration) are commands. Files (5),
overviews (7), library calls (3) and the rest stay pages (``gitattributes(5)`` is read,
not run), with the whatis description as their summary.

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
_RONN = re.compile(rf"^({_NAME})\((\d)[a-z0-9]*\)\s+--\s+(\S.*)$", re.I)
_HEADER = re.compile(rf"(?<![\w.+:@-])({_NAME})\((\d)[a-z0-9]*\)", re.I)
_NAME_HEADING = re.compile(r"\n#{1,6}[ \t]+(?:NAME|Name)[ \t]*$", re.M)
_MARKUP = re.compile(r"[`*]|\\(?=[-_*\\.])")
_FENCE = re.compile(r"^\s*(```|~~~)")
_STOP = ("-", "<", "[", "{", "|", "'", '"', "$", "=")


@dataclass(frozen=True, slots=True)
class ManPage:
    command: str  # as the synopsis invokes it ("git blame"); "" for a file, an overview
    names: tuple[str, ...]  # the NAME line's names: ("git-blame",)
    description: str  # the whatis line's description
    section: str  # the manual section ("1"); "" when neither title nor page header says


def _plain(text: str) -> str:
    """Markdown without code and emphasis marks or escapes; unlike ``markdown.plain``,
    underscores stay: they are part of names (``pam_access``)."""
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


def _section_number(title: str, markdown: str, names: tuple[str, ...]) -> str:
    """The manual section of the page named ``names``: from its title (``git-blame(1)
    Manual Page``), else from the page header above NAME (mandoc's ``GREP(1)``)."""
    lower = {n.lower() for n in names}
    t = _TITLE.match(title)
    if t and t.group(1).lower() in lower:
        return t.group(2)
    head = markdown[: markdown.upper().find("NAME")]
    for found in _HEADER.finditer(head):
        if found.group(1).lower() in lower:
            return found.group(2)
    return ""


def man_page(title: str, markdown: str) -> ManPage | None:
    """The man page ``markdown`` is (``command`` empty when it documents no command:
    a file format, an overview); None when it is no man page, or not surely one."""
    ronn = _RONN.match(title.strip())
    if ronn is None and not _NAME_HEADING.search("\n" + markdown):
        return None
    whatis: str | None = None
    synopsis: tuple[str, ...] | None = None
    for section in split_sections(markdown):
        path = [h.strip().upper() for h in section.path]
        if path and path[-1] == "NAME" and whatis is None:
            whatis = _plain(section.blocks[0])
        elif "SYNOPSIS" in path and synopsis is None:
            synopsis = section.blocks  # its own text, or its first subsection's (tar)
    m = _WHATIS.match(whatis or "")
    if m is not None:
        names = tuple(n.strip() for n in m.group(1).split(","))
        description = m.group(2).strip()
        number = _section_number(title, markdown, names)
    elif ronn is not None:  # ronn's Markdown: "# git-foo(1) -- what it does"
        names, description, number = (ronn.group(1),), ronn.group(3).strip(), ronn.group(2)
    else:
        return None
    if number and number not in COMMAND_SECTIONS:
        return ManPage("", names, description, number)
    invoked = _invoked(_first_line(synopsis), names[0]) if synopsis else ""
    if not number and not invoked:
        return None  # no manual section and no synopsis that runs it: not sure enough
    return ManPage(invoked or names[0], names, description, number)


def as_man_page(doc: Document, man: ManPage, *, keep_summary: bool = False) -> Document:
    """``doc`` as its man page says: the whatis description as its summary (unless
    ``keep_summary``: one was given), the manual section in its metadata, a title when
    the page had none but the NAME heading (mandoc's pages); and for a command, the
    command document, the page's other names as aliases."""
    title = doc.title
    if title.strip().upper() == "NAME":
        title = f"{man.names[0]}({man.section})" if man.section else man.names[0]
    metadata = {**doc.metadata, "manual_section": man.section}  # "" when none is given
    doc = replace(
        doc,
        title=title,
        summary=doc.summary if keep_summary else man.description,
        metadata=metadata,
    )
    if not man.command:
        return doc
    aliases = tuple(n for n in man.names if n.lower() != man.command.lower())
    return replace(
        doc,
        type="command",
        aliases=tuple(dict.fromkeys((*doc.aliases, *aliases))),
        metadata={**metadata, "command": man.command},
    )


__all__ = ["COMMAND_SECTIONS", "ManPage", "as_man_page", "man_page"]
