"""Render docs/benchmarks.md from the result files in benchmarks/results/.

    python benchmarks/report.py [--section api]

``--section api`` rewrites only the endpoint section of the page in place.

Every number in the page comes from a result file written by a benchmark run on this
machine; the page says which files and when they were written.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from groundkb import Settings

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


def _cell(m: dict[str, Any] | None) -> str:
    if not m or m.get("hit@1") is None:
        return "—"
    return f"{m['hit@1']:.3f} / {m['hit@5']:.3f} / {m['mrr@10']:.3f}"


def api_section() -> list[str]:
    """Endpoint questions: before/after, alone and together, and leave-one-spec-out."""
    after, when = load("api_questions-after.json")
    if not after:
        return []
    before, bwhen = load("api_questions-before.json")
    fit, fwhen = load("api_fit.json")
    lines = [
        "## Endpoint questions (OpenAPI)",
        "",
        f"`benchmarks/api_questions.py` (after: {when}; before: {bwhen or '—'}, the same script"
        " on the previous version's code, `PYTHONPATH=other/src`): natural-language questions over"
        " eight public APIs, every API weighing the same in `all`. Kubernetes and Twilio are"
        " the development questions (`shared/eval/api_questions_dev/`); Stripe, GitHub,"
        " Spotify, Slack, OpenAI and DigitalOcean the held-out questions of"
        " `benchmarks/data/api_questions/`, written before this ranking. `alone`: each API in"
        " an index of its own; `together`: all eight in one index. Cells: hit@1 / hit@5 /"
        " MRR@10 of the answerable questions.",
        "",
        "| condition | mode | API | before | after |",
        "|---|---|---|---|---|",
    ]
    for condition, by_mode in after["summary"].items():
        for mode, s in by_mode.items():
            prev = (before or {}).get("summary", {}).get(condition, {}).get(mode, {})
            for api, m in s["apis"].items():
                lines.append(
                    f"| {condition} | {mode} | {api} | {_cell(prev.get('apis', {}).get(api))}"
                    f" | {_cell(m)} |"
                )
            for group in ("all", "held_out"):
                lines.append(
                    f"| {condition} | {mode} | **{group}** | {_cell(prev.get(group))}"
                    f" | {_cell(s[group])} |"
                )
    lines += [
        "",
        "Distractors (hit@1 alone → together, `all`), the share of the"
        f" {_unanswerable(after)} questions with no operation answered anyway (`all`, alone"
        " / together), and the median search time of the run (p50 ms over every question of"
        " the condition):",
        "",
        "| mode | version | hit@1 alone | hit@1 together | cost | false answers | p50 alone"
        " | p50 together |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for mode in after["summary"].get("alone", {}):
        for name, res in (("before", before), ("after", after)):
            if not res:
                continue
            alone = res["summary"].get("alone", {}).get(mode)
            together = res["summary"].get("together", {}).get(mode)
            if not alone or not together:
                continue
            a1, t1 = alone["all"]["hit@1"], together["all"]["hit@1"]
            lines.append(
                f"| {mode} | {name} | {a1:.3f} | {t1:.3f} | {a1 - t1:.3f}"
                f" | {alone['all']['false_answers']:.3f} / {together['all']['false_answers']:.3f}"
                f" | {alone['p50_ms']}"
                f" | {together['p50_ms']} |"
            )
    if fit:
        lines += [
            "",
            f"Leave one spec out (`benchmarks/fit_api_ranking.py`, {fwhen}): each API scored"
            " alone with the constants best on the other seven (grid:"
            + ", ".join(f"`{k}` {list(v)}" for k, v in fit["grid"].items())
            + "); best on all eight: "
            + ", ".join(f"`{k}` = {v}" for k, v in fit["final"].items())
            + "; declared defaults (`settings.py`, which says why where they differ): "
            + ", ".join(f"`{k}` = {getattr(Settings(), k)}" for k in fit["final"])
            + ".",
            "",
            "| API | constants chosen without it | "
            + " | ".join(f"{mode} hit@1 / hit@5 / MRR@10" for mode in fit["modes"])
            + " |",
            "|---|---|" + "---|" * len(fit["modes"]),
        ]
        for api, fold in fit["folds"].items():
            chosen = ", ".join(f"{k.removeprefix('api_')} {v}" for k, v in fold["chosen"].items())
            lines.append(
                f"| {api} | {chosen} | "
                + " | ".join(_cell(fold.get(mode)) for mode in fit["modes"])
                + " |"
            )
        for group, key in (("all", "loso"), ("held-out six", "loso_held_out")):
            lines.append(
                f"| **{group}** | | "
                + " | ".join(_cell(fit[key].get(mode)) for mode in fit["modes"])
                + " |"
            )
        if fit.get("together"):
            lines += [
                "",
                "With the other seven APIs as distractors (the `together` index), each API"
                " scored with its fold's constants and the `api_context_factor` best on the"
                " other seven:",
                "",
                "| API | context factor | "
                + " | ".join(f"{mode} hit@1 / hit@5 / MRR@10" for mode in fit["modes"])
                + " |",
                "|---|---|" + "---|" * len(fit["modes"]),
            ]
            for api, fold in fit["together"].items():
                lines.append(
                    f"| {api} | {fold['context']} | "
                    + " | ".join(_cell(fold.get(mode)) for mode in fit["modes"])
                    + " |"
                )
            for group, key in (("all", "loso"), ("held-out six", "loso_held_out")):
                lines.append(
                    f"| **{group}** | | "
                    + " | ".join(_cell(fit[key].get(f"together-{mode}")) for mode in fit["modes"])
                    + " |"
                )
    if fit:
        loso = fit["loso"]
        lines += [
            "",
            "Against the targets (hit@1 ≥ 0.70 and hit@5 ≥ 0.90 leave one spec out, all eight"
            " APIs): "
            + "; ".join(
                f"{mode} {loso[mode]['hit@1']:.3f} / {loso[mode]['hit@5']:.3f}"
                for mode in fit["modes"]
                if mode in loso
            )
            + " alone — "
            + ("met" if any(_met(loso.get(mode)) for mode in fit["modes"]) else "not met")
            + "; the held-out six: "
            + "; ".join(
                f"{mode} {fit['loso_held_out'][mode]['hit@1']:.3f}"
                f" / {fit['loso_held_out'][mode]['hit@5']:.3f}"
                for mode in fit["modes"]
                if mode in fit.get("loso_held_out", {})
            )
            + ".",
        ]
    lines += _api_side_effects()
    lines.append("")
    return lines


def _met(m: dict[str, float] | None) -> bool:
    """Issue 16's bar: hit@1 ≥ 0.70 and hit@5 ≥ 0.90."""
    return m is not None and m["hit@1"] >= 0.70 and m["hit@5"] >= 0.90


def _unanswerable(result: dict[str, Any]) -> int:
    """How many questions of a run have no operation (the ``none`` count of each API)."""
    alone: dict[str, Any] = next(iter(result["summary"].get("alone", {}).values()), {})
    return sum(int(m.get("unanswerable", 0)) for m in alone.get("apis", {}).values())


def _api_side_effects() -> list[str]:
    """What the API ranking costs elsewhere, before/after in the same run: keyword nDCG@10
    on the BEIR-format sets (fresh indexes each) and the verdicts on the API verdict set."""
    lines: list[str] = []
    check, _ = load("api_questions-main-kw.json")
    before, _ = load("api_questions-before.json")
    if check and before:
        same = all(
            check["summary"][c]["keyword"]["all"] == before["summary"][c]["keyword"]["all"]
            for c in check["summary"]
            if c in before["summary"]
        )
        lines += [
            "",
            "The previous version's indexes were built once and reused; the same version on"
            " keyword-only indexes it built afresh (`--label main-kw --embedder none`) gives"
            + (" identical" if same else " different")
            + " keyword numbers.",
        ]
    kb_before, _ = load("beir_keyword-before.json")
    kb_after, when = load("beir_keyword-after.json")
    if kb_before and kb_after:
        lines += [
            "",
            f"Keyword ranking elsewhere (`benchmarks/keyword_search.py --sizes ''`, {when},"
            " before then after, each on a fresh index): nDCG@10 / hit@1.",
            "",
            "| set | before | after | Δ nDCG@10 |",
            "|---|---|---|---|",
        ]
        for name, a in kb_after["eval"].items():
            b = kb_before["eval"].get(name)
            if b:
                lines.append(
                    f"| {name} | {b['ndcg@10']:.4f} / {b['hit@1']:.4f}"
                    f" | {a['ndcg@10']:.4f} / {a['hit@1']:.4f}"
                    f" | {a['ndcg@10'] - b['ndcg@10']:+.4f} |"
                )
    v_before, _ = load("verdicts_api-before.json")
    v_after, vwhen = load("verdicts_api-after.json")
    if v_before and v_after:
        lines += [
            "",
            f"Verdicts on the API verdict set (`benchmarks/verdicts.py --sets api`, {vwhen};"
            " Kubernetes and Twilio, 100 questions, 20 with no operation; the verdict model"
            " as fitted on the previous ranking, not refitted). Before: the previous code on"
            " its index; after: this code on a fresh index.",
            "",
            "| mode | version | accuracy | answered | precision | answered right | false answers |",
            "|---|---|---|---|---|---|---|",
        ]
        for mode in v_after:
            for name, res in (("before", v_before), ("after", v_after)):
                r = res.get(mode, {}).get("api")
                if r:
                    lines.append(
                        f"| {mode} | {name} | {r['accuracy']} | {r['answered']}"
                        f" | {r['precision']} | {r['answered_right']} | {r['false_answers']} |"
                    )
    return lines


def splice_api_section() -> None:
    """Replace only the endpoint section of the existing page (other sections of the page
    may come from benchmarks whose results this script does not render)."""
    page = OUT.read_text(encoding="utf-8").split("\n")
    head = "## Endpoint questions (OpenAPI)"
    start = page.index(head)
    end = next((i for i in range(start + 1, len(page)) if page[i].startswith("## ")), len(page))
    OUT.write_text("\n".join([*page[:start], *api_section(), *page[end:]]), encoding="utf-8")
    print(f"wrote the endpoint section of {OUT.relative_to(ROOT)}")


def main() -> None:
    if sys.argv[1:] == ["--section", "api"]:
        splice_api_section()
        return
    lines = [
        "# Benchmarks",
        "",
        "Measured on the project's 2-core development machine (shared and noisy: compare",
        "numbers within one run). Regenerate with `make bench`, then",
        "`python benchmarks/report.py`: it renders eight sections (retrieval quality by",
        "mode, speed, SQLite and PostgreSQL, endpoint questions, web sources, tldr pages,",
        "local embedding speed, REST vs MCP) from `benchmarks/results/*.json`, replacing",
        "them whole (notes written into them by hand are lost), and keeps every other",
        "section after them.",
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
            " | asked again p50 / p95 ms | hybrid p50 / p95 ms | query embedding p50 ms"
            " | index MB |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for r in kw["synthetic"].values():
            lines.append(
                f"| {r['chunks']:,} | {r['ingest_chunks_per_s']:,.0f}"
                f" | {r['reingest_unchanged_s']} s | {r['reingest_speedup']}×"
                f" | {r['search_p50_ms']} / {r['search_p95_ms']}"
                f" | {r.get('search_again_p50_ms', '—')} / {r.get('search_again_p95_ms', '—')}"
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
    lines += api_section()
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
    lines += _kept_sections(lines)
    OUT.write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")


def _kept_sections(generated: list[str]) -> list[str]:
    """The existing page's sections this script does not render (written from results
    of benchmarks it does not read), kept in their order after the generated ones."""
    if not OUT.is_file():
        return []
    made = {line for line in generated if line.startswith("## ")}
    kept: list[str] = []
    keep = False
    for line in OUT.read_text(encoding="utf-8").split("\n"):
        if line.startswith("## "):
            keep = line not in made
            if keep and kept and kept[-1] != "":
                kept.append("")
        if keep:
            kept.append(line)
    return kept


if __name__ == "__main__":
    main()
