"""tldr pages: one ``command`` document per page, with its examples.

A tldr page is Markdown of a fixed shape, and only a page whose every line fits it is
read by this loader (other Markdown goes to the Markdown loader; ``ingest_path(...,
loader="tldr")`` forces it)::

    # git commit

    > Commit files to the repository.
    > More information: <https://git-scm.com/docs/git-commit>.

    - Commit staged files to the repository with a message:

    `git commit {{[-m|--message]}} "{{message}}"`

Document: id ``tldr:{platform}/{file name without .md}`` (``tldr:linux/apt``), where the
platform is the folder holding the page (``common``, ``linux``, ``osx``…), so the same
command on two platforms gives two documents. Title and ``metadata["command"]``: the
page's name (``git commit``), which exact command look-ups match. Category: the
platform. Summary: the description lines. Examples: each ``- description:`` with its
code (``{{placeholders}}`` kept as written), each a section (and so a chunk) of its own
under its description (``examples_markdown``). ``metadata``: ``command``, ``platform``
and ``more_info`` (the "More information" link); for an alias page ("This command is an
alias of `docker container commit`.", "... an alias of GNU `ls`."), ``alias_of``: the
command it stands for, so that looking the alias up also finds that command's page.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from ..analyze.chunk import chunk_markdown
from ..errors import IngestError
from ..models import Document, Example, FileError
from .base import LoadContext, Loaded, decode_text, finalize

_MORE = re.compile(r"^More information:\s*<?([^>\s]+)>?\.?\s*$", re.I)
_NOT_PLATFORMS = frozenset({"", "pages", "tldr", "."})
# tldr marks an option's mnemonic letters in a description: "E[x]tract an archive [f]ile".
_MNEMONIC = re.compile(r"\[([A-Za-z]{1,2})\]")
# tldr's alias pages: "This command is an alias of `docker container commit`." (or "Note:
# This command is an alias of ...", "... an alias of GNU `ls`.")
_ALIAS = re.compile(r"^(?:Note:\s*)?This command is an alias of (?:GNU )?`([^`]+)`", re.I)


def _shape(text: str) -> tuple[str, list[str], list[tuple[str, str]]] | None:
    """(name, description lines, [(example description, code)]) or None if not tldr."""
    lines = [line.rstrip() for line in text.split("\n")]
    body = [line for line in lines if line.strip()]
    if len(body) < 2 or not body[0].startswith("# ") or not body[1].startswith("> "):
        return None
    name = body[0][2:].strip()
    desc: list[str] = []
    examples: list[tuple[str, str]] = []
    pending = ""
    i = 1
    while i < len(body) and body[i].startswith(">"):
        desc.append(body[i][1:].strip())
        i += 1
    for line in body[i:]:
        if line.startswith("- "):
            if pending:
                return None
            pending = line[2:].strip()
        elif line.startswith("`") and line.endswith("`") and len(line) >= 2 and pending:
            examples.append((pending.rstrip(":").strip(), line[1:-1]))
            pending = ""
        else:
            return None
    if pending or not name:
        return None
    return name, desc, examples


def examples_markdown(examples: tuple[Example, ...]) -> str:
    """The page's ``## Examples``, each example a ``###`` section headed by its description,
    and so a chunk of its own.

    A tldr example's description is a task in the imperative ("Star a package from a
    specific registry"); a question asking for that task then meets that one example, by
    its words and by its meaning, rather than a section of eight examples whose other
    seven dilute both (the tldr pages set: hybrid nDCG@10 0.70 → 0.82, keyword 0.75 →
    0.81; see docs/benchmarks.md). Command catalogs and knowledge entries keep their
    examples together: their descriptions are often labels ("Overdue urgent tasks"), and
    a section of its own let such a label compete with its command (Orbit set, hybrid:
    two answers fewer).
    """
    parts = ["## Examples"]
    for ex in examples:
        # "E[x]tract" would be the words "e", "x" and "tract": the heading reads "Extract"
        # (the example keeps its description as written).
        heading = _MNEMONIC.sub(r"\1", " ".join(ex.description.split())).rstrip(":").strip()
        parts += [f"### {heading}" if heading else "", f"```\n{ex.code}\n```"]
    return "\n\n".join(p for p in parts if p)


def is_tldr(data: bytes) -> bool:
    """True when the whole page has the tldr shape (see the module docstring)."""
    if not data.lstrip().startswith(b"# "):
        return False
    head = [line for line in data[:4096].split(b"\n", 16)[:16] if line.strip()]
    if len(head) > 1 and not head[1].startswith(b"> "):
        return False  # most Markdown pages: known from their first lines
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return False
    return _shape(text.replace("\r\n", "\n")) is not None


def platform_of(origin: str, base_dir: str) -> str:
    parent = PurePosixPath(origin).parent.name
    if parent in _NOT_PLATFORMS:
        parent = Path(base_dir).name if base_dir else ""
    return parent if parent not in _NOT_PLATFORMS else "common"


class TldrLoader:
    name = "tldr"
    version = "4"
    suffixes: tuple[str, ...] = (".md",)

    def sniff(self, data: bytes) -> bool:
        return is_tldr(data)

    def load(self, data: bytes, ctx: LoadContext) -> tuple[list[Loaded], list[FileError]]:
        path = ctx.origin
        try:
            text = decode_text(data, path)
        except IngestError as exc:
            return [], [FileError(path, exc.reason)]
        shape = _shape(text)
        if shape is None:
            return [], [
                FileError(path, "not a tldr page (# name, > description, - example: `code`)")
            ]
        name, desc_lines, pairs = shape
        more = alias_of = ""
        description: list[str] = []
        for line in desc_lines:
            m = _MORE.match(line)
            if m:
                more = m.group(1)
            else:
                description.append(line)
                alias = _ALIAS.match(line)
                if alias and not alias_of:
                    alias_of = " ".join(alias.group(1).split())
        summary = " ".join(description)
        platform = platform_of(path, ctx.base_dir)
        examples = tuple(Example(code=code, description=d) for d, code in pairs)
        lines = [f"# {name}", "", summary or name]
        if more:
            lines += ["", f"More information: <{more}>"]
        if examples:
            lines += ["", examples_markdown(examples)]
        body = "\n".join(lines) + "\n"
        doc = Document(
            id=f"tldr:{platform}/{PurePosixPath(path).stem}",
            source=ctx.source,
            title=name,
            content=body,
            type="command",
            category=platform,
            summary=summary,
            examples=examples,
            origin=path,
            origin_hash=ctx.origin_hash,
            metadata={
                "command": name,
                "platform": platform,
                "more_info": more,
                **({"alias_of": alias_of} if alias_of else {}),
            },
        )
        return [finalize(doc, chunk_markdown(doc, body, ctx.max_chunk_tokens))], []
