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

The evidence score of a hit is computed in ``evidence.py``.
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from .. import bounds
from ..analyze.text import (
    Alternative,
    Analyzer,
    Clause,
    ParsedQuery,
    canonical_phrase,
    stem,
    tokenize,
)
from ..errors import InvalidInput
from ..models import Chunk, Filters, Hit, SearchResult
from ..ops.querylog import error_text
from ..settings import Settings
from ..store.base import DocSummary, KeywordMatch, Store
from .apis import ApiIndex, ApiWeights, operation_factor
from .candidates import candidate_query, correction
from .commands import CommandIndex, CommandMatch
from .evidence import (
    FIELD_FACTOR,
    MATCH_FACTOR,
    citation,
    contains,
    score_evidence,
    snippet,
    stemmed_aliases,
)
from .refresh import Refreshing
from .verdict import ClauseStat, Scored, Signals, decide, measure, model_from_settings

if TYPE_CHECKING:
    from ..embed import Embedder

log = logging.getLogger(__name__)

MAX_QUERY_CHARS = bounds.MAX_QUERY_CHARS
EMPTY_INDEX = "the index is empty: run `groundkb ingest` or `groundkb sync`"
MAX_INTENT_WORDS = 5  # longest part of a multi-intent query
_SPLIT_INTENTS = re.compile(r"\s*(?:[,;+&]|\band\b|\bplus\b|\bvs\.?|\bversus\b)\s*", re.I)


# rank, match, exact ("title"/"alias"/""), in title, BM25F (put into the match only for
# the candidates that are scored: copying a frozen match costs more than scoring it)
_Ranked = tuple[float, KeywordMatch, str, bool, float]


@dataclass
class _Derived:
    """Data derived from the whole index, rebuilt when the store's change token changes;
    ``df`` fills with the document frequencies of the terms queries use."""

    token: str
    df: dict[str, int]
    n_chunks: int  # at least 1
    empty: bool  # no chunk at all
    avgdl: float
    known_terms: frozenset[str]
    commands: CommandIndex
    apis: ApiIndex
    filtered_commands: dict[Filters, CommandIndex] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Prepared:
    """The per-query part of scoring (``Searcher._prepared``): per clause its
    alternatives as (padded needle, idf × (k1 + 1) × match factor), the field weights,
    the stemmed phrase and the average length."""

    clauses: tuple[tuple[tuple[str, float], ...], ...]
    fields: tuple[tuple[str, float], ...]
    phrase: tuple[str, ...]
    avgdl: float


def _known_terms(docs: Sequence[DocSummary]) -> frozenset[str]:
    terms: set[str] = set()
    for d in docs:
        title = tokenize(d.title)
        if len(title) <= 4:
            terms.update(title)
        for text in (*d.aliases, *d.keywords, d.command):
            terms.update(tokenize(text))
    return frozenset(terms)


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
        # version serving meanwhile (see refresh.py); a search uses the version it started
        # with throughout. The store's change token says when it is stale.
        self._derived_data: Refreshing[str, _Derived] = Refreshing(
            self.store.change_token, self._build_derived
        )
        self._local = threading.local()  # the derived data this thread's search started with

    # ------------------------------------------------------------ derived data
    def derived(self) -> _Derived:
        return self._derived_data.get()

    def invalidate(self) -> None:
        """The index was changed by this process: the next search rebuilds first."""
        self._derived_data.invalidate()

    def _build_derived(self, token: str) -> _Derived:
        stats = self.store.term_stats(())
        every = self.store.list_documents(Filters(), limit=10**9)
        commands = [d for d in every if d.type == "command"]
        return _Derived(
            token=token,
            df={},
            n_chunks=max(1, stats.chunks),
            empty=stats.chunks == 0,
            avgdl=stats.avg_length or 1.0,
            known_terms=_known_terms(every),
            commands=CommandIndex(commands),
            apis=ApiIndex.build(every),
        )

    def commands_for(self, filters: Filters, derived: _Derived | None = None) -> CommandIndex:
        """The command index of the commands ``filters`` allow (cached per filter):
        a command of another source is neither an answer nor a suggestion."""
        derived = derived or self.derived()
        if filters.is_empty():
            return derived.commands
        index = derived.filtered_commands.get(filters)
        if index is None:
            docs = [
                d for d in derived.commands.docs if filters.allows(d.type, d.category, d.source)
            ]
            index = derived.filtered_commands[filters] = CommandIndex(docs)
        return index

    def _current(self) -> _Derived:
        """The derived data this thread's search started with (no store round trip)."""
        current: _Derived | None = getattr(self._local, "derived", None)
        return current if current is not None else self.derived()

    def _df(self, parsed: ParsedQuery) -> dict[str, int]:
        """Document frequencies of every term of the query's clauses (one store call for
        the terms not seen since the index last changed)."""
        d = self._current()
        terms = {t for c in parsed.clauses for a in c.alternatives for t in a.tokens}
        missing = terms - d.df.keys()
        if missing:
            # Fetched after the token was read: a write in between may have added chunks,
            # so a frequency is capped at the chunk count the rest of this data has.
            fetched = self.store.term_stats(missing).df
            d.df.update({t: min(n, d.n_chunks) for t, n in fetched.items()})
        return d.df

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
        try:
            command = None
            if not filters.types or "command" in filters.types:
                command = self.commands_for(filters, derived).lookup(text)
            if command is not None:
                result = self._command_result(text, command, limit)
            else:
                semantic, mode, notice = self._semantic(text, filters, limit)
                result = replace(self._keyword(text, filters, limit, semantic, mode), mode=mode)
                # "workspace and widgets": two topics, each answered, answer with both
                # (each part is searched the same way as the whole)
                result = self._multi_intent(text, filters, limit, semantic is not None) or result
                result = replace(result, notice=notice)
        finally:
            self._local.derived = outer
        result = replace(result, hits=_monotone(result.hits))
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

    def parse(self, text: str) -> tuple[ParsedQuery, str]:
        """Analyze a query and correct words the index does not know."""
        d = self._current()
        parsed = self.analyzer.parse(text, d.known_terms)
        if not self.settings.typo_correction or len(parsed.clauses) > self.settings.typo_max_terms:
            # In a long question an unknown word is more likely a real word the docs do
            # not use than a typo; "correcting" it adds noise (measured on the eval sets).
            return parsed, ""
        clauses: list[Clause] = []
        corrections: dict[str, str] = {}
        df = self._df(parsed)
        for clause in parsed.clauses:
            if any(all(df.get(t, 0) > 0 for t in a.tokens) for a in clause.alternatives):
                clauses.append(clause)
                continue
            word = clause.original
            fixed = self._correct(word) if " " not in word else None
            if fixed is None:
                clauses.append(clause)
                continue
            corrections[word] = fixed
            fixed_clause = self.analyzer.parse(fixed, d.known_terms).clauses
            alts = [Alternative(a.tokens, "typo") for c in fixed_clause for a in c.alternatives]
            clauses.append(Clause(word, tuple(alts) or (Alternative((fixed,), "typo"),)))
        corrected = ""
        if corrections:
            corrected = " ".join(corrections.get(t, t) for t in parsed.tokens)
        return replace(parsed, clauses=tuple(clauses), phrase=canonical_phrase(clauses)), corrected

    def _correct(self, word: str) -> str | None:
        """The indexed word ``word`` is most likely a typo of, or None.

        Edits count as in optimal string alignment (a swap of two neighbouring letters
        is one edit, "burndwon" → "burndown"): one for words up to 7 letters, two for
        longer ones, and never in the first letter, which people rarely mistype; a
        real word the index lacks ("bread", "weather") must not become a near miss.
        """
        if len(word) < 4 or word.isdigit():
            return None
        max_edits = 1 if len(word) <= 7 else 2
        similar = self.store.similar_terms(word, max_edits)
        return correction(word, similar, self._current().known_terms)

    # --------------------------------------------------------------- semantic
    def _semantic(
        self, text: str, filters: Filters, limit: int
    ) -> tuple[list[tuple[str, float]] | None, str, str]:
        """(vector candidates or None, the mode used, why it fell back to keyword)."""
        wanted = self.settings.retrieval
        if wanted == "keyword":
            return None, "keyword", ""
        try:
            embedder = self._embedder()
        except Exception as exc:  # any embedder failure degrades, never fails the search
            why = error_text(exc)
            log.warning("opening the embedder failed, searching by keyword: %s", why)
            return None, "keyword", f"embedder failed ({why}); keyword search only"
        if embedder is None:  # keyword-only by configuration: nothing to report
            return None, "keyword", ""
        stored = self.store.embedder()  # a store error is the search's error
        if stored is None and self._current().empty:
            return None, "keyword", EMPTY_INDEX
        if stored is None or stored[0] != embedder.name:
            have = stored[0] if stored else "no embeddings"
            return (
                None,
                "keyword",
                (
                    f"index has {have}, configured embedder is {embedder.name}: "
                    "run `groundkb reindex`; keyword search only"
                ),
            )
        try:
            from .vectors import to_bytes

            vector = to_bytes(embedder.embed_query(text)[None, :])[0]
        except Exception as exc:  # any embedder failure degrades, never fails the search
            why = error_text(exc)
            log.warning("embedding the query failed, searching by keyword: %s", why)
            return None, "keyword", f"embedder failed ({why}); keyword search only"
        from .vectors import Neighbours

        k = max(self.settings.vector_candidates, limit * 2)
        return Neighbours(self.store.nearest(vector, filters, k), self.store, vector), wanted, ""

    def _keyword(
        self,
        text: str,
        filters: Filters,
        limit: int,
        semantic: list[tuple[str, float]] | None = None,
        mode: str = "keyword",
    ) -> SearchResult:
        parsed, corrected = self.parse(text)
        terms = tuple(c.original for c in parsed.clauses)
        model = model_from_settings(self.settings, mode)
        if not parsed.clauses:
            verdict, _ = decide(parsed, Signals({}), model, False)
            return SearchResult(text, verdict, (), terms=terms)
        pool = max(self.settings.candidates, limit * 2)
        query = candidate_query(
            parsed, self._df(parsed), self._current().n_chunks, self.settings.weights, filters, pool
        )
        matches = self.store.keyword_candidates(query)
        matches = [*matches, *self._named_operations(parsed, filters, matches, pool)]
        # Rank every candidate (cheap), then gather evidence for the ones that can be shown.
        ranked = sorted((self._rank(m, parsed) for m in matches), key=lambda r: -r[0])
        if semantic and not matches and semantic[0][1] < self.settings.min_vector_hit:
            semantic = []  # nothing shares a word and the nearest meaning is far: no hits
        cosines: dict[str, float] = {}
        ranks: dict[str, dict[str, int]] = {}
        firsts: tuple[str, ...] = ()  # each retriever's first document (hybrid)
        if semantic is not None:
            if mode == "hybrid" and ranked and semantic:
                firsts = (ranked[0][1].doc_id, semantic[0][0].rpartition("#")[0])
            ranked, cosines, ranks = self._fuse(ranked, semantic, parsed, mode)
        keep = limit * max(1, self.settings.max_chunks_per_doc) + 10
        stats = self._clause_stats(parsed)
        clause_weights = [c.weight for c in stats]
        scored = [self._score(r, parsed, clause_weights, cosines) for r in ranked[:keep]]
        signals = measure(
            parsed, stats, scored, self._current().apis.families, bool(matches), firsts
        )
        verdict, signals = decide(parsed, signals, model, bool(matches))
        if verdict.reason in ("definition", "exact_title"):
            scored = _lead_first(scored)
        hits = self._dedupe(scored, limit, self.settings.max_chunks_per_doc)
        suggestions: tuple[str, ...] = ()
        if verdict.kind == "clarify":
            suggestions = tuple(dict.fromkeys(o.title for o in verdict.options))
        elif corrected:
            suggestions = (corrected,)
        if verdict.kind == "no_match" and not suggestions and matches:
            suggestions = _distinct_titles(scored, 3)  # documents sharing words, never neighbours
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
            signals={
                **{k: round(v, 4) for k, v in signals.values.items()},
                "p_scope": round(signals.scope, 4),
                "p_answer": round(signals.answer, 4),
            },
        )

    def _named_operations(
        self, parsed: ParsedQuery, filters: Filters, have: Sequence[KeywordMatch], limit: int
    ) -> list[KeywordMatch]:
        """API operations on the resources the query names that keyword search missed
        (see ``search/apis.py``), as candidates of their own."""
        seen = {m.doc_id for m in have}
        wanted = self._current().apis.named_by(parsed.tokens, limit, filters)
        return self.store.chunk_matches([f"{d.id}#0" for d in wanted if d.id not in seen])

    def _fuse(
        self,
        ranked: list[_Ranked],
        semantic: list[tuple[str, float]],
        parsed: ParsedQuery,
        mode: str,
    ) -> tuple[list[_Ranked], dict[str, float], dict[str, dict[str, int]]]:
        """Merge keyword and vector candidates; returns them in fused order.

        ``rrf``: Σ 1 / (rrf_k + rank) over the lists a candidate is in. ``weighted``:
        keyword_weight × BM25 + (1 − keyword_weight) × cosine, each min-max normalized
        over all candidates (every candidate gets both scores). Vector mode orders by
        cosine alone. In hybrid mode an API operation's fused score is multiplied by its
        fit to the query (see ``_operation_factor``), which the cosine knows nothing of.
        """
        cosines = dict(semantic)
        by_id = {r[1].chunk_id: r for r in ranked}
        missing = [cid for cid, _ in semantic if cid not in by_id]
        weighted = mode == "hybrid" and self.settings.fusion == "weighted"
        for m in self.store.chunk_matches(missing):
            by_id[m.chunk_id] = self._rank(m, parsed, keyword=weighted)
        ranks: dict[str, dict[str, int]] = {}
        for i, r in enumerate(ranked, 1):
            ranks.setdefault(r[1].chunk_id, {})["keyword"] = i
        for i, (cid, _) in enumerate(semantic, 1):
            ranks.setdefault(cid, {})["vector"] = i
        fused: dict[str, float] = {}
        if mode == "vector":
            fused = {cid: cos for cid, cos in semantic}
        elif self.settings.fusion == "weighted":
            if hasattr(semantic, "cosine"):
                cosines.update(semantic.cosine([c for c in by_id if c not in cosines]))
            kw = _min_max({cid: r[0] for cid, r in by_id.items()})
            vec = _min_max({cid: cosines.get(cid, 0.0) for cid in by_id})
            w = self.settings.keyword_weight
            fused = {cid: w * kw[cid] + (1 - w) * vec[cid] for cid in by_id}
        else:
            k = self.settings.rrf_k
            for cid, rr in ranks.items():
                fused[cid] = sum(1.0 / (k + n) for n in rr.values())
        if mode != "vector":
            # The vector side cannot tell "create a pod" from "delete a pod": API
            # operations keep their fit to the query after fusion too.
            for cid in fused:
                op = by_id[cid][1] if cid in by_id else None
                if op is not None and op.doc.operation_kind:
                    fused[cid] *= self._operation_factor(op, parsed)
        if mode == "hybrid":  # a query that names a document exactly finds it first
            fused = {c: f + (1.0 if by_id[c][2] else 0.0) for c, f in fused.items() if c in by_id}
        order = sorted((cid for cid in fused if cid in by_id), key=lambda c: -fused[c])
        # Each candidate carries the score it is ranked by: the fused one.
        out: list[_Ranked] = []
        for c in order:
            _, m, exact, in_title, bm25 = by_id[c]
            out.append((fused[c], m, exact, in_title, bm25))
        return out, cosines, ranks

    # ---------------------------------------------------------------- scoring
    def _clause_stats(self, parsed: ParsedQuery) -> list[ClauseStat]:
        """Per clause: idf of its rarest-but-present alternative (an unseen clause gets
        the largest idf), and whether the index knows it as written or only after typo
        correction."""
        d = self._current()
        out = []
        for clause in parsed.clauses:
            found = [(min(d.df.get(t, 0) for t in a.tokens), a.kind) for a in clause.alternatives]
            df = max([x for x, _ in found if x > 0], default=0)
            known = any(x > 0 and kind != "typo" for x, kind in found)
            typo = not known and any(x > 0 for x, _ in found)
            weight = math.log(1.0 + (d.n_chunks - df + 0.5) / (df + 0.5))
            out.append(ClauseStat(weight, known, typo))
        return out

    def _prepared(self, parsed: ParsedQuery) -> _Prepared:
        """What scoring a candidate for ``parsed`` needs that does not depend on the
        candidate, computed once per query (kept for the thread's current query)."""
        d = self._current()
        cached: tuple[ParsedQuery, _Derived, _Prepared] | None = getattr(self._local, "prep", None)
        if cached is not None and cached[0] is parsed and cached[1] is d:
            return cached[2]
        k1 = self.settings.bm25_k1
        clauses = []
        for clause in parsed.clauses:
            alts = []
            for alt in clause.alternatives:
                df = min(d.df.get(t, 0) for t in alt.tokens)
                idf = max(math.log((d.n_chunks - df + 0.5) / (df + 0.5)), 1e-6)
                needle = " " + "  ".join(alt.tokens) + " "
                alts.append((needle, idf * (k1 + 1) * MATCH_FACTOR[alt.kind]))
            clauses.append(tuple(alts))
        weights = self.settings.weights
        prepared = _Prepared(
            clauses=tuple(clauses),
            fields=tuple((f, weights.get(f, 1.0)) for f in FIELD_FACTOR),
            phrase=tuple(stem(t) for t in parsed.phrase),
            avgdl=d.avgdl,
        )
        self._local.prep = (parsed, d, prepared)
        return prepared

    def _bm25(self, m: KeywordMatch, prep: _Prepared) -> float:
        """BM25F of a candidate with one term per clause: the clause's best alternative.

        The same formula as FTS5's bm25() (column weights scale the term frequency, one
        length normalization over all columns; k1 and b from settings), except that a
        clause scores its best alternative rather than the sum of all, and synonym,
        stem-of-a-known-term and typo alternatives count ``MATCH_FACTOR`` of their
        score: "delete" OR-ed with its synonyms must not outweigh "pod".
        """
        # Tokens are single-space separated; doubling the spaces makes every " t "
        # occurrence non-overlapping, so str.count counts terms and phrases exactly.
        columns = []
        length = 0
        fields = m.fields
        for f, weight in prep.fields:
            text = fields[f]
            if text:
                length += text.count(" ") + 1
                columns.append((weight, " " + text.replace(" ", "  ") + " "))
        k1, b = self.settings.bm25_k1, self.settings.bm25_b
        norm = k1 * (1 - b + b * length / prep.avgdl)
        total = 0.0
        for alts in prep.clauses:
            best = 0.0
            for needle, scale in alts:
                freq = 0.0
                for w, padded in columns:
                    if needle in padded:
                        freq += w * padded.count(needle)
                if freq:
                    score = scale * freq / (freq + norm)
                    if score > best:
                        best = score
            total += best
        return total

    def _rank(self, m: KeywordMatch, parsed: ParsedQuery, keyword: bool = True) -> _Ranked:
        """BM25F × (1 + boost), and whether the query phrase is the title or an alias.

        ``keyword=False`` for a candidate only vector search found: it has no keyword rank.
        """
        prep = self._prepared(parsed)
        bm25 = self._bm25(m, prep) if keyword else 0.0
        phrase = prep.phrase
        exact = ""
        in_title = False
        if phrase:
            aliases = stemmed_aliases(m)
            title = m.fields["title"]
            title_tokens = tuple(t for t in title.split() if t not in self.analyzer.stop_words)
            if title_tokens == phrase:
                exact = "title"
            elif any(tuple(a.split()) == phrase for a in aliases):
                exact = "alias"
            in_title = len(phrase) > 1 and any(contains(t, phrase) for t in (title, *aliases))
        boost = self.settings.title_phrase_boost
        rank = bm25 * (1 + (2 * boost if exact else boost if in_title else 0.0))
        if m.doc.operation_kind:
            rank *= self._operation_factor(m, parsed)
        return rank, m, exact, in_title, bm25

    def _operation_factor(self, m: KeywordMatch, parsed: ParsedQuery) -> float:
        """Rank factor of an API operation for the query (see ``apis.operation_factor``)."""
        apis = self._current().apis
        s = self.settings
        weights = ApiWeights(
            s.api_kind_boost,
            s.api_resource_factor,
            s.api_parent_factor,
            s.api_superseded_factor,
            s.api_context_factor,
        )
        return operation_factor(parsed.tokens, m.doc, m.doc_id in apis.superseded, weights, apis)

    def _score(
        self,
        r: _Ranked,
        parsed: ParsedQuery,
        clause_weights: list[float],
        cosines: Mapping[str, float],
    ) -> Scored:
        rank, m, exact, in_title, bm25 = r
        if m.score != bm25:
            m = replace(m, score=bm25)
        s = score_evidence(
            rank, m, exact, in_title, parsed, clause_weights, self.analyzer.stop_words
        )
        cosine = cosines.get(s.match.chunk_id)
        return s if cosine is None else replace(s, cosine=cosine)

    @staticmethod
    def _dedupe(scored: Sequence[Scored], limit: int, per_doc: int) -> list[Scored]:
        """At most ``per_doc`` chunks of a document; one of an API operation or a command,
        which is one thing to call or run, not a page to read in parts."""
        out: list[Scored] = []
        counts: dict[str, int] = {}
        for s in scored:
            n = counts.get(s.match.doc_id, 0)
            if n >= (1 if s.match.doc.type in ("api", "command") else per_doc):
                continue
            counts[s.match.doc_id] = n + 1
            out.append(s)
            if len(out) >= limit:
                break
        return out

    def _hit(self, s: Scored, rank: int, retriever: str = "keyword", score: float = 1.0) -> Hit:
        m = s.match
        return Hit(
            doc_id=m.doc_id,
            chunk_id=m.chunk_id,
            title=m.doc.title,
            type=m.doc.type,
            category=m.doc.category,
            source=m.doc.source,
            snippet=snippet(m.text, s.matched, max(40, self.settings.snippet_chars)),
            score=score,
            matched_terms=s.matched,
            header_path=m.header_path,
            content_hash=m.content_hash,
            chunk_hash=m.chunk_hash,
            citation=citation(m.doc, m.header_path),
            explanation=(*s.explanation, f"bm25 {m.score:.2f}, rank {rank}"),
            ranks={retriever: rank},
            retriever=retriever,
            command=m.doc.command,
            summary=_summary_beside(m),
            **self._endpoint(m.doc),
        )

    def _endpoint(self, doc: DocSummary) -> dict[str, str]:
        """Method, path and resource of an API operation, for the agent to cite."""
        if not doc.operation_kind:
            return {}
        method, path, resource = self._current().apis.endpoint(doc.id)
        return {"method": method, "path": path, "resource": resource}

    # ---------------------------------------------------------- special paths
    def _command_result(self, text: str, cm: CommandMatch, limit: int) -> SearchResult:
        from .verdict import command_verdict

        hits: list[Hit] = []
        shown = cm.docs[:limit]
        ids = [d.id for d in shown]
        firsts: dict[str, Chunk] = {}
        for c in self.store.chunks(ids):
            firsts.setdefault(c.doc_id, c)
        hashes = {d.id: d.content_hash for d in self.store.documents(ids)}
        for rank, doc in enumerate(shown, 1):
            first = firsts.get(doc.id)
            words = tuple(text.lower().split())
            match = KeywordMatch(
                chunk_id=first.id if first else f"{doc.id}#0",
                doc_id=doc.id,
                index=0,
                score=0.0,
                fields={},
                text=first.text if first else doc.summary,
                header_path=first.header_path if first else doc.title,
                chunk_hash=first.chunk_hash if first else "",
                doc=doc,
                content_hash="",
            )
            match = replace(match, content_hash=hashes.get(doc.id, ""))
            score = {"exact": 1.0, "completed": 0.9}.get(cm.kind, 0.5)
            if len(cm.docs) > 1:
                score = 0.5  # several commands: which one is asked
            exact = "title" if cm.kind == "exact" else ""
            s = Scored(
                match,
                0.0,
                score,
                words,
                True,
                exact,
                bool(exact),
                (f"command name: {doc.command}",),
            )
            hits.append(self._hit(s, rank, "command", score))
        verdict = command_verdict(text, cm)
        return SearchResult(
            text,
            verdict,
            tuple(hits),
            suggestions=cm.suggestions,
            terms=tuple(text.lower().split()),
        )

    def _multi_intent(
        self, text: str, filters: Filters, limit: int, semantic: bool = False
    ) -> SearchResult | None:
        parts = [p for p in _SPLIT_INTENTS.split(text) if p and p.strip()]
        if (
            len(parts) < 2
            or len(parts) > 4
            or any(len(p.split()) > MAX_INTENT_WORDS for p in parts)
        ):
            return None  # "workspace and widgets", not a sentence that happens to say "and"
        results = []
        for part in parts:
            vectors, mode = None, "keyword"
            if semantic:
                vectors, mode, _ = self._semantic(part, filters, limit)
            results.append(replace(self._keyword(part, filters, limit, vectors, mode), mode=mode))
        if not all(r.verdict.kind == "answer" and r.hits for r in results):
            return None
        tops = [r.hits[0].doc_id for r in results]
        if len(set(tops)) < len(tops):
            return None
        hits: list[Hit] = []
        per_doc: dict[str, int] = {}
        for r in results:  # the best hit of every part first, then the rest
            hits.append(r.hits[0])
            per_doc[r.hits[0].doc_id] = 1
        for r in results:
            for h in r.hits[1:]:
                if len(hits) >= max(limit, len(results)):
                    break
                if h.chunk_id not in {x.chunk_id for x in hits}:
                    hits.append(h)
        from .verdict import multi_intent_verdict

        confidence = min(r.verdict.confidence for r in results)
        return SearchResult(
            query=text,
            verdict=multi_intent_verdict([r.hits[0].title for r in results], confidence),
            hits=tuple(hits),
            terms=tuple(t for r in results for t in r.terms),
            multi_intent=True,
            mode=results[0].mode,
        )


def _monotone(hits: Sequence[Hit]) -> tuple[Hit, ...]:
    """Scores never rise down the list (a hit is never worth more than one above it)."""
    out: list[Hit] = []
    for h in hits:
        if out and h.score > out[-1].score:
            h = replace(h, score=out[-1].score)
        out.append(h)
    return tuple(out)


def _min_max(scores: dict[str, float]) -> dict[str, float]:
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    span = hi - lo
    return {k: (v - lo) / span if span > 0 else 1.0 for k, v in scores.items()}


def _lead_first(scored: list[Scored]) -> list[Scored]:
    """A definition is answered by the top document's lead: its first matching chunk."""
    top = scored[0].match.doc_id
    same = sorted((s for s in scored if s.match.doc_id == top), key=lambda s: s.match.index)
    return [*same, *(s for s in scored if s.match.doc_id != top)]


def _summary_beside(m: KeywordMatch) -> str:
    """The document's summary for a hit on chunk ``m``, unless it is just the opening of
    that chunk (a page's first paragraph, derived at ingest): the snippet is a window of
    the same passage, and the whole passage is one ``get_document`` away."""
    summary = m.doc.summary
    lead = summary.rstrip("…").strip()[:_LEAD]
    if m.index == 0 and lead and " ".join(m.text[: 2 * _LEAD].split()).startswith(lead):
        return ""
    return summary


_LEAD = 80


def _distinct_titles(scored: Sequence[Scored], n: int) -> tuple[str, ...]:
    out: list[str] = []
    for s in scored:
        if s.match.doc.title not in out:
            out.append(s.match.doc.title)
        if len(out) >= n:
            break
    return tuple(out)
