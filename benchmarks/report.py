"""Render docs/benchmarks.md from the result files in benchmarks/results/.

    python benchmarks/report.py

Every number in the page comes from a result file written by a benchmark run on this
machine; the page says which files and when they were written.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
OUT = ROOT / "docs" / "benchmarks.md"

# Baselines measured by the evaluation data's maintainers on the same files (2 cores);
# see ../shared/eval/README.md. nDCG@10 / Recall@10 / hit@1.
BASELINES = {
    "beir_scifact": {"bm25": (0.686, 0.819, 0.550), "minilm": (0.645, 0.783, 0.503),
                     "rrf": (0.717, 0.848, 0.590)},
    "tldr_docprompting_desc_dev": {"bm25": (0.287, 0.394, 0.189)},
    "gorilla_torchhub": {"bm25": (0.274, 0.398, 0.161), "minilm": (0.255, 0.409, 0.134),
                         "rrf": (0.283, 0.419, 0.167)},
    "gorilla_tensorflowhub": {"bm25": (0.329, 0.053, 0.283)},
}  # fmt: skip


def load(name: str) -> tuple[dict[str, Any] | None, str]:
    path = RESULTS / name
    if not path.is_file():
        return None, ""
    when = datetime.fromtimestamp(path.stat().st_mtime, UTC).strftime("%Y-%m-%d %H:%M UTC")
    return json.loads(path.read_text(encoding="utf-8")), when


def store_backends() -> list[str]:
    """The SQLite / PostgreSQL comparison, if it was run."""
    data, when = load("store_backends.json")
    if not data:
        return []
    lines = [
        "## SQLite and PostgreSQL",
        "",
        f"`benchmarks/store_backends.py`, {when}; PostgreSQL: {data['postgres']}, on the same"
        f" machine ({data['machine']}), over TCP on loopback.",
        "",
        "Ranking: each evaluation set ingested into both backends and every judged query"
        " searched on both (limit 100, one chunk per document). *Same top 10*: the share of"
        " queries whose first ten documents are identical, in the same order. Hybrid uses"
        " the same vectors in both (embedded once, copied with `groundkb copy`); PostgreSQL"
        " searches them with HNSW, SQLite exactly.",
        "",
        "| set | mode | SQLite nDCG@10 / R@10 / hit@1 | PostgreSQL nDCG@10 / R@10 / hit@1"
        " | same top 10 | p50 ms SQLite / PostgreSQL |",
        "|---|---|---|---|---|---|",
    ]
    for r in data["ranking"]:
        cells = [
            f"{r[b]['ndcg@10']:.4f} / {r[b]['recall@10']:.4f} / {r[b]['hit@1']:.4f}"
            for b in ("sqlite", "postgresql")
        ]
        lines.append(
            f"| {r['set']} | {r['mode']} | {cells[0]} | {cells[1]} | {r['same_top10']:.1%}"
            f" | {r['sqlite']['p50_ms']} / {r['postgresql']['p50_ms']} |"
        )
    lines += [
        "",
        "Single process, synthetic corpora (as above), keyword search at the default limit"
        " over 300 real queries, the two backends alternating query by query:",
        "",
        "| chunks | backend | ingest chunks/s | keyword p50 / p95 ms | size MB |",
        "|---|---|---|---|---|",
    ]
    for r in data["latency"].values():
        for b in ("sqlite", "postgresql"):
            x = r[b]
            lines.append(
                f"| {x['chunks']:,} | {b} | {x['ingest_chunks_per_s']:,} | {x['p50_ms']} /"
                f" {x['p95_ms']} | {x['size_mb']} |"
            )
    if data["serving"]:
        first = data["serving"][0]
        lines += [
            "",
            f"Serving the {min(int(k) for k in data['latency']):,}-chunk corpus:"
            f" `groundkb serve --http` processes, {first['clients']} concurrent MCP clients"
            " (streamable HTTP on loopback, in one process on the same 2 cores) calling"
            " `search_knowledge` for 10 s after a warm-up; latency as the clients see it.",
            "",
            "| backend | server processes | searches/s | p50 / p95 ms | errors |",
            "|---|---|---|---|---|",
        ]
        for r in data["serving"]:
            lines.append(
                f"| {r['backend']} | {r['processes']} | {r['per_s']}"
                f" | {r['p50_ms']} / {r['p95_ms']} | {r['errors']} |"
            )
        lines += [
            "",
            "On this machine the clients, the servers and PostgreSQL share the same 2 cores,"
            " so more server processes cannot add throughput: the table shows that several"
            " processes serve one database without errors, not how they scale on more cores."
            " PostgreSQL ingests more slowly because every document is one durable"
            " transaction that also updates the exact term statistics.",
        ]
    lines.append("")
    return lines


def main() -> None:
    lines = [
        "# Benchmarks",
        "",
        "Measured on the project's 2-core development machine (shared and noisy: compare",
        "numbers within one run). Regenerate with `make bench`, then",
        "`python benchmarks/report.py`.",
        "",
    ]
    modes, when = load("retrieval_modes.json")
    if modes:
        lines += [
            "## Retrieval quality by mode",
            "",
            f"`benchmarks/retrieval_modes.py`, {when}; embedder `{modes['embedder']}`"
            " (all-MiniLM-L6-v2 int8 on onnxruntime). Hybrid default: weighted fusion,"
            " keyword 0.3 / vector 0.7. Latency at limit 100.",
            "",
            "| set | mode | nDCG@10 | R@10 | R@100 | hit@1 | p50 / p95 ms | baseline nDCG@10 |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for name, reports in modes["sets"].items():
            base = BASELINES.get(name, {})
            for r in reports:
                key = (
                    "bm25"
                    if r["mode"] == "keyword"
                    else "minilm"
                    if r["mode"] == "vector"
                    else "rrf"
                )
                ref = base.get(key)
                lines.append(
                    f"| {name} | {r['mode']} | {r['ndcg_at_10']:.4f} | {r['recall_at_10']:.4f}"
                    f" | {r['recall_at_100']:.4f} | {r['hit_at_1']:.4f}"
                    f" | {r['latency_p50_ms']} / {r['latency_p95_ms']}"
                    f" | {f'{ref[0]:.3f} ({key})' if ref else '—'} |"
                )
        lines.append("")
    kw, when = load("keyword.json")
    if kw:
        lines += [
            "## Speed: ingest and search on synthetic corpora",
            "",
            f"`benchmarks/keyword_search.py`, {when}. Markdown pages of 10 sections built",
            "from real text (SciFact abstracts, tldr and TensorFlow Hub descriptions), one",
            "chunk per section; 300 real queries at the default limit (5). Hybrid latency",
            "includes embedding the query with the local model; the stored vectors are",
            "random unit vectors (exact search costs the same whatever their values;",
            "embedding 100k chunks would take ~20 minutes here).",
            "",
            "| chunks | ingest chunks/s | unchanged re-ingest | speed-up | keyword p50 / p95 ms"
            " | hybrid p50 / p95 ms | query embedding p50 ms | index MB |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in kw["synthetic"].values():
            lines.append(
                f"| {r['chunks']:,} | {r['ingest_chunks_per_s']:,.0f}"
                f" | {r['reingest_unchanged_s']} s | {r['reingest_speedup']}×"
                f" | {r['search_p50_ms']} / {r['search_p95_ms']}"
                f" | {r.get('hybrid_p50_ms', '—')} / {r.get('hybrid_p95_ms', '—')}"
                f" | {r.get('query_embed_p50_ms', '—')} | {r['db_mb']} |"
            )
        lines += [
            "",
            "Targets (100k chunks, 2 cores): keyword p50 ≤ 10 ms and p95 ≤ 30 ms; hybrid p50"
            " ≤ 30 ms; ingest ≥ 2,000 chunks/s keyword-only; unchanged re-ingest ≥ 10× faster.",
            "",
            "Keyword-only quality in the same run (`groundkb eval`, limit 100):",
            "",
            "| set | nDCG@10 | R@10 | hit@1 | BM25 baseline nDCG@10 / R@10 / hit@1 |",
            "|---|---|---|---|---|",
        ]
        for name, r in kw["eval"].items():
            ref = BASELINES.get(name, {}).get("bm25")
            lines.append(
                f"| {name} | {r['ndcg@10']:.4f} | {r['recall@10']:.4f} | {r['hit@1']:.4f}"
                f" | {' / '.join(f'{x:.3f}' for x in ref) if ref else '—'} |"
            )
        lines.append("")
    lines += store_backends()
    api, when = load("api_questions.json")
    if api:
        sizes = {name: g["all"]["n"] for name, g in api["summary"]["keyword"].items()}
        lines += [
            "## Endpoint questions (OpenAPI)",
            "",
            f"`benchmarks/api_questions.py`, {when}: natural-language questions over the"
            " Kubernetes and Twilio specs ingested together; a hit is the expected operation."
            f" The dev set ({sizes.get('dev', 0)} questions, `endpoint_questions.yaml`) is the"
            " one the API ranking was developed on; the held-out set"
            f" ({sizes.get('held_out', 0)}, `endpoint_questions_heldout.yaml`) was written"
            " before that work and never tuned on.",
            "",
            "| mode | questions | API | hit@1 | hit@5 | answered |",
            "|---|---|---|---|---|---|",
        ]
        for mode, sets in api["summary"].items():
            for set_name, groups in sets.items():
                for name, g in groups.items():
                    lines.append(
                        f"| {mode} | {set_name} | {name} | {g['hit@1']:.3f} | {g['hit@5']:.3f}"
                        f" | {g['answer']:.3f} |"
                    )
        distracted, dwhen = load("api_questions_distractors.json")
        if distracted:
            cells = [
                f"{mode} {set_name} {groups['all']['hit@1']:.3f} / {groups['all']['hit@5']:.3f}"
                for mode, sets in distracted["summary"].items()
                for set_name, groups in sets.items()
            ]
            lines += [
                "",
                f"With the Stripe and GitHub specs in the same index (`--distractors`, {dwhen}),"
                " hit@1 / hit@5: " + "; ".join(cells) + ".",
            ]
        gh = api["github_ingest"]
        lines += [
            "",
            f"GitHub REST spec (13 MB): {gh['documents']:,} operations ingested keyword-only in"
            f" {gh['seconds']} s. Kubernetes + Twilio ingest with embeddings: "
            + ", ".join(
                f"{i['source']} {i['documents']:,} docs in {i['seconds']} s" for i in api["ingest"]
            )
            + ".",
            "",
        ]
    web, when = load("web_sources.json")
    if web:
        kw, again, conv = web["keyword_crawl"], web["unchanged_recrawl"], web["convert_only"]
        lines += [
            "## Web sources: the Python documentation crawled from loopback",
            "",
            f"`benchmarks/web_sources.py`, {when}: the {conv['pages']} pages"
            f" ({conv['mb']} MB of HTML) of Debian's `python3-doc`, served by Python's"
            " `http.server` on 127.0.0.1 (Last-Modified, no ETag) and crawled with rate"
            " 1000/s and 4 requests in flight (no politeness delay on our own server; the"
            " default 4/s would take about 2 minutes for this site).",
            "",
            "| crawl | pages | documents | chunks written | embedded | seconds | pages/s"
            " | load avg |",
            "|---|---|---|---|---|---|---|---|",
        ]
        rows = [("keyword-only, first", kw), ("keyword-only, unchanged re-crawl", again)]
        if "hybrid_crawl" in web:
            rows.append(("hybrid (MiniLM int8), first", web["hybrid_crawl"]))
        for label, r in rows:
            lines.append(
                f"| {label} | {r['pages_visited']} | {r['documents']} | {r['chunks_written']:,}"
                f" | {r['chunks_embedded']:,} | {r['seconds']} | {r['pages_per_s']}"
                f" | {r.get('load_average', '—')} |"
            )
        statuses = ", ".join(f"{n} × {code}" for code, n in again["http_statuses"].items())
        lines += [
            "",
            f"The unchanged re-crawl took {web['recrawl_speedup']}× less time than the first"
            f" crawl (HTTP answers: {statuses}); nothing was parsed or written. HTML to"
            f" Markdown alone (no network, no store): {conv['pages_per_s']} pages/s (load"
            f" average {conv.get('load_average', '—')}: the machine is shared, so speeds"
            f" vary between rows). Keyword index: {web['chunks']:,} chunks,"
            f" {web['index_mb']} MB.",
            "",
            f"Retrieval on the {web['keyword_quality']['questions']} questions of"
            " `benchmarks/data/python_docs_questions.yaml` (written before any result was"
            " seen; a hit is a page the question lists):",
            "",
            "| mode | hit@1 | hit@5 | p50 ms |",
            "|---|---|---|---|",
        ]
        for mode in ("keyword", "hybrid"):
            q = web.get(f"{mode}_quality")
            if q:
                lines.append(f"| {mode} | {q['hit@1']:.3f} | {q['hit@5']:.3f} | {q['p50_ms']} |")
        a = web["anchors"]
        lines += [
            "",
            f"Section citations (page URL + the anchor derived from the heading):"
            f" {a['anchor_exists']:,} of {a['section_citations']:,} ({a['share']:.1%}) name"
            " an anchor that exists on the page.",
            "",
        ]
    tldr, when = load("tldr_pages.json")
    if tldr:
        ing = tldr["ingest"]
        lines += [
            "## tldr pages through the tldr loader",
            "",
            f"`benchmarks/tldr_pages.py`, {when}: {ing['documents']:,} real pages ingested"
            f" with embeddings in {ing['seconds']} s ({ing['errors']} errors), asked the"
            f" {tldr['queries']:,} DocPrompting dev questions. The pages include their"
            " examples, which many questions paraphrase, so this is not comparable with the"
            " description-only evaluation set above (BM25 baseline 0.287 / hit@1 0.189).",
            "",
            "| mode | nDCG@10 | hit@1 | p50 ms (limit 20) |",
            "|---|---|---|---|",
        ]
        for mode, r in tldr["modes"].items():
            lines.append(f"| {mode} | {r['ndcg@10']:.4f} | {r['hit@1']:.4f} | {r['p50_ms']} |")
        lines.append("")
    emb, when = load("embed_speed.json")
    if emb:
        lines += [
            "## Local embedding speed",
            "",
            f"`benchmarks/embed_speed.py`, {when}; `{emb['machine'].get('name_int8', '')}`,"
            " onnxruntime, no torch.",
            "",
            "| texts | tokens mean / median | chunks/s (median of rounds) |",
            "|---|---|---|",
        ]
        for kind, variants in emb["speed"].items():
            tok = emb["tokens"].get(kind, {})
            for variant, v in variants.items():
                lines.append(
                    f"| {kind} ({variant}) | {tok.get('mean', '—')} / {tok.get('median', '—')}"
                    f" | {v['median']} |"
                )
        for variant, q in emb.get("latency_ms", {}).items():
            lines += ["", f"One query ({variant}): p50 {q['p50']} ms, p90 {q['p90']} ms."]
        lines.append("")
    rvm, when = load("rest_vs_mcp.json")
    if rvm:
        core = rvm["core"]
        lines += [
            "## REST vs MCP over HTTP",
            "",
            f"`benchmarks/rest_vs_mcp.py`, {rvm.get('measured_at') or when}: {rvm['corpus']}"
            f" ({rvm['documents']:,} documents, {rvm['chunks']:,} chunks, keyword retrieval),"
            f" {rvm['queries']} questions × {rvm['rounds']} rounds per cell against one"
            " `groundkb serve --http` process: `GET /api/search` and the MCP tool"
            " `search_knowledge` (streamable HTTP, one session per client), limit 5. Client"
            f" and server share the machine's {rvm['cpus']} cores; {rvm['errors']} errors.",
            "",
            "| transport | clients | p50 ms | p95 ms | mean ms | requests/s |",
            "|---|---|---|---|---|---|",
            f"| core (in process, no HTTP) | 1 | {core['p50_ms']} | {core['p95_ms']}"
            f" | {core['mean_ms']} | {core['requests_per_s']} |",
        ]
        for clients in (1, 8):
            for name in ("rest", "mcp"):
                r = rvm["transports"][f"{name}@{clients}"]
                lines.append(
                    f"| {'REST' if name == 'rest' else 'MCP'} | {clients} | {r['p50_ms']}"
                    f" | {r['p95_ms']} | {r['mean_ms']} | {r['requests_per_s']} |"
                )
        lines += [
            "",
            f"MCP / REST p50: {rvm['mcp_over_rest_p50@1']}× with 1 client,"
            f" {rvm['mcp_over_rest_p50@8']}× with 8.",
            "",
        ]
    OUT.write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
