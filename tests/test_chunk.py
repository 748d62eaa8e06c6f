from __future__ import annotations

from groundkb.analyze.chunk import chunk_markdown, estimate_tokens
from groundkb.models import Document


def _doc(title: str = "Widgets") -> Document:
    return Document(id="w", source="s", title=title, content="")


def test_header_path_keeps_the_heading_hierarchy() -> None:
    md = "# Widgets\n\nIntro.\n\n## Quick Links\n\nLinks.\n\n### Editing\n\nEdit them.\n"
    chunks = chunk_markdown(_doc(), md)
    assert [c.header_path for c in chunks] == [
        "Widgets",
        "Widgets > Quick Links",
        "Widgets > Quick Links > Editing",
    ]
    assert [c.id for c in chunks] == ["w#0", "w#1", "w#2"]


def test_code_blocks_are_never_split_even_when_large() -> None:
    code = "```python\n" + "\n\n".join(f"x_{i} = {i}  # comment" for i in range(400)) + "\n```"
    md = f"# T\n\nBefore.\n\n{code}\n\nAfter.\n"
    chunks = chunk_markdown(_doc("T"), md, max_tokens=100)
    holding = [c for c in chunks if "x_0 =" in c.text]
    assert len(holding) == 1 and "x_399 = 399" in holding[0].text
    assert holding[0].text.count("```") == 2


def test_headings_inside_code_blocks_are_not_headings() -> None:
    md = "# Real\n\n```sh\n# not a heading\necho hi\n```\n"
    chunks = chunk_markdown(_doc("Real"), md)
    assert len(chunks) == 1 and chunks[0].header_path == "Real"


def test_long_prose_is_split_under_the_token_cap() -> None:
    para = " ".join(f"Sentence number {i} talks about widgets." for i in range(300))
    chunks = chunk_markdown(_doc(), f"# Widgets\n\n{para}\n", max_tokens=120)
    assert len(chunks) > 5
    assert all(estimate_tokens(c.text) <= 120 for c in chunks)


def test_chunk_ids_and_hashes_are_stable() -> None:
    md = "# A\n\none\n\n## B\n\ntwo\n"
    a = chunk_markdown(_doc("A"), md)
    b = chunk_markdown(_doc("A"), md)
    assert [(c.id, c.chunk_hash) for c in a] == [(c.id, c.chunk_hash) for c in b]
    c = chunk_markdown(_doc("A renamed"), md)
    assert all(x.chunk_hash != y.chunk_hash for x, y in zip(a, c, strict=True))


def test_headings_lose_code_and_emphasis_marks_but_keep_underscores_inside_words() -> None:
    md = "# `__init__` and *max_retries* in _Setup_\n\nText.\n"
    assert chunk_markdown(_doc(), md)[0].header_path == "__init__ and max_retries in Setup"
