"""Search with evidence: query analysis, typo correction, BM25 candidates from the store
rescored here, vector candidates and fusion (hybrid), evidence scoring, de-duplication per
document, verdicts and multi-intent queries.

Ranking (documented in docs/ranking.md):

    rank(chunk)     = BM25F(chunk) × (1 + boost)   [× operation fit, API documents]
    BM25F           = Σ over clauses  max over alternatives  match_factor · BM25(alt)
                      (FTS5's formula: field weights scale tf, one length normalization;
                       k1, b and the weights from settings)
    boost           = 2·title_phrase_boost when the query phrase equals the title or an
                      alias, title_phrase_boost when a multi-word query phrase is in one

The pieces live beside it: the BM25F rescoring in ``rescore.py``, hybrid fusion in
``fusion.py``, evidence scores in ``evidence.py``, verdicts in ``verdict.py``, hits and
their order in ``hits.py``, the command look-up and multi-intent paths in
``special.py``, the data derived from the whole index in ``derived.py``, the threads
that find vector candidates beside keyword search in ``background.py``, and the
optional rerank model in ``rerank.py``.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import math
import re
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .. import bounds
from ..analyze import lexicon
from ..analyze.text import (
    Alternative,
    Analyzer,
    Clause,
    ParsedQuery,
    canonical_phrase,
    context_words,
    other_forms,
    replace_words,
    request_text,
    spelling_variants,
    stem,
    tokenize,
    without_context,
    without_preamble,
)
from ..errors import InvalidInput
from ..models import Filters, Hit, SearchResult
from ..ops.querylog import error_text
from ..refreshing import Refreshing
from ..settings import Settings
from ..store.base import KeywordMatch, Store, chunk_key
from .apis import ApiWeights, operation_factor
from .apis import near_miss as api_near_miss
from .background import KEYWORD_ONLY, PendingVectors, background
from .candidates import COMMON_MIN_CHUNKS, COMMON_RATIO, candidate_query, clause_df, correction
from .commands import CommandIndex
from .derived import Derived
from .evidence import score_evidence
from .fusion import fuse
from .hits import copies, dedupe, distinct_titles, hit_of, lead_first, monotone
from .meaning import Meaning, group_meanings
from .rerank import endpoint_from_settings, rerank_ranked, reranker_for
from .rescore import Prepared, Ranked, bm25f, prepare, title_match
from .snapshot import kept_or_built
from .special import command_result, compared, compared_answer, multi_intent
from .verdict import (
    SCORED_ANSWERS,
    ClauseStat,
    Scored,
    Signals,
    decide,
    measure,
    model_doubts,
    model_from_settings,
    near_miss,
)

if TYPE_CHECKING:
    from ..embed import Embedder
    from .vectors import Neighbours

log = logging.getLogger(__name__)

MAX_QUERY_CHARS = bounds.MAX_QUERY_CHARS
DF_CACHE_TERMS = 100_000  # document frequencies kept between index changes (_df)
# A word the index lacks is split into two indexed words each in this many chunks or
# more (one chunk is as likely a typo of the docs as the term).
SPLIT_MIN_CHUNKS = 2
EMPTY_INDEX = "the index is empty: run `groundkb ingest` or `groundkb sync`"


@functools.lru_cache(maxsize=4096)
def _other_forms(word: str, inflections: Callable[[str], Sequence[str]]) -> tuple[str, ...]:
    return other_forms(word, inflections)


def _unscored(r: Ranked, cosines: Mapping[str, float]) -> Scored:
    """A candidate whose evidence is not needed (yet): its rank, document and cosine."""
    rank, m, exact, in_title, _ = r
    return Scored(
        m, rank, 0.0, (), False, exact, in_title or bool(exact), (), cosine=cosines.get(m.chunk_id)
    )


class Searcher:
    """Runs searches over any :class:`~groundkb.store.base.Store`."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        analyzer: Analyzer,
        embedder: Callable[[], Embedder | None] | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.analyzer = analyzer
        self._embedder = embedder or (lambda: None)
        # Derived data is rebuilt in the background while the index changes, the previous
        # version serving meanwhile (see refreshing.py); a search uses the version it started
        # with throughout. The store's change token says when it is stale.
        self._derived_data: Refreshing[str, Derived] = Refreshing(
            self.store.change_token, self._build_derived
        )
        self._local = threading.local()  # the derived data this thread's search started with
        endpoint = endpoint_from_settings(settings)  # a bad rerank setting fails here
        self._reranker = reranker_for(endpoint) if endpoint is not None else None
        self._weights: tuple[Settings, ApiWeights] | None = None  # see _api_weights

    # ------------------------------------------------------------ derived data
    def derived(self) -> Derived:
        return self._derived_data.get()

    def warm(self) -> None:
        """Build the derived data and the typo vocabulary now, which the first search
        and the first unknown word would otherwise wait for."""
        apis = bool(self.derived().apis.summaries)
        if apis or self.analyzer.inflections is not None or self.settings.typo_correction:
            # the verbs of API questions, the verb forms of queries, the English words
            # a typo correction leaves alone
            lexicon.load()
        self.store.similar_terms("warm", 1)  # the store loads its vocabulary to answer

    def read_ahead(self) -> None:
        """Have the store keep now what the first asking of a question reads from the
        keyword index one piece at a time: the scores of every word a question can search
        alone (past ``COMMON_MIN_CHUNKS`` chunks the common ones go in pairs;
        ``candidates.py``), and the chunks' rows."""
        chunks = self.derived().n_chunks
        alone = int(COMMON_RATIO * chunks) if chunks >= COMMON_MIN_CHUNKS else None
        self.store.read_ahead(self.settings.weights, alone)

    def invalidate(self) -> None:
        """The index was changed by this process: the next search rebuilds first."""
        self._derived_data.invalidate()

    def _build_derived(self, token: str) -> Derived:
        return kept_or_built(self.store, token)

    def commands_for(self, filters: Filters, derived: Derived | None = None) -> CommandIndex:
        """The command index of the commands ``filters`` allow (``Derived.commands_for``)."""
        return (derived or self.derived()).commands_for(filters)

    def _current(self) -> Derived:
        """The derived data this thread's search started with (no store round trip)."""
        current: Derived | None = getattr(self._local, "derived", None)
        return current if current is not None else self.derived()

    def _df(self, parsed: ParsedQuery, more: Collection[str] = ()) -> dict[str, int]:
        """Document frequencies of every term of the query's clauses, and of ``more``
        (one store call for the terms not seen since the index last changed). The cache
        holds at most ``DF_CACHE_TERMS`` terms: past that it starts again from this
        query's terms (a server that never sees the index change would otherwise keep
        every word it was ever asked, typos included). Callers read the dictionary this
        returns."""
        terms = {t for c in parsed.clauses for a in c.alternatives for t in a.tokens}
        terms.update(more)
        return self._frequencies(terms)

    def _frequencies(self, terms: Collection[str]) -> dict[str, int]:
        """Document frequencies of ``terms`` (see ``_df``)."""
        d = self._current()
        df = d.df
        # not ``terms - df.keys()``: that walks every term cached so far (a view is no
        # set), a cost that grew with each new query until the index changed
        missing = [t for t in terms if t not in df]
        if missing:
            # Fetched after the token was read: a write in between may have added chunks,
            # so a frequency is capped at the chunk count the rest of this data has.
            fetched = self.store.term_stats(missing).df
            if len(df) + len(fetched) > DF_CACHE_TERMS:
                # a new dictionary: another thread may be reading the old one
                df = {t: df[t] for t in terms if t in df}
                d.df = df
            df.update({t: min(n, d.n_chunks) for t, n in fetched.items()})
        return df

    # ------------------------------------------------------------------ search
    def search(
        self, query: str, filters: Filters | None = None, limit: int | None = None
    ) -> SearchResult:
        started = time.perf_counter()
        filters = filters or Filters()
        limit = self.settings.default_limit if limit is None else limit
        text = query.strip()
        if not text:
            raise InvalidInput("query: must not be empty")
        if len(text) > MAX_QUERY_CHARS:
            raise InvalidInput(f"query is longer than {MAX_QUERY_CHARS} characters")
        if limit < 1 or limit > 100:
            raise InvalidInput("limit must be between 1 and 100")
        derived = self.derived()
        outer = getattr(self._local, "derived", None)
        self._local.derived = derived  # one version of the derived data per search
        # "is there a doc on orbit sync run": the request, without the words asking for
        # a page, an endpoint or a command, is what names a command or two topics and
        # what the query vector is made of
        try:
            # "Quick question: how do I …": the question without sentences that converse
            text = without_preamble(text)
            # "In Orbit, how do I …": the question without the name, asked of Orbit's docs
            text, narrowed = self._context_free(text, filters)
            text = without_preamble(text)  # "I'm new to Orbit. How do I …"
            asked_of = narrowed.sources if narrowed is not filters else ()
            filters, request = narrowed, request_text(text)
            topics = compared(request)
            if topics is not None:  # "what's the difference between X and Y": X and Y
                text = request = " and ".join(topics)
            # "the difference between git merge and git rebase" names two commands:
            # each is looked up as one, by its part of the question (below)
            looked_up = None if topics else self._command(request, filters, limit, derived)
            if looked_up is not None:
                result = looked_up
            else:
                vectors = self._semantic(request, filters, limit)
                result = self._keyword(text, filters, limit, vectors, phrase=topics is None)
                # "workspace and widgets": two topics, each answered, answer with both
                # (each part is searched the same way as the whole)
                hybrid = result.mode != "keyword"
                part = functools.partial(self._search_part, filters=filters, limit=limit,
                                         semantic=hybrid, commands=topics is not None)  # fmt: skip
                parts = multi_intent(request, limit, part, comparing=topics is not None)
                if parts is not None:
                    result = replace(parts, notice=result.notice)
                elif topics is not None:
                    result = compared_answer(result, topics)
        finally:
            self._local.derived = outer
        result = replace(result, query=query.strip(), hits=monotone(result.hits), asked_of=asked_of)
        took = (time.perf_counter() - started) * 1000
        log.debug(
            "search %r -> %s (%s) %d hits in %.1f ms",
            text,
            result.verdict.kind,
            result.verdict.reason,
            len(result.hits),
            took,
        )
        return replace(result, took_ms=round(took, 2))

    def parse(self, text: str, forms: bool = True) -> tuple[ParsedQuery, str]:
        """Analyze a query and correct words the index does not know; ``forms``: keep
        the other forms of its verbs (those the index holds)."""
        d = self._current()
        parsed = self._present_forms(self.analyzer.parse(text, d.known_terms, forms))
        if respelled := self._respelled(parsed):
            # the same words as the docs spell them, for everything that reads the question
            text = replace_words(text, respelled)
            parsed = self._present_forms(self.analyzer.parse(text, d.known_terms, forms))
        parsed = self._gerund_as_used(parsed, forms)
        # In a long question an unknown word is more likely a real word the docs do not
        # use than a typo; "correcting" it adds noise (measured on the eval sets). A word
        # written as one that the docs write as two is no guess: split at any length.
        typos = (
            self.settings.typo_correction and len(parsed.clauses) <= self.settings.typo_max_terms
        )
        clauses: list[Clause] = []
        splits: list[str] = []  # the words searched as two (``_split``)
        df = self._df(parsed)
        for clause in parsed.clauses:
            if any(all(df.get(t, 0) > 0 for t in a.tokens) for a in clause.alternatives):
                clauses.append(clause)
                continue
            word = clause.original
            fixed = self._correct(word) if typos and " " not in word else None
            last = clause is parsed.clauses[-1]
            if fixed is None and typos and last and not _is_flag(word, text):
                fixed = self._complete(word)
            if fixed is None:
                pair = self._split(word) if self.settings.typo_correction else None
                if pair is not None:
                    splits.append(word)
                    clauses.append(Clause(word, (Alternative(pair, "typo"),)))
                else:
                    clauses.append(clause)
                continue
            # the word the index has, not its other forms
            fixed_clause = self.analyzer.parse(fixed, d.known_terms, forms=False).clauses
            alts = [Alternative(a.tokens, "typo") for c in fixed_clause for a in c.alternatives]
            clauses.append(Clause(word, tuple(alts) or (Alternative((fixed,), "typo"),)))
        parsed = replace(
            parsed, clauses=tuple(clauses), phrase=canonical_phrase(clauses), split=tuple(splits)
        )
        return parsed, did_you_mean(parsed)

    def _gerund_as_used(self, parsed: ParsedQuery, forms: bool) -> ParsedQuery:
        """A request that opens with a gerund is asked as its verb, the gerund counting
        where the verb is absent (``Analyzer.parse``: "archiving tasks"). Where the docs
        write the gerund at least as often as the verb ("billing" beside "bill", "teaching"
        beside "teach"), the gerund is a word of their own: the question is read as
        written, as any other word (its verb's forms counting where it is absent, in
        keyword search), and the request is no longer a verb's."""
        if not parsed.request or not parsed.clauses:
            return parsed
        first = parsed.clauses[0]
        word = first.original
        lead = first.alternatives[0]
        asked = Alternative((word,), "inflection")
        if lead.kind != "exact" or lead.tokens == (word,) or asked not in first.alternatives:
            return parsed
        df = self._frequencies({word, *lead.tokens})
        if df.get(word, 0) < min(df.get(t, 0) for t in lead.tokens):
            return parsed
        known = self._current().known_terms
        return self._present_forms(self.analyzer.parse(parsed.text, known, forms, gerunds=False))

    def _respelled(self, parsed: ParsedQuery) -> dict[str, str]:
        """The question's words the index lacks that it holds spelled the other way,
        British or American ("organisation" where the docs say organization, "colours"
        where they say colors; ``spelling_variants``), each with that spelling."""
        variants = {
            c.original: v
            for c in parsed.clauses
            if all(len(a.tokens) == 1 for a in c.alternatives)
            and (v := spelling_variants(c.original))
        }
        if not variants:
            return {}
        df = self._df(parsed, {stem(x) for vs in variants.values() for x in vs})
        known = {  # the words the index knows as asked (or by a synonym)
            c.original
            for c in parsed.clauses
            if any(df.get(a.tokens[0], 0) for a in c.alternatives)
        }
        out = {}
        for word, others in variants.items():
            held = next((x for x in others if df.get(stem(x), 0) > 0), None)
            if word not in known and held is not None:
                out[word] = held
        return out

    def _split(self, word: str) -> tuple[str, str] | None:
        """Two indexed words that ``word``, unknown to the index, runs together
        ("noninteractive" → non interactive, "caseinsensitive" → case insensitive), as
        index terms, or None. Never a word of the English lexicon: that is a word the
        docs do not use ("wallpaper" is no wall paper, "coming" no com ing). Each part
        has three letters or more and is in ``SPLIT_MIN_CHUNKS`` chunks; of several
        splits, the one whose rarer part is the most common. The pair counts as a
        phrase: only a chunk that writes the two words side by side holds it."""
        if len(word) < 6 or not word.isalpha() or word in lexicon.english_words():
            return None
        splits = [(word[:i], stem(word[i:])) for i in range(3, len(word) - 2)]
        df = self._frequencies({t for pair in splits for t in pair})
        held = [p for p in splits if min(df.get(p[0], 0), df.get(p[1], 0)) >= SPLIT_MIN_CHUNKS]
        return max(held, key=lambda p: min(df[p[0]], df[p[1]])) if held else None

    def _present_forms(self, parsed: ParsedQuery) -> ParsedQuery:
        """The query without the other forms of its verbs (``inflection`` alternatives)
        that the index does not hold: they could match nothing."""
        if not any(a.kind == "inflection" for c in parsed.clauses for a in c.alternatives):
            return parsed
        df = self._df(parsed)
        clauses = tuple(
            Clause(
                c.original,
                tuple(
                    a
                    for a in c.alternatives
                    if a.kind != "inflection" or df.get(a.tokens[0], 0) > 0
                ),
            )
            for c in parsed.clauses
        )
        return replace(parsed, clauses=clauses)

    def _correct(self, word: str) -> str | None:
        """The indexed word ``word`` is most likely a typo of, or None.

        One edit, as in optimal string alignment (a swap of two neighbouring letters is
        one edit, "burndwon" → "burndown"), between the word's index form and an
        indexed term (the index holds "notification": "notifcations" is one edit from
        it, through its singular), and never in the first letter, which people rarely
        mistype. A real word the index lacks must not become a near miss: a word the
        English lexicon knows ("bread", "mode", "neural") is left as typed, and a
        second edit found almost only such words (expiration → exploration,
        calculation → calculator; docs/benchmarks.md).
        """
        if len(word) < 4 or word.isdigit() or word in lexicon.english_words():
            return None
        term = stem(word)
        similar = self.store.similar_terms(term, 1, first_letter=True)
        return correction(term, similar, self._current().known_terms)

    def _complete(self, word: str) -> str | None:
        """The name a half-typed last word of a short question stands for ("auto-arch" →
        archive), among the names the index knows (``Derived.completion``), or None.
        Only the last word: that is where typing stops."""
        if len(word) < 3 or word.isdigit() or " " in word:
            return None
        return self._current().completion(word)

    # ---------------------------------------------------------------- context
    def _context_free(self, text: str, filters: Filters) -> tuple[str, Filters]:
        """``text`` without the words that only set its context (``without_context``)
        and name a product: nearly every document (``ubiquitous_share``) of some sources
        holds the word, and few of the others' do (``_named_sources``). On one
        product's docs the name says nothing about which page answers, and would make a
        question about something else look covered; among several products' docs it
        says which is meant, so the search is narrowed to their sources ("in Stripe, how
        do I refund a payment" asks Stripe's docs for "how do I refund a payment").
        Counted over the sources ``filters`` allow and the caller may read."""
        share = self.settings.ubiquitous_share
        stop = self.analyzer.stop_words
        # most questions set no context: three regular expressions and nothing more
        words = {w: stem(w) for w in context_words(text) if w not in stop and not w.isdigit()}
        if share <= 0 or not words:
            return text, filters
        d = self._current()
        documents = {
            s: n for s, n in d.documents.items() if not filters.sources or s in filters.sources
        }
        big = [n for n in documents.values() if n >= self.settings.ubiquitous_min_docs]
        if not big:
            return text, filters
        # a document that holds a word has a chunk that does: the chunk counts (cached
        # already for most words) rule most words out before documents are counted
        chunks = self._frequencies(set(words.values()))
        maybe = {w: t for w, t in words.items() if chunks.get(t, 0) >= share * min(big)}
        if not maybe:
            return text, filters
        held = d.docs_holding
        if missing := {t for t in maybe.values() if t not in held}:
            held.update(self.store.documents_holding(missing))
        names: dict[str, frozenset[str]] = {}
        for w, t in maybe.items():
            if named := _named_sources(
                held[t], documents, share, self.settings.ubiquitous_min_docs
            ):
                names[w] = named
        if not names:
            return text, filters
        sources = frozenset.intersection(*names.values())
        # a program's name that starts a command stays: "is there a doc on orbit
        # get-users" asks about the command `orbit get-users`
        commands = self.commands_for(filters, d)
        said = without_context(text, names, commands.is_command_shaped)
        if not sources or not tokenize(said):
            return text, filters  # two products named, or nothing else asked
        if sources != documents.keys():
            filters = replace(filters, sources=tuple(sorted(sources)))
        return said, filters

    # --------------------------------------------------------------- semantic
    def _semantic(self, text: str, filters: Filters, limit: int) -> PendingVectors:
        """Start finding the vector candidates of ``text`` in the background (hybrid and
        vector modes), or say why the search is keyword-only."""
        wanted = self.settings.retrieval
        if wanted == "keyword":
            return KEYWORD_ONLY
        try:
            embedder = self._embedder()
        except Exception as exc:  # any embedder failure degrades, never fails the search
            why = error_text(exc)
            log.warning("opening the embedder failed, searching by keyword: %s", why)
            return PendingVectors("keyword", f"embedder failed ({why}); keyword search only")
        if embedder is None:  # keyword-only by configuration: nothing to report
            return KEYWORD_ONLY
        stored = self.store.embedder()  # a store error is the search's error
        if stored is None and self._current().empty:
            return PendingVectors("keyword", EMPTY_INDEX)
        if stored is None or stored[0] != embedder.name:
            have = stored[0] if stored else "no embeddings"
            return PendingVectors(
                "keyword",
                (
                    f"index has {have}, configured embedder is {embedder.name}: "
                    "run `groundkb reindex`; keyword search only"
                ),
            )
        # Hybrid search has the keyword candidates too; vector search alone must fill
        # the results, however many chunks of one document it finds.
        fill = (
            limit * 2
            if wanted == "hybrid"
            else limit * max(1, self.settings.max_chunks_per_doc) + 10
        )
        k = max(self.settings.vector_candidates, fill)
        # in the caller's context (the caller and shell the query log and audit name)
        context = contextvars.copy_context()
        found = background().submit(context.run, self._nearest, embedder, text, filters, k)
        # Let go of the GIL for a moment: the worker starts embedding the query now,
        # not when the keyword side next waits on SQLite (docs/benchmarks.md, "The
        # query's embedding starts at once").
        time.sleep(0)
        return PendingVectors(wanted, found=found)

    def _nearest(self, embedder: Embedder, text: str, filters: Filters, k: int) -> Neighbours | str:
        """The nearest chunks to ``text``, or why the embedder failed (runs in the
        background while keyword search runs)."""
        from .vectors import Neighbours, to_bytes

        try:
            vector = to_bytes(embedder.embed_query(text)[None, :])[0]
        except Exception as exc:  # any embedder failure degrades, never fails the search
            why = error_text(exc)
            log.warning("embedding the query failed, searching by keyword: %s", why)
            return f"embedder failed ({why}); keyword search only"
        return Neighbours(self.store.nearest(vector, filters, k), self.store, vector)

    def _keyword(
        self,
        text: str,
        filters: Filters,
        limit: int,
        vectors: PendingVectors = KEYWORD_ONLY,
        rerank: bool = True,
        phrase: bool = True,
    ) -> SearchResult:
        """Keyword candidates rescored, fused with the vector candidates (when
        ``vectors`` has them), reordered by the rerank model (when one is configured and
        ``rerank``), judged and cut to hits; ``phrase``: the question may be a title or
        an alias, or a phrase in one (not "X and Y" joined from a comparison: "a board
        and a view" is not the page titled "Board view")."""
        # The other forms of a verb help keyword search alone: in hybrid search the
        # vectors already match word forms, and the forms measured slightly worse there
        # (docs/benchmarks.md, "Verb forms").
        parsed, corrected = self.parse(text, forms=vectors.found is None)
        if not phrase:
            parsed = replace(parsed, phrase=())
        terms = tuple(c.original for c in parsed.clauses)
        if not parsed.clauses:
            _, mode, notice = vectors.result()
            model = model_from_settings(self.settings, mode)
            verdict, _ = decide(parsed, Signals({}), model, False)
            return SearchResult(text, verdict, (), terms=terms, mode=mode, notice=notice)
        pool = max(self.settings.candidates, limit * 2)
        query = candidate_query(
            parsed,
            self._df(parsed),
            self._current().n_chunks,
            self.settings.weights,
            filters,
            pool,
            self.settings.candidate_clauses,
        )
        matches = self.store.keyword_candidates(query)
        matches = [*matches, *self._named_operations(parsed, filters, matches, pool)]
        # Rank every candidate (cheap), then gather evidence for the ones that can be shown.
        prep = self._prepared(parsed)
        ranked = sorted((self._rank(m, parsed, prep=prep) for m in matches), key=lambda r: -r[0])
        unheld = _unheld_splits(parsed, matches, prep)
        if unheld and corrected:
            # no page writes those words side by side: no split to offer
            corrected = did_you_mean(parsed, {c.original for c in unheld})
        # what does not depend on the vectors, computed before waiting for them
        stats = self._clause_stats(parsed, {c.original for c in unheld})
        semantic: Sequence[tuple[str, float]] | None
        semantic, mode, notice = vectors.result()
        model = model_from_settings(self.settings, mode)
        if semantic and not matches and semantic[0][1] < self.settings.min_vector_hit:
            semantic = []  # nothing shares a word and the nearest meaning is far: no hits
        cosines: dict[str, float] = {}
        ranks: dict[str, dict[str, int]] = {}
        firsts: tuple[str, ...] = ()  # each retriever's first document (hybrid)
        if semantic is not None:
            if mode == "hybrid" and ranked and semantic:
                firsts = (ranked[0][1].doc_id, chunk_key(semantic[0][0])[0])
            ranked, cosines, ranks = fuse(
                ranked,
                semantic,
                mode,
                self.settings,
                lambda ids, keyword: [
                    self._rank(m, parsed, keyword, prep) for m in self.store.chunk_matches(ids)
                ],
            )
        none_answers = False
        if self._reranker is not None and rerank and ranked:
            ranked, none_answers, why = rerank_ranked(
                self._reranker, text, ranked, self._current().apis
            )
            notice = "; ".join(n for n in (notice, why) if n)
        if copied := copies([r[1] for r in ranked]):
            # one page under two ids is one page: its copies would fill the hits and
            # crowd the other meanings out of the verdict's window
            ranked = [r for r in ranked if r[1].doc_id not in copied]
        keep = limit * max(1, self.settings.max_chunks_per_doc) + 10
        clause_weights = [c.weight for c in stats]
        # Evidence (coverage, matched words, explanation) only for what the verdict and
        # the hits read: every candidate of the first three meanings, a meaning's lead
        # that is the question's exact title, and the hits. The rest are grouped into
        # meanings by their rank and document alone.
        window = ranked[:keep]
        families = self._current().apis.families
        groups = group_meanings(range(len(window)), lambda i: window[i][1], families)
        need = {i for g in groups[:3] for i in g.items}
        need.update(g.lead for g in groups if window[g.lead][2])
        pending: dict[int, Ranked] = {}
        scored = []
        for i, r in enumerate(window):
            if i in need:
                scored.append(self._score(r, parsed, clause_weights, cosines, prep))
            else:
                later = _unscored(r, cosines)
                pending[id(later)] = r
                scored.append(later)
        meanings = [Meaning(scored[g.lead], tuple(scored[i] for i in g.items)) for g in groups]
        signals = measure(parsed, stats, scored, families, bool(matches), firsts, meanings)
        deprecated = self._current().apis.deprecated
        verdict, signals = decide(parsed, signals, model, bool(matches), deprecated)
        if verdict.reason in SCORED_ANSWERS:
            lead = signals.meanings[0].lead
            if why := self._near_miss(lead.match, parsed):
                verdict = near_miss(verdict, lead, signals, why, deprecated)
            elif none_answers:
                verdict = model_doubts(verdict, scored[0], signals, deprecated)
        if verdict.reason in ("definition", "exact_title"):
            scored = lead_first(scored)
        hits = [
            self._score(pending[id(s)], parsed, clause_weights, cosines, prep)
            if id(s) in pending
            else s
            for s in dedupe(scored, limit, self.settings.max_chunks_per_doc)
        ]
        suggestions: tuple[str, ...] = ()
        if verdict.kind == "clarify":
            suggestions = tuple(dict.fromkeys(o.title for o in verdict.options))
        elif corrected:
            suggestions = (corrected,)
        if verdict.kind == "no_match" and not suggestions and matches:
            asked = frozenset(t for c in parsed.clauses for a in c.alternatives for t in a.tokens)
            suggestions = distinct_titles(scored, 3, asked)  # titles holding a question word
        retriever = "keyword" if semantic is None else mode
        top_rank = hits[0].rank if hits else 0.0
        out = []
        for rank, s in enumerate(hits, 1):
            # The top hit's score is the calibrated probability that it answers; the
            # others scale it by their rank score, so scores follow rank order.
            share = s.rank / top_rank if top_rank > 0 else (1.0 if rank == 1 else 0.0)
            hit = self._hit(s, rank, retriever, round(signals.answer * min(1.0, share), 4))
            cid = s.match.chunk_id
            if cid in cosines:
                hit = replace(
                    hit,
                    ranks={**ranks.get(cid, {}), retriever: rank},
                    explanation=(*hit.explanation, f"cosine {cosines[cid]:.3f}"),
                )
            elif semantic is not None:
                hit = replace(hit, ranks={**ranks.get(cid, {}), retriever: rank})
            out.append(hit)
        return SearchResult(
            query=text,
            verdict=verdict,
            hits=tuple(out),
            suggestions=suggestions,
            corrected_query=corrected,
            terms=terms,
            mode=mode,
            notice=notice,
            signals={
                **{k: round(v, 4) for k, v in signals.values.items()},
                "p_scope": round(signals.scope, 4),
                "p_answer": round(signals.answer, 4),
            },
        )

    def _command(
        self, text: str, filters: Filters, limit: int, derived: Derived | None = None
    ) -> SearchResult | None:
        """The result of ``text`` looked up in the command index (exactly, by completion
        or with suggestions), or None when it is no command's name."""
        if filters.types and "command" not in filters.types:
            return None
        commands = self.commands_for(filters, derived or self._current())
        command = commands.lookup(text)
        if command is None:
            return None
        return command_result(self.store, text, command, limit, self._hit, commands)

    def _search_part(
        self, part: str, filters: Filters, limit: int, semantic: bool, commands: bool = False
    ) -> SearchResult:
        """One part of a multi-intent question, searched the way the whole was;
        ``commands``: a command's name is looked up as one (a thing compared: "the
        difference between git merge and git rebase"; not "install" of "install and
        activate a plugin", though a program is named so)."""
        looked_up = self._command(part, filters, limit) if commands else None
        if looked_up is not None:
            return looked_up
        vectors = self._semantic(part, filters, limit) if semantic else KEYWORD_ONLY
        return self._keyword(part, filters, limit, vectors, rerank=False)

    def _named_operations(
        self, parsed: ParsedQuery, filters: Filters, have: Sequence[KeywordMatch], limit: int
    ) -> list[KeywordMatch]:
        """API operations on the resources the query names that keyword search missed
        (see ``search/apis.py``), as candidates of their own."""
        seen = {m.doc_id for m in have}
        wanted = self._current().apis.named_by(parsed.asked, limit, filters)
        return self.store.chunk_matches([f"{d.id}#0" for d in wanted if d.id not in seen])

    # ---------------------------------------------------------------- scoring
    def _clause_stats(self, parsed: ParsedQuery, unseen: Collection[str] = ()) -> list[ClauseStat]:
        """Per clause: the idf of how common it is (``clause_df``: its most frequent
        alternative the index has; an unseen clause gets the largest idf), and whether
        the index knows it as written or only after typo correction. The other forms of
        a verb count only for a word the index lacks as written: "getting" is known to
        an index that has "get", and as common as "get" (a form of a known verb is no
        sign that the question is about something the index does not cover). The
        clauses of ``unseen`` (their original words) count as the word as asked."""
        d = self._current()
        frequencies = self._df(parsed)
        out = []
        for asked in parsed.clauses:
            if asked.original in unseen:
                asked = Clause(asked.original, (Alternative((stem(asked.original),)),))
            alternatives = tuple(a for a in asked.alternatives if a.kind != "inflection")
            clause = Clause(asked.original, alternatives)
            found = [
                (min(frequencies.get(t, 0) for t in a.tokens), a.kind) for a in clause.alternatives
            ]
            df = clause_df(clause, frequencies)
            known = any(x > 0 and kind != "typo" for x, kind in found)
            if not known and (forms := self._verb_forms(asked)):
                frequencies = self._df(parsed, forms)
                form_df = max(frequencies.get(f, 0) for f in forms)
                if form_df > 0:
                    known, df = True, form_df
            typo = not known and any(x > 0 for x, _ in found)
            weight = math.log(1.0 + (d.n_chunks - df + 0.5) / (df + 0.5))
            out.append(ClauseStat(weight, known, typo))
        return out

    def _verb_forms(self, clause: Clause) -> tuple[str, ...]:
        """The other forms of a one-word clause's verb, as indexed terms: those the
        query kept, else the lexicon's (hybrid search parses without them)."""
        kept = tuple(a.tokens[0] for a in clause.alternatives if a.kind == "inflection")
        return kept or self._lexicon_forms(clause.original)

    def _lexicon_forms(self, word: str) -> tuple[str, ...]:
        """The other forms of the verb ``word`` as indexed terms, by the lexicon (cached
        per word)."""
        inflections = self.analyzer.inflections
        return () if inflections is None or " " in word else _other_forms(word, inflections)

    def _prepared(self, parsed: ParsedQuery) -> Prepared:
        """What scoring a candidate for ``parsed`` needs that does not depend on the
        candidate, computed once per query (kept for the thread's current query)."""
        d = self._current()
        cached: tuple[ParsedQuery, Derived, Prepared] | None = getattr(self._local, "prep", None)
        if cached is not None and cached[0] is parsed and cached[1] is d:
            return cached[2]
        st = self.settings
        df = self._df(parsed)
        prepared = prepare(
            parsed, df, d.n_chunks, d.avgdl, st.weights, st.bm25_k1, st.bm25_b, self._lexicon_forms
        )
        self._local.prep = (parsed, d, prepared)
        return prepared

    def _rank(
        self,
        m: KeywordMatch,
        parsed: ParsedQuery,
        keyword: bool = True,
        prep: Prepared | None = None,
    ) -> Ranked:
        """BM25F × (1 + boost), and whether the query phrase is the title or an alias.

        ``keyword=False`` for a candidate only vector search found: it has no keyword rank.
        ``prep``: ``parsed`` prepared, when the caller has it already.
        """
        prep = prep if prep is not None else self._prepared(parsed)
        bm25 = bm25f(m, prep) if keyword else 0.0
        exact, in_title = title_match(
            m, prep.phrase, self.analyzer.stop_words, prep.forms, prep.needle
        )
        boost = self.settings.title_phrase_boost
        rank = bm25 * (1 + (2 * boost if exact else boost if in_title else 0.0))
        if m.doc.operation_kind:
            rank *= self._operation_factor(m, parsed)
        return rank, m, exact, in_title, bm25

    def _operation_factor(self, m: KeywordMatch, parsed: ParsedQuery) -> float:
        """Rank factor of an API operation for the query (see ``apis.operation_factor``)."""
        apis = self._current().apis
        weights = self._api_weights()
        return operation_factor(parsed.asked, m.doc, m.doc_id in apis.superseded, weights, apis)

    def _near_miss(self, m: KeywordMatch, parsed: ParsedQuery) -> str:
        """Why the API operation ``m`` is not what the question asks (``apis.near_miss``),
        or '' (also for any other document)."""
        if not m.doc.operation_kind:
            return ""
        return api_near_miss(parsed.asked, m.doc, self._current().apis)

    def _api_weights(self) -> ApiWeights:
        """The constants of ``apis.operation_factor`` from the settings, built once per
        settings (every candidate of every question asks; a searcher may be given other
        settings)."""
        s = self.settings
        kept = self._weights
        if kept is None or kept[0] is not s:
            weights = ApiWeights(
                s.api_kind_boost,
                s.api_resource_factor,
                s.api_parent_factor,
                s.api_superseded_factor,
                s.api_context_factor,
                s.api_read_factor,
            )
            kept = self._weights = (s, weights)
        return kept[1]

    def _score(
        self,
        r: Ranked,
        parsed: ParsedQuery,
        clause_weights: list[float],
        cosines: Mapping[str, float],
        prep: Prepared,
    ) -> Scored:
        """The evidence of a ranked candidate, from what ranking it with ``prep`` found."""
        rank, m, exact, in_title, bm25 = r
        if m.score != bm25:
            m = replace(m, score=bm25)
        holding = prep.fields_holding(m.chunk_id)
        s = score_evidence(
            rank,
            m,
            exact,
            in_title,
            parsed,
            clause_weights,
            self.analyzer.stop_words,
            holding,
            prep.clause_forms,
            prep.terms,
        )
        cosine = cosines.get(s.match.chunk_id)
        return s if cosine is None else replace(s, cosine=cosine)

    def _hit(self, s: Scored, rank: int, retriever: str = "keyword", score: float = 1.0) -> Hit:
        return hit_of(s, rank, retriever, score, self.settings.snippet_chars, self._endpoint(s))

    def _endpoint(self, s: Scored) -> dict[str, Any]:
        """Method, path and resource of an API operation, for the agent to cite, and
        whether its spec marks it deprecated."""
        doc = s.match.doc
        if not doc.operation_kind:
            return {}
        apis = self._current().apis
        method, path, resource = apis.endpoint(doc.id)
        out: dict[str, Any] = {"method": method, "path": path, "resource": resource}
        if doc.id in apis.deprecated:
            out["deprecated"] = True
        return out


def _unheld_splits(
    parsed: ParsedQuery, matches: Sequence[KeywordMatch], prep: Prepared
) -> list[Clause]:
    """The clauses of words split in two (``Searcher._split``) that no candidate holds
    side by side: "wallpaper" is no "wall paper" when no page says so, and stays a word
    the index never saw."""
    out = []
    for c in parsed.clauses:
        if c.original not in parsed.split:
            continue
        pair = c.alternatives[0].tokens
        holding = (prep.fields_holding(m.chunk_id) for m in matches)
        if not any(h is not None and h(pair) for h in holding):
            out.append(c)
    return out


def did_you_mean(parsed: ParsedQuery, left: Collection[str] = ()) -> str:
    """The question as written with each corrected word (a clause found only after typo
    correction, not one of ``left``) replaced by its fix, '' when there is none: "the
    process's oneoff command" → "the process's one off command", "auto-arch" →
    "auto-archive"."""
    fixes = {
        c.original: " ".join(c.alternatives[0].tokens)
        for c in parsed.clauses
        if c.original not in left and all(a.kind == "typo" for a in c.alternatives)
    }
    return replace_words(parsed.text, fixes) if fixes else ""


def _is_flag(word: str, text: str) -> bool:
    """Whether ``word`` is typed as an option in ``text`` (``--prod``, ``-v``): an
    option is named whole, never half-typed."""
    return re.search(rf"(?:^|\s)--?{re.escape(word)}(?:[=\s]|$)", text, re.I) is not None


def _named_sources(
    held: Mapping[str, int], documents: Mapping[str, int], share: float, least: int
) -> frozenset[str]:
    """The sources a word names: each of at least ``least`` documents, ``share`` of
    them holding the word, while no other source mostly holds it and at most 1 -
    ``share`` of the other sources' documents do ("server" is in every operation of
    one API and in three quarters of another's: it names neither); none when there are
    no such sources."""
    named = frozenset(s for s, n in documents.items() if n >= least and held.get(s, 0) >= share * n)
    others = [s for s in documents if s not in named]
    if not named or any(2 * held.get(s, 0) > documents[s] for s in others):
        return frozenset()
    rest = sum(documents[s] for s in others)
    return named if sum(held.get(s, 0) for s in others) <= (1 - share) * rest else frozenset()
