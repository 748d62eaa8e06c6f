from __future__ import annotations

import pytest

from groundkb.analyze.text import Analyzer, Synonyms, load_synonyms, plural_forms, singular_forms
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


def test_known_terms_are_never_stemmed() -> None:
    a = Analyzer()
    vocab = {"news": 3, "new": 9, "users": 2, "user": 5}
    parsed = a.parse("news users", vocab, known_terms=frozenset({"news"}))
    forms = {c.original: [x.tokens for x in c.alternatives] for c in parsed.clauses}
    assert forms["news"] == [("news",)]
    assert ("user",) in forms["users"]


def test_synonym_groups_expand_and_rewrites_replace() -> None:
    a = Analyzer(Synonyms.parse("get, list, show\nshortcuts => quick links"))
    parsed = a.parse("show shortcuts", vocabulary={})
    show, short = parsed.clauses
    assert [x.tokens for x in show.alternatives] == [("show",), ("get",), ("list",)]
    assert [x.tokens for x in short.alternatives] == [("quick", "links")]
    assert parsed.phrase == ("show", "quick", "links")


def test_stop_words_and_question_words_are_dropped() -> None:
    parsed = Analyzer().parse("How do I explain the thing?")
    assert parsed.clauses == ()
    assert Analyzer().parse("What is a workspace").definitional


def test_bad_synonym_rules_name_the_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "syn.txt"
    f.write_text("ok, fine\nlonely\n")
    with pytest.raises(ConfigError, match=r"syn.txt:2"):
        load_synonyms(f)
