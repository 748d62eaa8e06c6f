"""The English lexicon: which words are English words, which are verbs, and the regular
forms of each verb.

The forms come from ``lemminflect``'s lookup table (``resources/lemma_lu.csv.gz``, one
``form,upos,lemma`` line per form: 69,362 words, 27,364 verb forms), read from the
installed package without importing it: its import loads numpy and the whole
lemmatizer (330 ms, against 40 ms for the table). What is built from the table is kept
in groundkb's cache folder (``verb-forms-<format>-<python>.marshal``, rebuilt when the
table changes), so a fresh process reads it in a few milliseconds. The name carries the
file's format and the Python version, whose marshal format it is: versions of groundkb
or of Python that share a cache folder each keep their own file instead of rewriting
one another's at every start (a 48 ms rebuild each time). Without the package or the table the
lexicon is empty, and what uses it turns itself off.

Three uses:

* typo correction: a word the lexicon knows is no typo, even when the docs lack it
  ("bread" is not "break"; ``search/engine.py``);
* API questions: whether the first word of a question is a verb (``apinames.py``);
* query analysis: the other *regular* forms of a verb in a question ("detecting" →
  detect, detects, detected), searched beside the word as typed. Regular means that
  the form and the word both begin with the lemma less its last letter, so "detecting"
  and "detected" are forms of one verb, but "left" is not matched to "leave" nor "ran"
  to "run": an irregular form is as often another word ("left hand", "saw").
"""

from __future__ import annotations

import contextlib
import gzip
import importlib.util
import marshal
import re
import sys
from bisect import bisect_left
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ..cachedir import default_cache_dir, write_atomic

_VERB_LINE = re.compile(r"\n([^,\n]+),verb,([^\n]+)")
_FORM_LINE = re.compile(r"\n([^,\n]+),(?:noun|verb|adj|adv),")
_CACHE_FORMAT = 4  # of the cached maps (``_verbs``)


@dataclass(frozen=True, slots=True)
class _Map:
    """A map from strings to strings as two lists, the keys sorted: read back from the
    cache as two lists of strings (a dict of lists took three times as long to unmarshal,
    and every fresh process that parses a question reads it)."""

    keys: list[str]
    values: list[str]

    @classmethod
    def of(cls, items: dict[str, list[str]], sep: str) -> _Map:
        keys = sorted(items)
        return cls(keys, [sep.join(items[k]) for k in keys])

    def get(self, key: str) -> str | None:
        i = bisect_left(self.keys, key)
        return self.values[i] if i < len(self.keys) and self.keys[i] == key else None


_EMPTY = _Map([], [])


@dataclass(frozen=True, slots=True)
class _Verbs:
    forms: list[str]  # every verb form, sorted
    lemmas: _Map  # a regular form → its verbs, one a line
    regular: _Map  # a verb → its regular forms, one a line
    words: str = ""  # every form of a noun, verb, adjective or adverb, one a line


@cache
def _verbs() -> _Verbs:
    """The verb forms of the table (empty when it cannot be read), from the cache folder
    when it holds them for this version of the table."""
    table = _table()
    if table is None:
        return _Verbs([], _EMPTY, _EMPTY)
    st = table.stat()
    # marshal's format belongs to the Python version: one that reads another's rebuilds
    version = sys.implementation.cache_tag
    stamp = [_CACHE_FORMAT, version, str(table.resolve()), st.st_size, st.st_mtime_ns, st.st_ino]
    kept = default_cache_dir() / f"verb-forms-{_CACHE_FORMAT}-{version}.marshal"
    try:
        got = marshal.loads(kept.read_bytes())
        if isinstance(got, tuple) and len(got) == 7 and got[0] == stamp:
            _, forms, lemma_keys, lemma_values, verb_keys, verb_forms, words = got
            return _Verbs(forms, _Map(lemma_keys, lemma_values), _Map(verb_keys, verb_forms), words)
    except (OSError, ValueError, EOFError, TypeError):
        pass
    try:
        text = "\n" + gzip.decompress(table.read_bytes()).decode("utf-8")
    except (OSError, EOFError, gzip.BadGzipFile, UnicodeDecodeError):
        return _Verbs([], _EMPTY, _EMPTY)
    found: list[str] = []
    lemmas: dict[str, list[str]] = {}
    regular: dict[str, list[str]] = {}
    for form, lemma_text in _VERB_LINE.findall(text):
        found.append(form)
        for lemma in lemma_text.split("/"):  # "'d" is a form of will and of have
            if form.startswith(lemma[:-1] if len(lemma) > 3 else lemma):
                lemmas.setdefault(form, []).append(lemma)
                regular.setdefault(lemma, []).append(form)
    forms = sorted(set(found))
    of, verbs = _Map.of(lemmas, "\n"), _Map.of(regular, "\n")
    # one string, split when a typo is first looked at: most searches never need it
    words = "\n".join(sorted({w.lower() for w in _FORM_LINE.findall(text)}))
    with contextlib.suppress(OSError):  # a read-only cache only costs reading the table
        kept_maps = (stamp, forms, of.keys, of.values, verbs.keys, verbs.values, words)
        write_atomic(kept, marshal.dumps(kept_maps))
    return _Verbs(forms, of, verbs, words)


def _table() -> Path | None:
    """``lemminflect``'s lookup table, or None without the package."""
    spec = importlib.util.find_spec("lemminflect")
    for folder in list(spec.submodule_search_locations or ()) if spec is not None else []:
        path = Path(folder) / "resources" / "lemma_lu.csv.gz"
        if path.is_file():
            return path
    return None


@cache
def identity() -> str:
    """What the lexicon is read from (the table's path, size and time; "" without one):
    what is built with the lexicon is kept under it."""
    table = _table()
    if table is None:
        return ""
    st = table.stat()
    return f"{table.resolve()}:{st.st_size}:{st.st_mtime_ns}"


@cache
def english_verbs() -> frozenset[str]:
    """Every word form the lexicon knows as a verb (empty without the lexicon)."""
    return frozenset(_verbs().forms)


def base_verb(word: str) -> bool:
    """Whether ``word`` is a verb as a request names it: its base form ("close",
    "set"), not another form ("details", "logs", "sent"), which opens a question as a
    noun far more often. False without the lexicon."""
    return _verbs().regular.get(word) is not None


@cache
def english_words() -> frozenset[str]:
    """Every form of a noun, verb, adjective or adverb the lexicon knows, lower case
    (empty without the lexicon): a word a typo correction leaves as typed."""
    words = _verbs().words
    return frozenset(words.split("\n")) if words else frozenset()


def inflections(word: str) -> tuple[str, ...]:
    """The other regular forms of the verb ``word`` is a form of (``()`` when it is not
    one, or without the lexicon): ``inflections("detecting")`` → ``("detect",
    "detected", "detects")``."""
    verbs = _verbs()
    of = verbs.lemmas.get(word)
    if not of:
        return ()
    forms = {
        f for lemma in of.split("\n") for f in (verbs.regular.get(lemma) or "").split("\n") if f
    }
    return tuple(sorted(forms - {word}))


def lemma(word: str) -> str:
    """The verb ``word`` is a regular form of ("refunds" → refund), else ``word`` as it
    is (and without the lexicon)."""
    of = _verbs().lemmas.get(word)
    return of.split("\n", 1)[0] if of else word


def forget() -> None:
    """Drop the lexicon read so far (the next use reads it again)."""
    _verbs.cache_clear()
    english_verbs.cache_clear()
    english_words.cache_clear()
    identity.cache_clear()


def load() -> None:
    """Read the lexicon now (a server does while it warms up), the words too."""
    english_words()


__all__ = ["english_verbs", "english_words", "forget", "identity", "inflections", "load"]
