"""Text analysis: tokenizing, stop words, conservative plural stemming and synonyms.

Index side: :func:`analyzed_fields` — lower-case words; in the prose fields (title,
header path, body) each reduced to its singular by :func:`stem` (regular English plurals
only, never under 4 letters, a short list of words that only look plural); aliases and
keywords are names and are kept exactly as written. Stop words stay in the index so
phrases match.

Query side: :class:`Analyzer` turns a query into clauses. A clause is one thing the
user asked for, with the alternatives that satisfy it: the stemmed word; for a known
term (a word of a short title, an alias, keyword or command name anywhere in the index)
the word exactly as typed first and its stem second, so names match as written;
synonym rewrites; and for a verb, its other regular forms ("detecting" → detect,
detected; ``lexicon.py``). Stemming at index time, not by expanding the query into OR-ed
forms, keeps BM25 honest: "cell" and "cells" are one term with one document frequency.
A verb's forms are the exception (a noun-only stemmer cannot tell "using" from a
name): they are alternatives that count only where the word itself is absent, at the
document frequency of the most frequent form (``search/rescore.py``), as one stemmed
term would. A question that opens by asking for an endpoint ("which endpoint refunds
a payment", "is there an API call to …") says what kind of answer it wants, not what it
is about: those opening words are no clause (:func:`asking_words`); so are "which
command", "what command do I run to", "which page explains", "is there a guide to", and
the words that only frame a request ("how do I", "is it possible to", "what's the best
way to", "I want to", "can you help me") and the endings that ask for a kind of answer
or for nothing ("… via the API", "… with the CLI", "… thanks").
Typo correction happens in ``search/``, against the index vocabulary.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..errors import ConfigError
from .lexicon import lemma

TOKENIZER_VERSION = "words-v4-singular"

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# a name written with underscores (``url_for``, ``is_active``, ``cancel_at_period_end``):
# one that holds a stop word is asked for as the phrase of its words, stop words included
# (``url_for`` would be asked as "url" alone); the words of any other (``SECRET_KEY``,
# ``ssh_config``) are asked for one by one, as before
_SNAKE = re.compile(r"[^\W_]+(?:_[^\W_]+)+", re.UNICODE)
# a command-line flag of several words (``--no-verify``, ``--not-matching``), the same
# way: its dashes say it is a name. Other hyphenated words stay as they were: hyphens
# also join prose ("up-to-date") and the phrases of synonyms ("log-in")
_FLAG = re.compile(r"(?<![\w-])--?([^\W_]+(?:-[^\W_]+)+)", re.UNICODE)

AltKind = Literal["exact", "plural", "inflection", "synonym", "typo"]

# Function words plus the words people wrap a question in. They never count as evidence.
STOP_WORDS: frozenset[str] = frozenset(
    """
    a an the and or but nor of to in on at by for with from into onto about as than is are
    was were be been being am do does did doing done have has had having i me my mine
    myself we us our ours you your yours he him his she her hers it its they them their
    theirs this that these those there here which who whom whose what when where why how
    can could would should will shall may might must not no yes so if then else just also
    too very really please thanks thank explain describe tell define meaning mean means
    definition overview info information want need wanna trying try let lets s t d ll re ve
    m thing things stuff something anything everything someone somebody way ways all any
    some each every other another more most much many one
    aren isn wasn weren don doesn didn haven hasn hadn won wouldn shouldn couldn cannot
    """.split()  # noqa: SIM905
)

# Prefixes that ask for the definition of a named thing ("what is X", "explain X").
_DEFINITIONAL = re.compile(
    r"^\s*(?:what\s+(?:is|are|'s|does)|what's|whats|explain|define|describe|"
    r"tell\s+me\s+about|meaning\s+of|definition\s+of)\b",
    re.IGNORECASE,
)

DEFAULT_SYNONYMS = """
# Solr synonym format: "a, b, c" are equivalent; "a, b => c" rewrites a and b to c.
get, list, show, view, display, retrieve, fetch
create, add, new, make
delete, remove, destroy, erase
update, edit, modify, change
sign in, log in, login, signin
sign out, log out, logout, signout
settings, preferences, configuration, config
"""


def normalize(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens; the same function builds the index and reads queries."""
    return _WORD.findall(normalize(text))


def replace_words(text: str, words: Mapping[str, str]) -> str:
    """``text`` with each word that is a key of ``words`` (a token, as ``tokenize``
    reads it) replaced by its value, everything else as written: "the process's
    notifcations" → "the process's notifications"."""
    return _WORD.sub(lambda m: words.get(normalize(m[0]), m[0]), text)


# "which endpoint …", "what API call …", "is there an endpoint to …", "what endpoints
# can I use to …", "which API lets me …", "what command do I run to …", "endpoint to …",
# "the API that …", "commands for …": the words a question opens with to ask for an API
# operation or a command; and "which page explains …", "is there a guide to …", "docs
# on …" for a page. They say what kind of answer is wanted, not what it is about:
# "endpoint" in an API that has webhook endpoints would find those, and "guide" in docs
# that never say it made the question look out of scope.
_KIND_ASKED = (
    r"(?:(?:(?:rest|http|api)\s+)?(?:endpoints?|operations?|api\s+(?:calls?|requests?)|apis?)"
    r"|(?:(?:cli|shell|terminal)\s+)?commands?)"
)
_PAGE_ASKED = r"(?:docs?|documentation|pages?|guides?|articles?|tutorials?)"
_PAGE_TEXT = r"(?:docs?|documentation|guides?|articles?|tutorials?)"  # "guide to …"
_PAGE_VERB = r"(?:explains?|covers?|describes?|documents?|mentions?|talks?\s+about|is\s+about)"
_ASKING_FOR_ONE = re.compile(
    r"^\W*(?:"
    rf"(?:which|what|is\s+there\s+(?:an?|any))\s+{_KIND_ASKED}"
    r"(?:\s+(?:can|could|should|do|would|must)\s+(?:i|we|you)\s+(?:use|call|run|type)"
    r"(?:\s+to)?|\s+(?:lets|allows|helps|enables)\s+(?:me|us|you)(?:\s+to)?)?"
    rf"|(?:(?:the|an?|any)\s+)?{_KIND_ASKED}\s+(?:to|that|which|for)"
    rf"|(?:which|what)(?:'s|\s+is|\s+are)\s+the\s+{_KIND_ASKED}\s+(?:to|that|which|for)"
    rf"|(?P<page>(?:which|what)\s+{_PAGE_ASKED}\s+{_PAGE_VERB}"
    rf"|is\s+there\s+(?:(?:an?|any)\s+)?{_PAGE_ASKED}"
    rf"\s+(?:on|about|for|to|(?:that\s+)?{_PAGE_VERB})"
    rf"|(?:(?:the|an?|any)\s+)?{_PAGE_TEXT}\s+(?:on|about|to|that\s+{_PAGE_VERB})"
    rf"|(?:which|what|where)(?:'s|\s+is|\s+are)\s+the\s+{_PAGE_ASKED}"
    rf"\s+(?:on|about|for|to|that\s+{_PAGE_VERB})"
    r"|(?:search|find|look\s+up|look\s+for|lookup|get|show\s+me)\s+(?:(?:in|through)\s+)?"
    rf"(?:the\s+)?{_PAGE_ASKED}\s+(?:for|on|about|to))"
    r")\b",
    re.IGNORECASE,
)


# "how do I …", "is it possible to …", "what's the best way to …", "I want to …", "can
# you help me …", "show me how to …": the words that frame a request without saying
# anything about it. "Possible", "best", "help" and "show" are no stop words (and "show"
# has synonyms), so as clauses they found whatever page says them; as stop words ("how
# do I", "I want to") they still diluted the share of the question a page says word for
# word, which the verdict reads.
_WAY = (
    r"(?:best|easiest|simplest|quickest|fastest|right|correct|proper|recommended|preferred"
    r"|cleanest|safest|standard|usual|normal)"
)
_MODAL = r"(?:do|does|can|could|should|would|might|may|must)"
_SUBJECT = r"(?:i|we|you|one|someone)"
_WAY_TO = r"way\s+(?:(?:for\s+(?:me|us)\s+)?to|(?:i|we|you)\s+(?:can|could|might|should))"
_HOW = rf"how\s+(?:to|{_SUBJECT}\s+{_MODAL})"
# The words a request is asked in before "how to": "I'm trying to figure out how to",
# "do you know how to", "any idea how to", "I'm not sure how to", "I was wondering how I
# can", "I'd like to know how to".
_ASKED_IN = (
    r"(?:i|i['’]m|i['’]d|im|we|we['’]re|we['’]d|you|do|does|did|any|an?|the|idea|ideas|know|not"
    r"|don['’]t|dont|sure|wonder|wondering|was|were|am|are|trying|try|to|figure|figuring|out"
    r"|find|learn|like|want|wanted|understand|curious|about|tell|me|us|show|please|could"
    r"|can|would|hey|hi|so|just|really|still|unsure"
    # an agent's words: "search the docs for how to", "find documentation on how to"
    r"|search|find|look|lookup|up|get|give|for|on|about|of|in|docs?|documentation|guides?"
    r"|instructions?|steps|tutorials?|articles?|pages?|explanation|info|information)"
)
_FRAMING = re.compile(
    r"^\W*(?:please\b[\s,]*)?(?:(?:"
    rf"(?:{_ASKED_IN}[\s,]+)+{_HOW}|"
    rf"(?:how|where)\s+{_MODAL}\s+{_SUBJECT}(?:\s+go\s+about)?"
    r"|how\s+to"
    r"|is\s+it\s+(?:at\s+all\s+)?possible\s+to"
    r"|(?:is\s+there\s+|(?:(?:i|we)(?:['’]m|\s+am|['’]re|\s+are)\s+)?looking\s+for\s+)?"
    rf"(?:an?|any|the)\s+(?:{_WAY}\s+|\w+\s+)?{_WAY_TO}"
    rf"|(?:what(?:['’]s|\s+is)\s+)?(?:the\s+)?{_WAY}\s+{_WAY_TO}"
    rf"|what(?:['’]s|\s+is)\s+the\s+{_WAY_TO}"
    r"|(?:(?:i|we)\s+(?:would\s+|am\s+|are\s+)?|(?:i|we)['’](?:d|m|re)\s+)?"
    r"(?:want|need|wish|like|trying|looking|hoping|wanting)\s+to"
    r"|(?:can|could|would|will)\s+you\s+(?:please\s+)?(?:help\s+me(?:\s+to)?"
    rf"|(?:tell\s+me|show\s+me|explain)\s+{_HOW}|tell\s+me)?"
    r"|(?:can|could|may|should|must)\s+(?:i|we)"
    r"|help\s+me(?:\s+to)?"
    rf"|(?:tell\s+me|show\s+me|explain)\s+{_HOW}"
    r"|(?:i\s+|we\s+)?need\s+help\s+(?:with|to)"
    r"|what\s+are\s+the\s+steps\s+to"
    r"|(?:the\s+)?(?:steps|instructions)\s+(?:to|for|on)(?:\s+how\s+to)?"
    r"|what\s+(?:do|should|must|can)\s+(?:i|we)\s+(?:need\s+to\s+|have\s+to\s+)?do\s+to"
    r")\b)?(?:[\s,]*please\b)?",
    re.IGNORECASE,
)


# "… via the API", "… using the REST API", "… with the CLI", "… from the command line",
# "… programmatically": the same kind of answer asked for at the end of a question; and
# "… step by step", "… please", "… thanks", which ask for nothing.
# The words a message closes with: "please", "thanks in advance", "any help is
# appreciated", "I'd appreciate your help", "cheers", "best regards".
_CLOSER = (
    r"(?:please|(?:many\s+)?thanks|thank\s+you|thx|cheers|(?:best\s+|kind\s+)?regards"
    r"|much\s+appreciated"
    r"|(?:any\s+)?help\s+(?:is\s+|would\s+be\s+)?(?:much\s+|greatly\s+|really\s+)?appreciated"
    r"|(?:(?:i|we)(?:\s+would|['’]d)?\s+)?(?:really\s+|greatly\s+)?appreciate"
    r"\s+(?:any|your|the|some)\s+help)"
    r"(?:\s+(?:so\s+much|a\s+lot|very\s+much|in\s+advance|for\s+(?:your|any|the)\s+help))*"
)
_ASKED_AT_END = re.compile(
    r"(?:[\s,]+(?:via|using|with|through|over|from|in|on)\s+(?:(?:the|an?|your|our)\s+)?"
    r"(?:(?:(?:rest|http|web|public)\s+)?(?:apis?|endpoints?|api\s+calls?)"
    r"|cli|command[\s-]+line|terminal|shell)"
    r"|[\s,]+(?:programmatically|step[\s-]+by[\s-]+step))?"
    rf"(?:[\s,.!?]+{_CLOSER})*\W*$",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class _Asked:
    """How a question opens and ends: ``skip`` first tokens and ``tail`` last ones only
    frame the request or ask for an operation, a command or a page; ``rest`` is the
    request between them; ``page``: they ask for a page; ``kind``: the opening asks for
    one of those at all."""

    skip: int = 0
    tail: int = 0
    rest: str = ""
    page: bool = False
    kind: bool = False


@functools.lru_cache(maxsize=256)
def _asking(query: str) -> _Asked:
    """The words of ``query`` that only frame its request or ask for a kind of answer
    (none when the question does not open or end that way, or when nothing else is
    left: "which endpoint", "how do I"). Cached: a search reads them twice, for its
    request text and for its clauses."""
    framing = _FRAMING.match(query)
    start = framing.end() if framing else 0
    m = _ASKING_FOR_ONE.match(query[start:])
    end = start + m.end() if m else start
    last = _ASKED_AT_END.search(query, end)
    if last and not tokenize(last.group()):
        last = None  # only punctuation ends it
    stop = last.start() if last else len(query)
    rest = query[end:stop].strip()
    if not (end or last) or not tokenize(rest):
        return _Asked(rest=query)
    page = m is not None and m.group("page") is not None
    tail = len(tokenize(query[stop:]))
    return _Asked(len(tokenize(query[:end])), tail, rest, page, m is not None)


def asking_words(query: str) -> int:
    """How many of ``query``'s first tokens only frame the request or ask for an API
    operation, a command or a page ("how do I", "is it possible to", "which endpoint",
    "what command do I run to", "is there a guide to"); 0 when it does not open that
    way, or when nothing follows."""
    return _asking(query).skip


def request_text(query: str) -> str:
    """``query`` without the words that frame it or ask for an API operation, a command
    or a page ("which endpoint refunds a payment" → "refunds a payment"; "is it possible
    to archive a project" → "archive a project"; "list users via the API" → "list
    users"); the query itself when nothing is left."""
    return _asking(query).rest


# "Quick question: how do I …", "Hi there, I have a question. How do I …", "Sorry if
# this is obvious, but how do I …": sentences before the request that only converse. A
# boundary ends a sentence, a clause before "but" or "so", or an opening before a colon
# or a dash. A sentence only converses when every word of it is a stop word or one of
# these: greetings, words about asking, apologies, thanks and fillers. A closed class of
# English, not a corpus's words: "I have an image of my backyard." is what a question
# is about, and so is every other sentence with a word outside it.
_BOUNDARY = re.compile(r"[.!?;:]+\s+|\s+[-–—]+\s+|,\s*(?:but|so)\s+", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?;]")  # what may end the request before a closing sentence
_CONVERSING = frozenset(
    """hi hello hey hiya howdy greetings morning afternoon evening good there everyone
    everybody folks guys team quick simple short small little silly dumb stupid basic
    new newbie noob question questions query ask asking asked wondering wonder curious sorry
    apologies apologize bother bothering obvious hope hoping thanks thank advance
    appreciate appreciated kindly ok okay um uh yes yeah alright anyway""".split()  # noqa: SIM905
)
# words that point back at a sentence before: "… How do I get a new one?" needs it
_POINTING = frozenset(
    """it its they them their theirs this these those he she him her one ones""".split()  # noqa: SIM905
)


def _converses(sentence: str) -> bool:
    """Whether every word of ``sentence`` is a stop word or converses, and one does."""
    words = set(tokenize(sentence))
    return bool(words & _CONVERSING) and not words - STOP_WORDS - _CONVERSING


@functools.lru_cache(maxsize=256)
def without_preamble(query: str) -> str:
    """``query`` without the sentences that only converse before and after its request
    ("Quick question: how do I add a member?" → "how do I add a member?"; "Hi there, I
    have a question. My link expired" → "My link expired"; "How do I add a member? I'm
    new here." → "How do I add a member"). A greeting, an apology or a
    word about asking says nothing about the docs wanted, and as clauses "question",
    "quick" or "obvious" found whatever page says them. The query stays whole when what
    follows points back at a sentence before it and has at most two words of its own,
    or has no words of its own ("Hi. What should I do?")."""
    boundaries = list(_BOUNDARY.finditer(query))
    start, end = 0, len(query)
    for boundary in boundaries:
        if not _converses(query[start : boundary.start()]):
            break  # "In S. cerevisiae, …" says nothing conversing
        start = boundary.end()
    for boundary in reversed(boundaries):  # "… ? I'm new here."; not "…, but don't do it"
        if boundary.start() < start or not _SENTENCE_END.match(boundary.group()):
            break
        if not _converses(query[boundary.end() : end]):
            break
        end = boundary.start()
    if (start, end) == (0, len(query)):
        return query
    rest = query[start:end]
    request = tokenize(request_text(rest))
    content = [w for w in request if w not in STOP_WORDS]
    if not content or (_POINTING & set(request) and len(content) <= 2):
        return query
    return rest


# "In Orbit, how do I …", "… in Orbit?", "… with the Orbit CLI": where a word only sets
# the context of a question. Where the word names a product (nearly every document of
# some sources holds it), it is no evidence and says which sources are asked
# (``Searcher._context_free``).
_CONTEXT = r"(?:in|on|with|using|for|from|via|through|inside|within)"
_NAMED = rf"(?!{_CONTEXT}\b)(?P<name>[^\W_]+)(?:['’]s)?"  # "sign on with the Orbit CLI"
# what may follow a phrase that names the product at a clause's end ("… in Orbit
# without the CLI"), rather than the thing the name qualifies ("the Orbit web app")
_AFTER_CONTEXT = (
    rf"(?:{_CONTEXT}|without|and|or|but|to|so|if|when|while|because|by|at|into|of|as)\b"
)
_WORD_AFTER = rf"(?!{_AFTER_CONTEXT})[^\W_]"
_CONTEXT_PATTERNS = (
    # "In Orbit, …", "Orbit: …": an opening that only names it
    re.compile(rf"^\W*(?:{_CONTEXT}\s+(?:the\s+)?)?{_NAMED}\s*[,:]\s*", re.I),
    # "… in Orbit?", "… using the Orbit, please", "… in Orbit without …": a phrase naming
    # only it, at a clause's end
    re.compile(
        rf"[\s,]*\b{_CONTEXT}\s+(?:the\s+)?{_NAMED}"
        rf"(?=\s*(?:[,.;:!?)]|$)|\s+{_AFTER_CONTEXT})",
        re.I,
    ),
    # "… in the Orbit web app", "… with the Orbit CLI": it names what follows
    re.compile(rf"(?P<keep>\b{_CONTEXT}\s+(?:the\s+)?){_NAMED}\s+(?={_WORD_AFTER})", re.I),
    # "I'm new to Orbit.", "… over to Twilio": "to" only where a sentence ends ("to send
    # an SMS", "to log in" are verbs)
    re.compile(rf"[\s,]*\bto\s+(?:the\s+)?{_NAMED}(?=\s*(?:[,.;:!?)]|$))", re.I),
)


def context_words(query: str) -> set[str]:
    """The words of ``query`` in a place where they may only set its context (see
    :func:`without_context`), as tokens."""
    return {t for p in _CONTEXT_PATTERNS for m in p.finditer(query) for t in tokenize(m["name"])}


_COMMAND_WORD = re.compile(r"[\w-]+")


def without_context(
    query: str, names: Collection[str], command: Callable[[str], bool] | None = None
) -> str:
    """``query`` without ``names`` (tokens) where they only set its context: "In Orbit,
    how do I add a member?" → "how do I add a member?", "how do I list tasks in Orbit" →
    "how do I list tasks", "with the Orbit CLI" → "with the CLI". A name said any other
    way stays ("how do I make Orbit send fewer emails"), as does a name before words
    that ``command`` says make a command with it ("is there a doc on orbit get-users")."""

    def drop(m: re.Match[str]) -> str:
        words = tokenize(m["name"])
        if not words or not all(w in names for w in words):
            return m[0]
        keep = m.groupdict().get("keep")
        if keep is not None and command is not None:
            after = []
            for w in m.string[m.end() :].split():
                word = w.rstrip(",.;:!?)")  # "get-users," ends the command
                if not _COMMAND_WORD.fullmatch(word) or word.lower() in STOP_WORDS:
                    break
                after.append(word)
                if word != w:
                    break
            if after and command(" ".join([m["name"], *after])):
                return m[0]
        return keep or ""

    for pattern in _CONTEXT_PATTERNS:
        query = pattern.sub(drop, query)
    return query.strip()


def is_definitional(query: str) -> bool:
    return bool(_DEFINITIONAL.match(query))


# Singular nouns that end in -s (their plural adds -es: statuses, aliases, analyses), and
# words that only look plural. Neither is reduced; the plurals map back to them.
_S_NOUNS = """alias atlas bias canvas gas bus bonus campus census chorus circus consensus
    corpus focus genius minus nexus plus prospectus radius status surplus syllabus virus
    lens iris""".split()  # noqa: SIM905
_IS_NOUNS = """analysis axis basis crisis diagnosis ellipsis emphasis hypothesis parenthesis
    synopsis thesis""".split()  # noqa: SIM905
_LOOK_PLURAL = """news series species always perhaps whereas towards afterwards sometimes
    besides kudos chaos physics mathematics economics ethics analytics statistics diabetes
    measles windows kubernetes jenkins postgres redis""".split()  # noqa: SIM905
_NOT_PLURALS = frozenset([*_S_NOUNS, *_IS_NOUNS, *_LOOK_PLURAL])
_IRREGULAR_PLURALS = {
    **{w + "es": w for w in _S_NOUNS},
    **{w[:-2] + "es": w for w in _IS_NOUNS if w != "basis"},  # "bases" stays base
    "people": "person", "children": "child", "men": "man", "women": "woman",
    "indices": "index", "matrices": "matrix", "vertices": "vertex", "criteria": "criterion",
    "caches": "cache", "movies": "movie", "cookies": "cookie",
}  # fmt: skip


def singular_forms(word: str) -> list[str]:
    """The singular of a plural, as a list (empty when ``word`` is not a plural).

    Irregular plurals first (``statuses`` → ``status``, ``people`` → ``person``), then
    -ies → -y, -sses/-shes/-ches/-xes/-zzes → drop -es, -s → drop -s; never under 4
    letters, never -ss/-us/-is, never a word that only looks plural (``news``, ``alias``).
    """
    if len(word) < 4 or word.isdigit() or word in _NOT_PLURALS:
        return []
    if word in _IRREGULAR_PLURALS:
        return [_IRREGULAR_PLURALS[word]]
    if word.endswith("ies") and len(word) > 4:
        return [word[:-3] + "y"]
    if word.endswith(("sses", "shes", "ches", "xes", "zzes")):
        return [word[:-2]]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return [word[:-1]]
    return []


@functools.lru_cache(maxsize=1 << 17)
def singular(word: str) -> str:
    """The singular of a lower-case English noun, conservatively; the word itself when
    it is not a regular or known irregular plural. The one singulariser of groundkb:
    the index (:func:`stem`), the query and API resource names all use it."""
    forms = singular_forms(word)
    return forms[0] if forms else word


def stem(word: str) -> str:
    """The conservative stem of a token: its singular (see :func:`singular`)."""
    return singular(word)


def index_terms(text: str) -> list[str]:
    """The terms stored in the index for prose: tokens reduced by :func:`stem`."""
    return [stem(t) for t in tokenize(text)]


def below_title(header_path: str, title: str) -> str:
    """The part of a chunk's header path below its document's title: '' for the title
    itself, ``Setup`` for ``Title > Setup``, a path that does not start with the title
    as it is."""
    if header_path == title:
        return ""
    if header_path.startswith(title + " > "):
        return header_path[len(title) + 3 :]
    return header_path


def analyzed_fields(
    title: str, aliases: Sequence[str], keywords: Sequence[str], header_path: str, text: str
) -> tuple[str, str, str, str, str]:
    """The five indexed fields of a chunk: title, aliases, keywords, header, body.

    Aliases and keywords are names and are indexed exactly as written; the prose fields
    are stemmed. The header path is indexed below the title (``Title > Setup`` →
    ``Setup``): the title field already holds the title, counting it twice would weigh
    every title word 1 + weight_header times.
    """
    header_path = below_title(header_path, title)
    return (
        " ".join(index_terms(title)),
        " ".join(tokenize(" | ".join(aliases))),
        " ".join(tokenize(" | ".join(keywords))),
        " ".join(index_terms(header_path)),
        " ".join(index_terms(text)),
    )


def plural_forms(word: str) -> list[str]:
    if len(word) < 4 or word.isdigit() or word.endswith("s"):
        return []
    if word.endswith("y") and word[-2:-1] not in ("a", "e", "o", "u"):
        return [word[:-1] + "ies"]
    if word.endswith(("sh", "ch", "x", "z")):
        return [word + "es"]
    return [word + "s"]


@dataclass(frozen=True, slots=True)
class Alternative:
    tokens: tuple[str, ...]
    kind: AltKind = "exact"


@dataclass(frozen=True, slots=True)
class Clause:
    """One thing asked for; satisfied by any of its alternatives."""

    original: str
    alternatives: tuple[Alternative, ...]


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    text: str
    tokens: tuple[str, ...]
    clauses: tuple[Clause, ...]
    definitional: bool = False
    phrase: tuple[str, ...] = ()
    # the request without the words that frame it or ask for an operation or a command,
    # its verb in the base form: "which endpoint refunds a payment" → refund a payment,
    # "how do I archive a project" → archive a project (the API ranking reads the verb
    # and its object from it, the verdict how much of it a page says word for word); ()
    # when the question does not open so
    request: tuple[str, ...] = ()
    # the words the index lacks that are searched as the two words they run together
    # ("noninteractive" → non interactive; the search engine's typo step)
    split: tuple[str, ...] = ()

    @property
    def asked(self) -> tuple[str, ...]:
        """The words of the request itself (see ``request``)."""
        return self.request or self.tokens


@dataclass
class Synonyms:
    """Word and phrase synonyms: equivalence groups and one-way rewrites."""

    groups: dict[tuple[str, ...], list[tuple[str, ...]]] = field(default_factory=dict)
    rewrites: dict[tuple[str, ...], list[tuple[str, ...]]] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str, origin: str = "<synonyms>") -> Synonyms:
        syn = cls()
        syn.add_rules(text, origin)
        return syn

    def add_rules(self, text: str, origin: str = "<synonyms>") -> None:
        for lineno, raw in enumerate(text.splitlines(), 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            if "=>" in line:
                left, _, right = line.partition("=>")
                lhs = self._terms(left)
                rhs = self._terms(right)
                if not lhs or not rhs:
                    raise ConfigError(f"{origin}:{lineno}: a rewrite needs terms on both sides")
                for term in lhs:
                    self.rewrites[term] = rhs
            else:
                terms = self._terms(line)
                if len(terms) < 2:
                    raise ConfigError(f"{origin}:{lineno}: a synonym group needs two terms")
                for term in terms:
                    existing = self.groups.setdefault(term, [])
                    for other in terms:
                        if other != term and other not in existing:
                            existing.append(other)

    @staticmethod
    def _terms(part: str) -> list[tuple[str, ...]]:
        return [t for t in (tuple(index_terms(x)) for x in part.split(",")) if t]

    @property
    def max_len(self) -> int:
        keys = [*self.groups, *self.rewrites]
        return max((len(k) for k in keys), default=1)


def load_synonyms(path: str | Path | None, defaults: bool = True) -> Synonyms:
    syn = Synonyms.parse(DEFAULT_SYNONYMS, "<defaults>") if defaults else Synonyms()
    if path:
        p = Path(path)
        try:
            syn.add_rules(p.read_text(encoding="utf-8"), str(p))
        except OSError as exc:
            raise ConfigError(f"cannot read synonyms file {p}: {exc.strerror}") from exc
        except UnicodeDecodeError as exc:
            raise ConfigError(f"synonyms file {p} is not UTF-8") from exc
    return syn


class Analyzer:
    """Turns query text into clauses; see the module docstring for the rules."""

    def __init__(
        self,
        synonyms: Synonyms | None = None,
        stop_words: Iterable[str] = STOP_WORDS,
        inflections: Callable[[str], Sequence[str]] | None = None,
    ):
        """``inflections``: the other forms of a word to search beside it ("detecting" →
        detect, detected; see ``lexicon.inflections``), or None for none."""
        self.synonyms = synonyms if synonyms is not None else load_synonyms(None)
        words = frozenset(stop_words)
        self.stop_words = words | {stem(w) for w in words}
        self.inflections = inflections

    def parse(
        self,
        query: str,
        known_terms: frozenset[str] = frozenset(),
        forms: bool = True,
        gerunds: bool = True,
    ) -> ParsedQuery:
        """The clauses of ``query``; ``forms``: with the other forms of its verbs (when
        the analyzer has ``inflections``); ``gerunds``: a request that opens with a
        gerund asks for its verb (``_with_verb``)."""
        tokens = tokenize(query)
        stems = [stem(t) for t in tokens]
        names, names_as_written = _names(query)
        syn = self.synonyms
        clauses: list[Clause] = []
        i = 0
        n = len(tokens)
        longest = syn.max_len
        asked = _asking(query)
        skip, rest = asked.skip, asked.rest
        request: tuple[str, ...] = ()
        if skip or asked.tail:  # "which endpoint" alone stays a question about endpoints
            i = skip
            n -= asked.tail
            request = tuple(tokens[skip:n])
            verb_next = asked.kind and tokens[skip - 1] != "for" and not asked.page
            if verb_next and request[0] not in self.stop_words:
                request = (lemma(request[0]), *request[1:])  # "…endpoint refunds"
            # "… to cancel"; a question that only ends with such words ("what is a
            # project key with the CLI") keeps its own opening, as asked without them
            while skip and len(request) > 1 and request[0] in self.stop_words:
                request = request[1:]
        while i < n:
            end = names.get(i, 0) if names else 0
            if end and i + 1 < end <= n and _holds_stop_word(tokens[i:end], self.stop_words):
                original = names_as_written[i] if i in names_as_written else "_".join(tokens[i:end])
                clauses.append(Clause(original, (Alternative(tuple(stems[i:end]), "exact"),)))
                i = end
                continue
            matched = False
            for size in range(min(longest, n - i), 0, -1):
                key = tuple(stems[i : i + size])
                original = " ".join(tokens[i : i + size])
                if size == 1 and tokens[i] in self.stop_words:
                    break
                if key in syn.rewrites:
                    alts = [Alternative(t, "exact") for t in syn.rewrites[key]]
                    clauses.append(Clause(original, tuple(alts)))
                elif key in syn.groups:
                    alts = [Alternative(key, "exact")]
                    alts += [Alternative(t, "synonym") for t in syn.groups[key]]
                    clauses.append(Clause(original, tuple(alts)))
                else:
                    if size > 1:
                        continue
                    clauses.append(Clause(original, (Alternative(key, "exact"),)))
                i += size
                matched = True
                break
            if not matched:
                i += 1
        clauses = [_with_name(c, known_terms) for c in clauses]
        verb = self._gerund_verb(tokens, known_terms) if gerunds and not request else None
        if verb is not None and clauses and clauses[0].original == tokens[0]:
            # "archiving tasks" asks what "archive tasks" asks: the verb (and its
            # synonyms) beside the word as asked, and the request in the base form
            more = (
                other_forms(tokens[0], self.inflections)
                if forms and self.inflections is not None
                else ()
            )
            clauses[0] = _with_verb(clauses[0], verb, syn, more)
            request = (verb, *tokens[1:n])
        if forms and self.inflections is not None:
            clauses = [_with_inflections(c, self.inflections) for c in clauses]
        clauses = _dedupe_clauses(clauses)
        return ParsedQuery(
            text=query,
            tokens=tuple(tokens),
            clauses=tuple(clauses),
            definitional=is_definitional(rest),  # not "what is the API to …"
            phrase=canonical_phrase(clauses),
            request=request,
        )

    def _gerund_verb(self, tokens: Sequence[str], known: frozenset[str]) -> str | None:
        """The verb a request of two or more words opens with as its gerund ("archiving
        tasks" → archive); None when it opens otherwise, without verb forms, or when the
        gerund is a name of the index ("logging" where a page is titled Logging)."""
        if self.inflections is None or len(tokens) < 2 or not tokens[0].endswith("ing"):
            return None
        word = tokens[0]
        verb = lemma(word)
        return verb if verb != word and word not in known else None


def _with_verb(clause: Clause, verb: str, syn: Synonyms, forms: Sequence[str] = ()) -> Clause:
    """``clause`` (a gerund) asked as ``verb``, with the verb's synonyms, and the gerund
    as asked after them, as another form of the verb (with ``forms``, the verb's other
    forms): those count where the verb is absent ("detecting" finds "detected")."""
    key = (stem(verb),)
    alts = [Alternative(key, "exact")]
    alts += [Alternative(t, "synonym") for t in syn.groups.get(key, ())]
    have = {a.tokens for a in alts}
    for tokens in (*(a.tokens for a in clause.alternatives), *((f,) for f in forms)):
        if tokens not in have:
            alts.append(Alternative(tokens, "inflection"))
            have.add(tokens)
    return Clause(clause.original, tuple(alts))


def _holds_stop_word(words: Sequence[str], stop: frozenset[str]) -> bool:
    """Whether a name's ``words`` hold a stop word, and a word that is none."""
    stops = sum(w in stop for w in words)
    return 0 < stops < len(words)


_NO_NAMES: tuple[dict[int, int], dict[int, str]] = ({}, {})


def _names(query: str) -> tuple[dict[int, int], dict[int, str]]:
    """Where ``query`` writes a name with underscores or a flag of several words: the
    index of its first token (as ``tokenize`` reads the query) and the index after its
    last; and a flag as written (``--no-verify``), by its first token."""
    text = normalize(query)  # (0.1 µs a question; NFKC makes several low lines "_")
    snake = "_" in text
    if not snake and "-" not in text:
        return _NO_NAMES
    flags = list(_FLAG.finditer(text))
    if not snake and not flags:
        return _NO_NAMES
    starts = {m.start(): k for k, m in enumerate(_WORD.finditer(text))}
    out: dict[int, int] = {}
    written: dict[int, str] = {}
    for m in _SNAKE.finditer(text) if snake else ():
        first = starts[m.start()]
        out[first] = first + len(_WORD.findall(m[0]))
    for m in flags:
        first = starts[m.start(1)]
        out[first] = first + len(_WORD.findall(m[1]))
        written[first] = m[0].lower()
    return out, written


def _with_name(clause: Clause, known: frozenset[str]) -> Clause:
    """A known term is looked up exactly as typed first, its stem second."""
    word = clause.original
    if " " in word or word not in known or stem(word) == word:
        return clause
    first = clause.alternatives[0]
    rest = tuple(a for a in clause.alternatives if a.tokens != (word,))
    if first.tokens == (stem(word),):
        rest = (Alternative(first.tokens, "plural"), *rest[1:])
    return Clause(word, (Alternative((word,), "exact"), *rest))


def other_forms(word: str, inflections: Callable[[str], Sequence[str]]) -> tuple[str, ...]:
    """The other forms of the verb ``word`` is a form of, as index terms (stemmed), in
    order: "detecting" → detect, detected."""
    return tuple(sorted({stem(f) for f in inflections(word)} - {word}))


def _with_inflections(clause: Clause, inflections: Callable[[str], Sequence[str]]) -> Clause:
    """A single word with no other alternative (no synonyms, no stem of a known name)
    also matches the other forms of its verb, as the alternatives after it: "detecting"
    finds "detected" and "detect"."""
    word = clause.original
    if len(clause.alternatives) != 1 or " " in word:
        return clause
    first = clause.alternatives[0]
    forms = [f for f in other_forms(word, inflections) if f not in first.tokens]
    if not forms:
        return clause
    more = (Alternative((f,), "inflection") for f in forms)
    return Clause(word, (first, *more))


# British and American spellings of one word: each rule is (ending, other ending),
# applied both ways. The endings of English spelling, not words: organise / organize,
# analyse / analyze, colour / color, centre / center, cancelled / canceled, catalogue /
# catalog, licence / license.
_SPELLINGS: tuple[tuple[str, str], ...] = (
    *((f"is{e}", f"iz{e}") for e in ("e", "es", "ed", "ing", "ation", "ations", "er", "ers")),
    *((f"ys{e}", f"yz{e}") for e in ("e", "es", "ed", "ing")),
    *((f"our{e}", f"or{e}") for e in ("", "s", "ed", "ing", "ite", "ites", "able", "ful")),
    ("tre", "ter"),
    ("tres", "ters"),
    # the l doubled after the unstressed -el or -al of the word (cancelled, labelled,
    # signalled), not after a stressed vowel: filled is no filed, polled no poled
    *((f"{v}ll{e}", f"{v}l{e}") for v in ("e", "a") for e in ("ed", "ing", "er", "ers")),
    ("ogue", "og"),
    ("ogues", "ogs"),
    ("ence", "ense"),
)


def _spelling_table() -> dict[str, tuple[str, ...]]:
    table: dict[str, list[str]] = {}
    for a, b in _SPELLINGS:
        table.setdefault(a, []).append(b)
        table.setdefault(b, []).append(a)
    return {ending: tuple(others) for ending, others in table.items()}


_SPELLING_TABLE = _spelling_table()
_SPELLING_LENGTHS = sorted({len(e) for e in _SPELLING_TABLE}, reverse=True)


@functools.lru_cache(maxsize=4096)
def spelling_variants(word: str) -> tuple[str, ...]:
    """The word spelled the other way, British or American ("organisation" →
    organization, "canceled" → cancelled), by its ending; () for a word of under five
    letters or none of those endings. A variant need not be a word: the caller keeps
    the ones the index holds."""
    if len(word) < 5 or not word.isalpha():
        return ()
    out: list[str] = []
    for k in _SPELLING_LENGTHS:
        others = _SPELLING_TABLE.get(word[-k:])
        if others is not None and len(word) - k >= 2:
            out += (word[:-k] + other for other in others)
    return tuple(dict.fromkeys(v for v in out if v != word))


def canonical_phrase(clauses: Sequence[Clause]) -> tuple[str, ...]:
    """The query as one phrase, after rewrites and typo fixes: each clause's first form."""
    return tuple(t for c in clauses for t in c.alternatives[0].tokens)


def _dedupe_clauses(clauses: Sequence[Clause]) -> list[Clause]:
    """Each concept once: a repeated word, or a word of the same synonym group as an
    earlier one ("make a new key": make and new both stand for create), adds nothing."""
    out: list[Clause] = []
    seen: set[str] = set()
    groups: set[frozenset[tuple[str, ...]]] = set()
    for c in clauses:
        group = frozenset(a.tokens for a in c.alternatives)
        if c.original in seen or (len(group) > 1 and group in groups):
            continue
        seen.add(c.original)
        groups.add(group)
        out.append(c)
    return out
