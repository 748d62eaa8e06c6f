from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from groundkb.analyze.lexicon import inflections
from groundkb.analyze.text import (
    Analyzer,
    Synonyms,
    analyzed_fields,
    load_synonyms,
    plural_forms,
    request_text,
    singular_forms,
    spelling_variants,
    stem,
    tokenize,
    without_context,
    without_preamble,
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


def test_a_name_with_a_stop_word_in_it_is_asked_for_whole() -> None:
    """``url_for`` is not "url": a name written with underscores that holds a stop word
    is one clause, the phrase of its words; any other name's words are clauses of their
    own, as words are."""

    def clauses(query: str) -> list[tuple[str, list[tuple[str, ...]]]]:
        parsed = Analyzer().parse(query)
        return [(c.original, [a.tokens for a in c.alternatives]) for c in parsed.clauses]

    assert clauses("what does url_for do") == [("url_for", [("url", "for")])]
    assert clauses("is_active flags") == [("is_active", [("is", "active")]), ("flags", [("flag",)])]
    assert clauses("set cancel_at_period_end") == [
        ("set", [("set",)]),
        ("cancel_at_period_end", [("cancel", "at", "period", "end")]),
    ]
    assert clauses("SECRET_KEY") == [("secret", [("secret",)]), ("key", [("key",)])]
    assert clauses("_for_") == []  # no name: a stop word alone
    assert clauses("is_a") == []  # stop words only: no more a question than "is a"
    assert clauses("url for") == [("url", [("url",)])]  # written apart: words
    assert clauses("url\ufe4dfor") == [("url_for", [("url", "for")])]  # NFKC: a low line
    # a command-line flag of several words is a name too, kept as written
    assert clauses("what does --no-verify do") == [("--no-verify", [("no", "verify")])]
    assert clauses("push -no-verify") == [
        ("push", [("push",)]),
        ("-no-verify", [("no", "verify")]),
    ]
    assert clauses("--dry-run") == [("dry", [("dry",)]), ("run", [("run",)])]  # no stop word
    assert clauses("url_for or --NO-FF") == [
        ("url_for", [("url", "for")]),
        ("--no-ff", [("no", "ff")]),
    ]
    # hyphens between words are no flag: prose and synonym phrases stay as they were
    assert clauses("an up-to-date copy") == [
        ("up", [("up",)]),
        ("date", [("date",)]),
        ("copy", [("copy",)]),
    ]
    assert clauses("x--no-verify") == [("x", [("x",)]), ("verify", [("verify",)])]


def test_bad_synonym_rules_name_the_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "syn.txt"
    f.write_text("ok, fine\nlonely\n")
    with pytest.raises(ConfigError, match=r"syn.txt:2"):
        load_synonyms(f)


def test_a_verb_also_matches_its_other_regular_forms() -> None:
    assert inflections("detecting") == ("detect", "detected", "detects")
    assert inflections("regulates") == ("regulate", "regulated", "regulating")
    # irregular forms are as often other words: "left hand", "ran" is not "run"
    assert inflections("left") == ()
    assert inflections("ran") == ()
    assert inflections("kubernetes") == ()
    a = Analyzer(inflections=inflections)
    cells, detecting = a.parse("cells detecting").clauses
    assert [(x.tokens, x.kind) for x in detecting.alternatives] == [
        (("detecting",), "exact"),
        (("detect",), "inflection"),
        (("detected",), "inflection"),
    ]  # "detects" is stemmed to "detect" like the index does
    assert [x.tokens for x in cells.alternatives] == [("cell",)]
    # the word as typed stays first, so the phrase and title matches are unchanged
    assert a.parse("cells detecting").phrase == ("cell", "detecting")
    # a request that opens with a gerund asks for the verb, the gerund counting where
    # the verb is absent, and its request is put in the base form (the API ranking
    # reads the action there)
    parsed = a.parse("detecting cells")
    assert [(x.tokens, x.kind) for x in parsed.clauses[0].alternatives] == [
        (("detect",), "exact"),
        (("detecting",), "inflection"),
        (("detected",), "inflection"),
    ]
    assert parsed.clauses[0].original == "detecting"
    assert parsed.request == ("detect", "cells")
    listing = a.parse("listing users").clauses[0].alternatives
    assert [x.kind for x in listing] == ["exact"] + ["synonym"] * 6 + ["inflection"] * 2
    assert [x.tokens for x in listing[::7]] == [("list",), ("listing",)]
    # asked as written where the engine finds the docs use the gerund as a word
    assert a.parse("detecting cells", gerunds=False).clauses == a.parse("detecting").clauses[:1] + (
        a.parse("cells").clauses
    )
    # not a gerund that is a name of the index, nor one word alone
    named = a.parse("logging handlers", frozenset({"logging"}))
    assert [x.kind for x in named.clauses[0].alternatives] == ["exact", "inflection", "inflection"]
    assert named.request == ()
    assert a.parse("detecting").request == ()
    # off without a lexicon (the default Analyzer), and for a word with synonyms
    assert len(Analyzer().parse("detecting").clauses[0].alternatives) == 1
    assert [x.kind for x in a.parse("list").clauses[0].alternatives] == ["exact"] + ["synonym"] * 6
    # a word and another form of it are one thing asked for
    assert [c.original for c in a.parse("detect detected objects").clauses] == [
        "detect",
        "objects",
    ]


def test_without_the_lexicon_nothing_is_a_verb(monkeypatch: pytest.MonkeyPatch) -> None:
    import groundkb.analyze.lexicon as lexicon

    forget = lexicon.forget
    forget()
    monkeypatch.setattr(lexicon.importlib.util, "find_spec", lambda name: None)
    try:
        assert lexicon.english_verbs() == frozenset()
        assert inflections("detecting") == ()
        parsed = Analyzer(inflections=inflections).parse("detecting")
        assert len(parsed.clauses[0].alternatives) == 1
    finally:
        forget()


@pytest.fixture
def kept_lexicon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The verb lexicon built in an empty cache folder (``tmp_path / "cache"``): the file
    it was kept in. Read afresh again after the test."""
    from groundkb.analyze import lexicon

    monkeypatch.setenv("GROUNDKB_CACHE", str(tmp_path / "cache"))
    lexicon.forget()
    try:
        assert inflections("detecting") == ("detect", "detected", "detects")
        (kept,) = (tmp_path / "cache").glob("verb-forms-*.marshal")
        yield kept
    finally:
        lexicon.forget()


def test_the_verb_lexicon_is_kept_in_the_cache_folder(
    kept_lexicon: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gzip
    import marshal

    from groundkb.analyze import lexicon

    # a fresh read takes the cache and never opens the table
    lexicon.forget()

    def unreadable(data: bytes) -> bytes:
        raise OSError("the table was read")

    with monkeypatch.context() as m:
        m.setattr(gzip, "decompress", unreadable)
        assert inflections("regulates") == ("regulate", "regulated", "regulating")
        assert "close" in lexicon.english_verbs()
    # a cache of another table (or another format) is built again; garbage too
    for stale in (b"not marshal", marshal.dumps((["other"], [], {}, {}))):
        kept_lexicon.write_bytes(stale)
        lexicon.forget()
        assert inflections("detecting") == ("detect", "detected", "detects")
    # a cache folder that cannot be made costs only the reading
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("GROUNDKB_CACHE", str(tmp_path / "file" / "cache"))
    lexicon.forget()
    assert inflections("detecting") == ("detect", "detected", "detects")


def _assert_requests(a: Analyzer, cases: dict[str, tuple[list[str], tuple[str, ...]]]) -> None:
    """Each question's clauses, and the request the API ranking and the verdict read: the
    words that frame it or ask for a kind of answer are in neither, and no question for
    a definition."""
    for question, (clauses, request) in cases.items():
        parsed = a.parse(question)
        assert [c.original for c in parsed.clauses] == clauses, question
        assert parsed.asked == request, question
        assert not parsed.definitional, question
        assert " ".join(parsed.tokens) == " ".join(tokenize(question)), question  # as asked


def _assert_words_stay(a: Analyzer, cases: list[tuple[str, str]]) -> None:
    """Words that say what is asked about stay a clause, and the question its own request."""
    for question, clause in cases:
        parsed = a.parse(question)
        assert clause in [c.original for c in parsed.clauses], question
        assert parsed.asked == parsed.tokens, question


def test_words_that_ask_for_an_endpoint_are_no_clause() -> None:
    a = Analyzer()
    asked = {
        "which endpoint refunds a payment": (["refunds", "payment"], ("refund", "a", "payment")),
        "What endpoints can I use to create a location?": (
            ["create", "location"],
            ("create", "a", "location"),
        ),
        "is there an API call to cancel a subscription": (
            ["cancel", "subscription"],
            ("cancel", "a", "subscription"),
        ),
        "which API lets me list storage classes": (
            ["list", "storage", "classes"],
            ("list", "storage", "classes"),
        ),
        "what command do I run to list tasks": (["list", "tasks"], ("list", "tasks")),
        "endpoint to create a customer": (["create", "customer"], ("create", "a", "customer")),
        "the API that refunds a payment": (["refunds", "payment"], ("refund", "a", "payment")),
        "endpoints for refunds": (["refunds"], ("refunds",)),  # a noun after "for"
        "which page explains automation limits": (
            ["automation", "limits"],
            ("automation", "limits"),
        ),
        "is there a guide to archiving a project": (
            ["archiving", "project"],
            ("archiving", "a", "project"),
        ),
        "docs on webhooks": (["webhooks"], ("webhooks",)),
        "what's the endpoint to create a customer": (
            ["create", "customer"],
            ("create", "a", "customer"),
        ),
        "what is the command to list tasks": (["list", "tasks"], ("list", "tasks")),
        "where is the doc on archiving": (["archiving"], ("archiving",)),
        "which CLI command archives a project": (
            ["archives", "project"],
            ("archive", "a", "project"),
        ),
    }
    _assert_requests(a, asked)
    # endpoints as what is asked about, or as the whole question: words like any other
    _assert_words_stay(
        a,
        [
            ("list webhook endpoints", "endpoints"),
            ("which endpoint", "endpoint"),
            ("what is the API rate limit", "api"),
            ("api keys for a project", "api"),
            ("is there a page builder", "page"),  # pages as what is asked about
            ("which pages are public", "pages"),
            ("is there a guide", "guide"),
        ],
    )
    # "what is the command to …" asks for a command, not for a definition
    assert not a.parse("what is the command to list tasks").definitional
    assert a.parse("what is a webhook endpoint").definitional
    assert request_text("which endpoint refunds a payment") == "refunds a payment"
    assert request_text("which endpoint") == "which endpoint"


def test_words_that_only_frame_a_request_are_no_clause() -> None:
    a = Analyzer()
    framed = {
        "how do I create a branch": (["create", "branch"], ("create", "a", "branch")),
        "is it possible to refund a payment": (["refund", "payment"], ("refund", "a", "payment")),
        "What’s the best way to undo a commit?": (["undo", "commit"], ("undo", "a", "commit")),
        "is there an easy way to pause notifications": (
            ["pause", "notifications"],
            ("pause", "notifications"),
        ),
        "help me list all pods": (["list", "pods"], ("list", "all", "pods")),
        "I'd like to invite a user": (["invite", "user"], ("invite", "a", "user")),
        "we need to classify images": (["classify", "images"], ("classify", "images")),
        "show me how to create a task": (["create", "task"], ("create", "a", "task")),
        "please, how can I archive a project?": (
            ["archive", "project"],
            ("archive", "a", "project"),
        ),
        "please refund a payment": (["refund", "payment"], ("refund", "a", "payment")),
        "I need help with rotating tokens": (["rotating", "tokens"], ("rotating", "tokens")),
        "what do I need to do to enable SSO": (["enable", "sso"], ("enable", "sso")),
        "any way to rotate keys": (["rotate", "keys"], ("rotate", "keys")),
        "where can I change my password": (["change", "password"], ("change", "my", "password")),
        "I'm looking for a way to rotate keys": (["rotate", "keys"], ("rotate", "keys")),
        "what's the easiest way for me to undo a commit": (
            ["undo", "commit"],
            ("undo", "a", "commit"),
        ),
        "trying to rotate keys": (["rotate", "keys"], ("rotate", "keys")),
        "tell me how I can rotate keys": (["rotate", "keys"], ("rotate", "keys")),
        "what should I do to enable SSO": (["enable", "sso"], ("enable", "sso")),
        # the words a request is asked in before "how to"
        "I'm trying to figure out how to rotate keys": (["rotate", "keys"], ("rotate", "keys")),
        "do you know how to rotate keys": (["rotate", "keys"], ("rotate", "keys")),
        "any idea how to rotate keys?": (["rotate", "keys"], ("rotate", "keys")),
        "I was wondering how I can rotate keys": (["rotate", "keys"], ("rotate", "keys")),
        "is there any way I can rotate keys": (["rotate", "keys"], ("rotate", "keys")),
        # framing, then asking for an operation: both are no clause
        "can you tell me which endpoint refunds a payment": (
            ["refunds", "payment"],
            ("refund", "a", "payment"),
        ),
    }
    _assert_requests(a, framed)
    # words that say what is asked about stay, as does a frame with nothing after it
    _assert_words_stay(
        a,
        [
            ("show me every pod", "show"),
            ("how long until deleted tasks are gone", "long"),
            ("help", "help"),
            ("best practices for webhooks", "best"),
            ("where is the config file", "config"),
            ("history of how to rotate keys", "history"),
            ("the gateway to the cluster", "gateway"),
        ],
    )
    assert a.parse("how do I").asked == ("how", "do", "i")
    # the kind of answer asked for at the end of a question
    for question, clauses in {
        "refund a payment via the API": ["refund", "payment"],
        "how do I list users using the REST API?": ["list", "users"],
        "export tasks from the command line": ["export", "tasks"],
        "which endpoint refunds a payment via the API": ["refunds", "payment"],
        "create a webhook programmatically": ["create", "webhook"],
        "export tasks step by step": ["export", "tasks"],
        "how do I create a branch? thanks!": ["create", "branch"],
        "list users via the API, thank you": ["list", "users"],
        # the words a message closes with, however many
        "how do I create a branch? Thanks in advance!": ["create", "branch"],
        "create a branch? Any help is appreciated.": ["create", "branch"],
        "create a branch. I'd appreciate your help. Cheers": ["create", "branch"],
        "create a branch, thank you so much for your help": ["create", "branch"],
    }.items():
        assert [c.original for c in a.parse(question).clauses] == clauses, question
    # a question that only ends so keeps its opening, as asked without those words
    assert a.parse("what is a project key with the CLI").asked == tuple(
        tokenize("what is a project key")
    )
    assert "api" in [c.original for c in a.parse("create an API key").clauses]
    assert [c.original for c in a.parse("via the API").clauses] == ["via", "api"]
    assert a.parse("list users, thanks").asked == ("list", "users")
    assert request_text("refund a payment?") == "refund a payment?"  # punctuation stays
    assert request_text("delete the thanks page") == "delete the thanks page"
    assert request_text("which posts are appreciated") == "which posts are appreciated"
    assert request_text("add a member. Much appreciated!") == "add a member"
    assert request_text("is it possible to archive a project") == "archive a project"


def test_a_name_that_only_sets_the_context_leaves_the_question() -> None:
    """The name where it only says which product a question is about: an opening that
    names it, a closing phrase naming it, the name before what it qualifies ("the
    Orbit CLI" is the CLI). Said any other way it is part of the question."""
    cases = {
        "In Orbit, how do I add a member?": "how do I add a member?",
        "Using orbit: archive a project": "archive a project",
        "Orbit: archive a project": "archive a project",
        "how do I add a member in Orbit?": "how do I add a member?",
        "how do I list tasks in the Orbit, please": "how do I list tasks, please",
        "list tasks with the Orbit CLI": "list tasks with the CLI",
        "export a board from Orbit’s web app": "export a board from web app",
        "how do I make Orbit send fewer emails": "how do I make Orbit send fewer emails",
        "orbit tasks list": "orbit tasks list",
        "what is Orbit": "what is Orbit",
        "orbital mechanics in Orbit": "orbital mechanics",
        "sign in with SSO on the Orbit CLI": "sign in with SSO on the CLI",
        "add a member in Orbit without the CLI": "add a member without the CLI",
        "deploy on the server with a dry run": "deploy on the server with a dry run",
        "I'm new to Orbit. How do I add a member?": "I'm new. How do I add a member?",
        "how do I move my tasks to Orbit": "how do I move my tasks",
    }
    for question, left in cases.items():
        assert without_context(question, ["orbit"]) == left, question


def test_sentences_around_the_request_that_only_converse_are_left_out() -> None:
    """A greeting, an apology or a word about asking before or after the request says
    nothing about the docs wanted. A sentence with any other word is part of the question, as is
    one the request points back at."""
    cases = {
        "Quick question: how do I add a member?": "how do I add a member?",
        "Question: how do I add a member": "how do I add a member",
        "Hi there, I have a question. My link expired": "My link expired",
        "Hi, quick question - how do I add a member?": "how do I add a member?",
        "Hi, I'm new here. How do I invite people?": "How do I invite people?",
        "Sorry if this is obvious, but how do I archive a project": "how do I archive a project",
        "Hello! add a member to a project": "add a member to a project",
        "Thanks. Where are the settings?": "Where are the settings?",
        # and after it
        "How do I add a member? I'm new here.": "How do I add a member",
        "Hi. How do I add a member? Sorry if this is obvious.": "How do I add a member",
    }
    whole = [
        "I'm new to Orbit. How do I invite people?",  # "Orbit" is more than conversing
        "I have an image of my backyard. Identify if the grill is on.",
        "The link expired. How do I get a new one?",
        "Hi. How do I get a new one?",  # points back at nothing said: no request left
        "Hi. What should I do?",
        "How do I archive a project? I want to keep the tasks.",
        "How do I add a member? We use Orbit at work.",
        "In S. cerevisiae, H2A.Z is deposited in euchromatin.",  # stop words only
        "kubectl: list pods",
        "Error: permission denied when pushing",
        "archive a project",
        "!\nReuse the shell history.",
    ]
    for question, left in cases.items():
        assert without_preamble(question) == left, question
    for question in whole:
        assert without_preamble(question) == question, question


def test_a_word_spelled_the_other_way_british_or_american() -> None:
    pairs = {
        "organisation": "organization",
        "authorised": "authorized",
        "analyse": "analyze",
        "colour": "color",
        "behaviours": "behaviors",
        "centre": "center",
        "cancelled": "canceled",
        "catalogue": "catalog",
        "licence": "license",
    }
    for uk, us in pairs.items():
        assert us in spelling_variants(uk), uk
        assert uk in spelling_variants(us), us
    # endings only: a short word or one without those endings has no other spelling
    assert spelling_variants("tour") == spelling_variants("process") == ()
    assert "cancellled" not in spelling_variants("cancelled")


def test_two_versions_sharing_a_cache_folder_keep_a_lexicon_each(
    kept_lexicon: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from groundkb.analyze import lexicon

    written = kept_lexicon.stat().st_mtime_ns
    with monkeypatch.context() as m:  # another version of the file's format
        m.setattr(lexicon, "_CACHE_FORMAT", lexicon._CACHE_FORMAT + 1)
        lexicon.forget()
        assert inflections("detecting") == ("detect", "detected", "detects")
    assert len(list((tmp_path / "cache").glob("verb-forms-*.marshal"))) == 2
    assert kept_lexicon.stat().st_mtime_ns == written  # not rewritten by the other version
