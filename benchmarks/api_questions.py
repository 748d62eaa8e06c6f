"""Endpoint questions over real OpenAPI specs: is the right operation first?

Eight public APIs: Kubernetes and Twilio (the development questions,
``shared/eval/api_questions_dev/``) and six the API ranking was never developed on —
Stripe and GitHub (``shared/corpora/openapi/``), Spotify, Slack, OpenAI and DigitalOcean
(``benchmarks/data/openapi/specs.tar.xz``), with the held-out questions of
``benchmarks/data/api_questions/``.

Every question is asked through ``KnowledgeBase.search(question, limit=10)`` in keyword
and hybrid mode, under two conditions:

- ``alone``: each API in an index of its own;
- ``together``: all eight in one index, the others as distractors.

A hit is a result whose document id is one of the question's ``relevant`` or
``acceptable`` operations (``{spec}:{METHOD} {path}``). Reported per API and overall
(every API weighing the same): hit@1, hit@5 and MRR@10 of the answerable questions, the
verdicts of the unanswerable ones (an ``answer`` there is a false answer), and the median
search time of each index. Only ``KnowledgeBase.open/ingest/search`` is used, so the same
script measures an earlier version of groundkb (``PYTHONPATH=other/src``, with its own
``--label``) for a before/after in one run.

    python benchmarks/api_questions.py [--label after] [--modes keyword,hybrid]
        [--conditions alone,together] [--apis stripe,...] [--set KEY=VALUE ...]
        [--fresh] [--verbose] [--questions DIR] [--ask WORDS] [--ask-end WORDS]
        [--before WORDS] [--british] [--gerund] [--out FILE]

Indexes are built once into ``benchmarks/results/tmp/apiq-{label}/`` (embedding takes
minutes on 2 cores) and reused; ``--fresh`` rebuilds them. An index records the OpenAPI
loader version that built it, and one built by another version is refused, not
searched: a label's index is that label's code's. The together index is built
first; an API alone is a copy of it with the other APIs deleted (the same documents,
chunks and vectors, not embedded twice). ``--set`` overrides a setting
for the searches (the fitting script uses it). ``--ask "which endpoint should I use
to"`` asks every request in those words, ``--ask-end "via the API"`` ends it so (the
answer must not change), ``--british`` asks it in British spelling, ``--gerund`` as the
gerund of the verb it opens with ("listing cluster roles"). Writes
``benchmarks/results/api_questions[-{label}].json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import shutil
import statistics
import sys
import tarfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groundkb import KnowledgeBase, Settings
from groundkb.ingest.openapi import OpenAPILoader

HERE = Path(__file__).resolve().parent
SHARED = next(
    (p / "shared" for p in HERE.parents if (p / "shared" / "eval").is_dir()),
    HERE.parent.parent / "shared",
)  # the checkout's sibling folder (a worktree may sit deeper)
CORPORA = SHARED / "corpora" / "openapi"
DEV_QUESTIONS = SHARED / "eval" / "api_questions_dev"
HELD_OUT_QUESTIONS = HERE / "data" / "api_questions"
ARCHIVE = HERE / "data" / "openapi" / "specs.tar.xz"
CACHE = HERE / "results" / "tmp"
SPECS = CACHE / "specs"

# API name → (source path, questions file)
APIS: dict[str, tuple[Path, Path]] = {
    "kubernetes": (CORPORA / "kubernetes.json", DEV_QUESTIONS / "kubernetes.jsonl"),
    "twilio": (CORPORA / "twilio", DEV_QUESTIONS / "twilio.jsonl"),
    "stripe": (CORPORA / "stripe.json", HELD_OUT_QUESTIONS / "stripe.jsonl"),
    "github": (CORPORA / "github.json", HELD_OUT_QUESTIONS / "github.jsonl"),
    "spotify": (SPECS / "spotify.yml", HELD_OUT_QUESTIONS / "spotify.jsonl"),
    "slack": (SPECS / "slack.json", HELD_OUT_QUESTIONS / "slack.jsonl"),
    "openai": (SPECS / "openai.yaml", HELD_OUT_QUESTIONS / "openai.jsonl"),
    "digitalocean": (
        SPECS / "digitalocean" / "digitalocean.yaml",
        HELD_OUT_QUESTIONS / "digitalocean.jsonl",
    ),
}
DEV_APIS = ("kubernetes", "twilio")


@dataclass(frozen=True)
class Question:
    id: str
    api: str
    query: str
    kind: str
    hard: bool
    ids: frozenset[str]  # document ids that answer it; empty: unanswerable


# Set by --ask: words put before every request ("which endpoint should I use to"); a
# question that opens with a question word is asked as it is. Set by --ask-end: words
# put after every question ("via the API"), its closing punctuation dropped. Set by
# --before: a sentence put before every question, whatever it opens with ("Quick
# question:", "I'm new to {product}.").
ASK = ""
ASK_END = ""
BEFORE = ""
# Set by --british: every word with a British spelling in the English lexicon is asked
# so spelled ("organization" → organisation, "canceled" → cancelled, "center" → centre).
BRITISH = False
# American endings and their British ones (the endings, not words: a word is changed
# only where the lexicon knows the British form)
_BRITISH_ENDINGS = (
    *((f"iz{e}", f"is{e}") for e in ("e", "es", "ed", "ing", "ation", "ations", "er", "ers")),
    *((f"yz{e}", f"ys{e}") for e in ("e", "es", "ed", "ing")),
    *((f"or{e}", f"our{e}") for e in ("", "s", "ed", "ing", "ite", "ites", "able", "ful")),
    ("ter", "tre"),
    ("ters", "tres"),
    *((f"{v}l{e}", f"{v}ll{e}") for v in ("e", "a") for e in ("ed", "ing", "er", "ers")),
    ("og", "ogue"),
    ("ogs", "ogues"),
    ("ense", "ence"),
)


# Set by --gerund: every request that opens with a verb (after "how do I", "how to") is
# asked as its gerund ("How do I archive a project?" → "archiving a project").
GERUND = False
_HOW = re.compile(r"(?i)^\s*(?:how\s+(?:do|can|would|should)\s+i|how\s+to)\s+")
# verbs that open questions rather than requests ("can guests see reports")
_NO_REQUEST = frozenset(
    {"can", "could", "do", "does", "did", "is", "are", "was", "be", "should", "would", "will"}
    | {"may", "might", "must", "let", "tell", "have", "has"}
)


def gerund(text: str, product: str = "") -> str:
    """``text`` asked as the gerund of the verb its request opens with: "How do I
    archive a project?" → "archiving a project", "list cluster roles" → "listing cluster
    roles"; as it is when it opens otherwise, with the product's name, or is one word."""
    from lemminflect import getAllLemmas, getInflection

    words = _HOW.sub("", text, count=1).rstrip("?. ").split()
    if len(words) < 2:
        return text
    first = words[0].lower()
    if first in _NO_REQUEST or first == product.lower():
        return text
    lemmas = getAllLemmas(first).get("VERB")
    forms = getInflection(first, "VBG") if lemmas and lemmas[0] == first else None
    return " ".join([forms[0], *words[1:]]) if forms else text


# British spellings the lexicon lists that nobody writes today
_ARCHAIC = frozenset({"errour", "errours"})


def british(text: str) -> str:
    """``text`` with each word that has a British spelling (one the English lexicon
    knows) spelled so."""
    from groundkb.analyze import lexicon

    words = lexicon.english_words() - _ARCHAIC

    def respell(m: re.Match[str]) -> str:
        word = m.group(0)
        low = word.lower()
        for us, uk in _BRITISH_ENDINGS:
            head = low[: len(low) - len(us)]
            if low.endswith(us) and len(head) >= 2 and head + uk in words:
                other = head + uk
                return other.capitalize() if word[:1].isupper() else other
        return word

    return re.sub(r"[A-Za-z]{5,}", respell, text)


_QUESTION_OPENERS = frozenset(
    {"how", "what", "which", "who", "where", "when", "why", "is", "are", "can", "could"}
    | {"do", "does", "should", "i", "my"}
)


# The product each question set is about, for "{product}" in --ask and --ask-end words
# ("in {product}, how do I" → "in Stripe, how do I").
PRODUCTS = {
    "kubernetes": "Kubernetes", "twilio": "Twilio", "stripe": "Stripe", "github": "GitHub",
    "spotify": "Spotify", "slack": "Slack", "openai": "OpenAI",
    "digitalocean": "DigitalOcean",
}  # fmt: skip


def product_of(spec: str) -> str:
    """The product a spec belongs to: ``twilio_api_v2010`` → Twilio."""
    return next((name for key, name in PRODUCTS.items() if spec.startswith(key)), spec)


def asked(query: str, product: str = "") -> str:
    """``query`` as --ask words it: "refund a payment" → "which endpoint should I use to
    refund a payment"; ``product`` stands for "{product}" in them."""
    ask, end, before = (w.replace("{product}", product) for w in (ASK, ASK_END, BEFORE))
    if GERUND:
        query = gerund(query, product)
    if BRITISH:
        query = british(query)
    if end:
        query = f"{query.rstrip('?. ')} {end}"
    first = query.split(maxsplit=1)[0].lower() if query.strip() else ""
    if ask and first not in _QUESTION_OPENERS:
        query = f"{ask} {query[:1].lower()}{query[1:]}"
    return f"{before} {query}" if before else query


def questions(api: str) -> list[Question]:
    out = []
    for line in APIS[api][1].read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        q = json.loads(line)
        spec = str(q.get("spec") or q["api"]).removesuffix(".json")
        ids = {f"{spec}:{op}" for op in [*q["relevant"], *q.get("acceptable", [])]}
        ids |= {f"{o['spec'].removesuffix('.json')}:{o['op']}"
                for o in q.get("acceptable_other_spec", [])}  # fmt: skip
        out.append(
            Question(
                q["id"],
                api,
                asked(q["query"], PRODUCTS[api]),
                q["kind"],
                bool(q.get("hard")),
                frozenset(ids),
            )
        )
    return out


def unpack_specs() -> None:
    """Unpack the committed specs once (``benchmarks/results/tmp/specs``)."""
    marker = SPECS / ".unpacked"
    if marker.exists() and marker.read_text() == str(ARCHIVE.stat().st_size):
        return
    SPECS.mkdir(parents=True, exist_ok=True)
    with tarfile.open(ARCHIVE, "r:xz") as tar:
        tar.extractall(SPECS, filter="data")
    marker.write_text(str(ARCHIVE.stat().st_size))


EMBEDDER = "minilm"  # --embedder none: keyword-only indexes, quick to build


def base_settings(db: Path, overrides: Mapping[str, str] | None = None) -> Settings:
    s = Settings(db=str(db), embedder=EMBEDDER, fallback_p95_ms=1e12)
    return s.replace(**dict(overrides or {})) if overrides else s


def _remove(db: Path) -> None:
    for stale in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        stale.unlink(missing_ok=True)


def build(
    db: Path, apis: Sequence[str], fresh: bool, seed: Path | None = None
) -> list[dict[str, Any]]:
    """Ingest ``apis`` into ``db`` with embeddings (once; ``fresh`` rebuilds).

    ``seed``: an index already holding some of ``apis`` (an ``alone`` one) to start from,
    so that its vectors are not computed twice; its documents are re-ingested unchanged.
    """
    info = db.with_suffix(".json")
    loader = db.with_suffix(".loader")  # the OpenAPI loader version that built it
    if db.exists() and info.exists() and not fresh:
        built = loader.read_text(encoding="utf-8") if loader.exists() else "unknown"
        if built != OpenAPILoader.version:
            raise SystemExit(
                f"{db} was built by OpenAPI loader version {built}, this code's is "
                f"{OpenAPILoader.version}: rebuild it (--fresh) or name another --label"
            )
        return list(json.loads(info.read_text(encoding="utf-8")))
    _remove(db)
    db.parent.mkdir(parents=True, exist_ok=True)
    part = db.with_suffix(".part")
    _remove(part)
    if seed is not None and seed.exists() and not fresh:
        shutil.copyfile(seed, part)
    out = []
    retrieval = "keyword" if EMBEDDER == "none" else "hybrid"
    with KnowledgeBase.open(settings=base_settings(part).replace(retrieval=retrieval)) as kb:
        for api in apis:
            started = time.perf_counter()
            report = kb.ingest(APIS[api][0], source=api)
            seconds = round(time.perf_counter() - started, 2)
            out.append(
                {
                    "api": api,
                    "documents": report.inserted + report.updated + report.unchanged,
                    "chunks": report.chunks_written,
                    "errors": len(report.errors),
                    "seconds": seconds,
                }
            )
            print(f"  {db.parent.name}/{db.stem}: {out[-1]}", file=sys.stderr, flush=True)
    part.rename(db)
    info.write_text(json.dumps(out), encoding="utf-8")
    loader.write_text(OpenAPILoader.version, encoding="utf-8")
    return out


def derive(db: Path, together: Path, api: str, fresh: bool = False) -> list[dict[str, Any]]:
    """An index of ``api`` alone, from a copy of the together index with the other APIs
    deleted: the same documents, chunks and vectors as one built alone, without
    embedding them again (once; ``fresh`` copies the together index again)."""
    info = db.with_suffix(".json")
    if db.exists() and info.exists() and not fresh:
        return list(json.loads(info.read_text(encoding="utf-8")))
    _remove(db)
    part = db.with_suffix(".part")
    _remove(part)
    shutil.copyfile(together, part)
    with KnowledgeBase.open(settings=base_settings(part).replace(retrieval="keyword")) as kb:
        for other in APIS:
            if other != api:
                kb.delete(source=other)
        documents = len(kb.list_documents(limit=100_000))
    part.rename(db)
    out = [{"api": api, "documents": documents, "derived_from": together.name}]
    info.write_text(json.dumps(out), encoding="utf-8")
    return out


def ask(
    db: Path, qs: Sequence[Question], mode: str, overrides: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    rows = []
    settings = base_settings(db, overrides).replace(retrieval=mode)
    with KnowledgeBase.open(settings=settings) as kb:
        kb.search("warm up", limit=10)
        for q in qs:
            started = time.perf_counter()
            r = kb.search(q.query, limit=10)
            took = (time.perf_counter() - started) * 1000
            if r.notice:
                raise SystemExit(f"search fell back to keyword: {r.notice}")
            ranked = list(dict.fromkeys(h.doc_id for h in r.hits))
            rank = next((i for i, d in enumerate(ranked, 1) if d in q.ids), None)
            rows.append(
                {
                    "id": q.id,
                    "api": q.api,
                    "query": q.query,
                    "kind": q.kind,
                    "hard": q.hard,
                    "answerable": bool(q.ids),
                    "rank": rank,
                    "verdict": r.verdict.kind,
                    "reason": r.verdict.reason,
                    "top": ranked[:5],
                    "ms": round(took, 2),
                }
            )
    return rows


def metrics(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    answerable = [r for r in rows if r["answerable"]]
    none = [r for r in rows if not r["answerable"]]
    n = len(answerable)
    ranks = [r["rank"] for r in answerable]
    return {
        "n": n,
        "hit@1": round(sum(1 for k in ranks if k == 1) / n, 4) if n else None,
        "hit@5": round(sum(1 for k in ranks if k is not None and k <= 5) / n, 4) if n else None,
        "mrr@10": round(sum(1 / k for k in ranks if k is not None) / n, 4) if n else None,
        "answered_right": (
            round(sum(1 for r in answerable if r["verdict"] == "answer" and r["rank"] == 1) / n, 4)
            if n
            else None
        ),
        "unanswerable": len(none),
        "false_answers": (
            round(sum(1 for r in none if r["verdict"] == "answer") / len(none), 4) if none else None
        ),
        "p50_ms": round(statistics.median(r["ms"] for r in rows), 2) if rows else None,
    }


def macro(per_api: Mapping[str, Mapping[str, Any]], apis: Sequence[str]) -> dict[str, Any]:
    """Every API weighing the same."""
    out: dict[str, Any] = {}
    for key in ("hit@1", "hit@5", "mrr@10", "answered_right", "false_answers"):
        values = [per_api[a][key] for a in apis if a in per_api and per_api[a][key] is not None]
        out[key] = round(sum(values) / len(values), 4) if values else None
    return out


def run(
    label: str,
    apis: Sequence[str],
    modes: Sequence[str],
    conditions: Sequence[str],
    overrides: Mapping[str, str] | None = None,
    fresh: bool = False,
) -> dict[str, Any]:
    """Build (or reuse) the indexes and ask every question; the results as a dict."""
    unpack_specs()
    cache = CACHE / f"apiq-{label}"
    builds: dict[str, Any] = {}
    rows: dict[str, dict[str, list[dict[str, Any]]]] = {}
    together = cache / "together.db"
    if "together" in conditions or together.exists():
        # the together index first: an API alone is then a copy without the others
        seeds = [cache / f"{a}.db" for a in APIS if (cache / f"{a}.db").exists()]
        seed = max(seeds, key=lambda p: p.stat().st_size) if seeds else None
        builds["together"] = build(together, list(APIS), fresh, seed)
    for condition in conditions:
        for mode in modes:
            rows.setdefault(condition, {})[mode] = []
        if condition == "alone":
            for api in apis:
                db = cache / f"{api}.db"
                if together.exists():
                    # with --fresh the together index was just rebuilt: copied again
                    builds[f"alone/{api}"] = derive(db, together, api, fresh)
                else:  # no together index asked for: build the API alone
                    builds[f"alone/{api}"] = build(db, [api], fresh)
                for mode in modes:
                    rows[condition][mode] += ask(db, questions(api), mode, overrides)
        else:
            db = together
            for mode in modes:
                qs = [q for api in apis for q in questions(api)]
                rows[condition][mode] += ask(db, qs, mode, overrides)
    summary: dict[str, Any] = {}
    for condition, by_mode in rows.items():
        for mode, found in by_mode.items():
            per_api = {a: metrics([r for r in found if r["api"] == a]) for a in apis}
            held = [a for a in apis if a not in DEV_APIS]
            summary.setdefault(condition, {})[mode] = {
                "apis": per_api,
                "all": macro(per_api, apis),
                "held_out": macro(per_api, held),
                "dev": macro(per_api, [a for a in apis if a in DEV_APIS]),
                "p50_ms": round(statistics.median(r["ms"] for r in found), 2),
            }
    return {"label": label, "builds": builds, "summary": summary, "rows": rows}


def print_summary(result: Mapping[str, Any], verbose: bool = False) -> None:
    for condition, by_mode in result["summary"].items():
        for mode, s in by_mode.items():
            print(f"\n{result['label']} · {condition} · {mode} (p50 {s['p50_ms']} ms)")
            print(f"{'api':<14}{'n':>4}{'hit@1':>8}{'hit@5':>8}{'mrr@10':>8}"
                  f"{'ans.ok':>8}{'none':>6}{'false':>7}{'p50':>8}")  # fmt: skip
            for api, m in s["apis"].items():
                fa = "-" if m["false_answers"] is None else f"{m['false_answers']:.2f}"
                print(
                    f"{api:<14}{m['n']:>4}{m['hit@1']:>8.3f}{m['hit@5']:>8.3f}"
                    f"{m['mrr@10']:>8.3f}{m['answered_right']:>8.3f}{m['unanswerable']:>6}"
                    f"{fa:>7}{m['p50_ms']:>8.1f}"
                )
            for name in ("all", "held_out", "dev"):
                m = s[name]
                if m["hit@1"] is None:
                    continue
                print(
                    f"{name:<14}{'':>4}{m['hit@1']:>8.3f}{m['hit@5']:>8.3f}{m['mrr@10']:>8.3f}"
                    f"{m['answered_right']:>8.3f}"
                )
    if verbose:
        for condition, by_mode in result["rows"].items():
            for mode, found in by_mode.items():
                print(f"\n--- {condition} · {mode}")
                for r in found:
                    if r["answerable"] and r["rank"] == 1:
                        continue
                    mark = "-" if r["rank"] is None else str(r["rank"])
                    print(f"[{mark}] {r['id']} ({r['verdict']}): {r['query']}")
                    for top in r["top"][:3]:
                        print(f"      {top}")


def parse_overrides(items: Sequence[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--set wants KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def iter_apis(text: str) -> Iterator[str]:
    for a in text.split(","):
        if a and a not in APIS:
            raise SystemExit(f"unknown API {a!r}; known: {', '.join(APIS)}")
        if a:
            yield a


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--label", default="after", help="names the index cache and the output")
    ap.add_argument("--modes", default="keyword,hybrid")
    ap.add_argument("--conditions", default="alone,together")
    ap.add_argument("--apis", default=",".join(APIS))
    ap.add_argument("--set", action="append", default=[], help="setting override KEY=VALUE")
    ap.add_argument("--fresh", action="store_true", help="rebuild the indexes")
    ap.add_argument("--embedder", default="minilm", help="none: keyword-only indexes")
    ap.add_argument("--verbose", action="store_true", help="print every miss")
    ap.add_argument(
        "--questions",
        type=Path,
        help="a folder of {api}.jsonl files to ask instead of the held-out APIs' own "
        "(data/api_questions_2 is a second held-out batch)",
    )
    ap.add_argument(
        "--ask",
        default="",
        help="words to put before every request, e.g. 'which endpoint should I use to' "
        "(questions that open with a question word are asked as they are); {product} "
        "stands for the question's API ('in {product}, how do I')",
    )
    ap.add_argument(
        "--ask-end", default="", help="words to put after every request ('in {product}')"
    )
    ap.add_argument(
        "--before",
        default="",
        help="a sentence to put before every question, whatever it opens with ('Quick "
        "question:', \"I'm new to {product}.\")",
    )
    ap.add_argument(
        "--british",
        action="store_true",
        help="ask every question in British spelling (organisation, cancelled, centre)",
    )
    ap.add_argument(
        "--gerund",
        action="store_true",
        help="ask every request that opens with a verb as its gerund ('archiving a project')",
    )
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    global ASK, ASK_END, BEFORE, BRITISH, GERUND
    ASK, ASK_END, BEFORE = args.ask.strip(), args.ask_end.strip(), args.before.strip()
    BRITISH, GERUND = args.british, args.gerund
    if args.questions is not None:
        for api, (spec, asked) in list(APIS.items()):
            other = args.questions / asked.name
            if other.is_file():
                APIS[api] = (spec, other)
    apis = list(iter_apis(args.apis))
    global EMBEDDER
    EMBEDDER = args.embedder
    started = time.perf_counter()
    result = run(
        args.label,
        apis,
        args.modes.split(","),
        args.conditions.split(","),
        parse_overrides(args.set),
        args.fresh,
    )
    result["machine"] = f"{platform.machine()} python {platform.python_version()}"
    result["seconds"] = round(time.perf_counter() - started, 1)
    print_summary(result, args.verbose)
    out = args.out or HERE / "results" / f"api_questions-{args.label}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
