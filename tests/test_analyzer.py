from __future__ import annotations

import pytest

from groundkb.analyze.text import (
    Analyzer,
    Synonyms,
    analyzed_fields,
    load_synonyms,
    plural_forms,
    singular_forms,
    stem,
)
from groundkb.errors import ConfigError


def test_conservative_stemming_strips_plurals_only() -> None:
    assert singular_forms("users") == ["user"]
    assert singular_forms("policies") == ["policy"]
    assert singular_forms("boxes") == ["box"]
    assert singular_forms("status") == []
    assert singular_forms("class") == []
    assert singular_forms("cats") == ["cat"]
    assert singular_forms("bus") == []  # under 4 letters
    assert plural_forms("policy") == ["policies"]


def test_stem_is_conservative_and_stable() -> None:
    assert [stem(w) for w in ("users", "policies", "boxes", "status", "news", "cats")] == [
        "user",
        "policy",
        "box",
        "status",
        "news",
        "cat",
    ]
    assert all(stem(stem(w)) == stem(w) for w in ("users", "policies", "classes", "glasses"))
    # Prose is stemmed in the index; aliases and keywords are names, kept as written.
    title, aliases, keywords, header, body = analyzed_fields(
        "Quick Links", ["Bookmarks"], ["links"], "Widgets > Quick Links", "Add links."
    )
    assert (title, aliases, keywords, header, body) == (
        "quick link",
        "bookmarks",
        "links",
        "widget quick link",
        "add link",
    )


def test_known_terms_are_looked_up_as_typed_first() -> None:
    a = Analyzer()
    parsed = a.parse("bookmarks users", known_terms=frozenset({"bookmarks"}))
    forms = {c.original: [(x.tokens, x.kind) for x in c.alternatives] for c in parsed.clauses}
    assert forms["bookmarks"] == [(("bookmarks",), "exact"), (("bookmark",), "plural")]
    assert forms["users"] == [(("user",), "exact")]


def test_synonym_groups_expand_and_rewrites_replace() -> None:
    a = Analyzer(Synonyms.parse("get, list, show\nshortcuts => quick links"))
    parsed = a.parse("show shortcuts")
    show, short = parsed.clauses
    assert [x.tokens for x in show.alternatives] == [("show",), ("get",), ("list",)]
    assert [x.tokens for x in short.alternatives] == [("quick", "link")]
    assert parsed.phrase == ("show", "quick", "link")


def test_words_of_one_synonym_group_make_one_clause() -> None:
    """ "make a new key": make and new both stand for create; counted twice, they would
    favour any "Create a new …" title over the key the question is about."""
    parsed = Analyzer().parse("make a new key")
    assert [c.original for c in parsed.clauses] == ["make", "key"]
    assert [c.original for c in Analyzer().parse("key key").clauses] == ["key"]


def test_stop_words_and_question_words_are_dropped() -> None:
    parsed = Analyzer().parse("How do I explain the thing?")
    assert parsed.clauses == ()
    assert Analyzer().parse("What is a workspace").definitional


def test_bad_synonym_rules_name_the_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "syn.txt"
    f.write_text("ok, fine\nlonely\n")
    with pytest.raises(ConfigError, match=r"syn.txt:2"):
        load_synonyms(f)
