"""Fit the API ranking constants leave-one-spec-out, and report them that way.

The constants of ``search/apis.operation_factor`` are settings: ``api_kind_boost``,
``api_resource_factor`` and ``api_parent_factor``. Every combination of a small grid is
tried on the eight APIs of ``api_questions.py``, each in its own index (the ``alone``
indexes of ``--label``, built by that script), in keyword and hybrid mode. Then:

- **leave one spec out**: for each API, the combination with the best mean MRR@10 over
  the *other* seven (both modes, every API weighing the same) is chosen, and the left-out
  API is scored with it — numbers for specs the constants were not fitted on;
- **declared settings**: the combination best over all eight, printed as the lines to
  put in ``settings.py``.

    python benchmarks/fit_api_ranking.py [--label after] [--modes keyword,hybrid]
        [--also-label after --also-modes hybrid]

``--context-label`` then fits ``api_context_factor`` (it only acts with several APIs in
one index) the same way on that label's ``together`` index: for each left-out API, the
value of :data:`CONTEXT` best on the other seven, with that fold's other constants.

A grid in hybrid mode costs many embedded searches; ``--also-label``/``--also-modes``
fit on ``--modes`` only and then score each left-out API in the other modes (on the
indexes of ``--also-label``) with the constants its fold chose, so those numbers are
leave-one-spec-out as well.

Each combination's results are cached in ``benchmarks/results/tmp/apifit-{label}.json``
with a fingerprint of the groundkb source they were measured with: other source starts
over (delete the file to start over anyway); writes ``benchmarks/results/api_fit.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import api_questions as aq
from fingerprint import code_fingerprint

GRID = {
    "api_kind_boost": (0.0, 0.1, 0.25, 0.5, 1.0),
    "api_resource_factor": (1.0, 1.25, 1.5),
    "api_parent_factor": (0.7, 0.85, 1.0),
}
METRICS = ("hit@1", "hit@5", "mrr@10")
CONTEXT = (1.0, 0.8, 0.6, 0.4)


def key(combo: dict[str, float]) -> str:
    return " ".join(f"{k}={v}" for k, v in combo.items())


def evaluate(label: str, modes: list[str], combo: dict[str, float]) -> dict[str, Any]:
    """{mode: {api: metrics}} for one combination, on the alone indexes."""
    out: dict[str, Any] = {}
    overrides = {k: str(v) for k, v in combo.items()}
    for mode in modes:
        out[mode] = {}
        for api in aq.APIS:
            db = aq.CACHE / f"apiq-{label}" / f"{api}.db"
            if not db.exists():
                raise SystemExit(f"no index {db}: run api_questions.py --label {label} first")
            answerable = [q for q in aq.questions(api) if q.ids]
            rows = aq.ask(db, answerable, mode, overrides)
            out[mode][api] = {m: aq.metrics(rows)[m] for m in METRICS}
    return out


def evaluate_together(label: str, modes: list[str], combo: dict[str, float]) -> dict[str, Any]:
    """{mode: {api: metrics}} for one combination, on the together index."""
    db = aq.CACHE / f"apiq-{label}" / "together.db"
    if not db.exists():
        raise SystemExit(f"no index {db}: run api_questions.py --label {label} first")
    overrides = {k: str(v) for k, v in combo.items()}
    out: dict[str, Any] = {}
    for mode in modes:
        qs = [q for api in aq.APIS for q in aq.questions(api) if q.ids]
        rows = aq.ask(db, qs, mode, overrides)
        out[mode] = {
            api: {m: aq.metrics([r for r in rows if r["api"] == api])[m] for m in METRICS}
            for api in aq.APIS
        }
    return out


def score(result: dict[str, Any], apis: list[str]) -> float:
    """Mean MRR@10 over ``apis`` and the modes, every API and mode weighing the same."""
    values = [result[mode][api]["mrr@10"] for mode in result for api in apis]
    return sum(values) / len(values)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--label", default="after")
    ap.add_argument("--modes", default="keyword,hybrid")
    ap.add_argument("--also-label", default="")
    ap.add_argument("--also-modes", default="")
    ap.add_argument("--context-label", default="", help="fit api_context_factor on together")
    args = ap.parse_args()
    modes = args.modes.split(",")
    cache = aq.CACHE / f"apifit-{args.label}.json"
    table: dict[str, Any] = json.loads(cache.read_text()) if cache.exists() else {}
    code = code_fingerprint()
    if table.get("code") != code:  # results of other code rank otherwise: start over
        table = {"code": code}
    combos = [dict(zip(GRID, values, strict=True)) for values in itertools.product(*GRID.values())]
    started = time.perf_counter()
    for i, combo in enumerate(combos, 1):
        k = key(combo) + f" modes={','.join(modes)}"
        if k not in table:
            table[k] = {"combo": combo, "result": evaluate(args.label, modes, combo)}
            cache.write_text(json.dumps(table), encoding="utf-8")
        print(
            f"[{i}/{len(combos)}] {key(combo)}: {score(table[k]['result'], list(aq.APIS)):.4f}"
            f" ({time.perf_counter() - started:.0f} s)",
            flush=True,
        )
    entries = [table[key(c) + f" modes={','.join(modes)}"] for c in combos]
    apis = list(aq.APIS)
    folds: dict[str, Any] = {}
    for left in apis:
        train = [a for a in apis if a != left]
        best = max(entries, key=lambda e: score(e["result"], train))
        folds[left] = {
            "chosen": best["combo"],
            **{mode: best["result"][mode][left] for mode in modes},
        }
    loso = {
        mode: {m: round(sum(folds[a][mode][m] for a in apis) / len(apis), 4) for m in METRICS}
        for mode in modes
    }
    held = [a for a in apis if a not in aq.DEV_APIS]
    loso_held = {
        mode: {m: round(sum(folds[a][mode][m] for a in held) / len(held), 4) for m in METRICS}
        for mode in modes
    }
    final = max(entries, key=lambda e: score(e["result"], apis))
    also = [m for m in args.also_modes.split(",") if m]
    if also:
        label = args.also_label or args.label
        chosen: dict[str, Any] = {}
        for api in apis:
            k = key(folds[api]["chosen"])
            if k not in chosen:
                chosen[k] = evaluate(label, also, folds[api]["chosen"])
            for mode in also:
                folds[api][mode] = chosen[k][mode][api]
        for mode in also:
            loso[mode] = {
                m: round(sum(folds[a][mode][m] for a in apis) / len(apis), 4) for m in METRICS
            }
            loso_held[mode] = {
                m: round(sum(folds[a][mode][m] for a in held) / len(held), 4) for m in METRICS
            }
        modes = [*modes, *also]
    together: dict[str, Any] = {}
    if args.context_label:
        all_modes = modes
        runs: dict[str, Any] = {}
        for combo in [*(folds[a]["chosen"] for a in apis), final["combo"]]:
            for c in CONTEXT:
                full = {**combo, "api_context_factor": c}
                k = key(full)
                if k not in runs:
                    runs[k] = {"combo": full, "result": evaluate_together(
                        args.context_label, all_modes, full)}  # fmt: skip
                    print(f"  together {k}: {score(runs[k]['result'], apis):.4f}", flush=True)
        for left in apis:
            train = [a for a in apis if a != left]
            options = [runs[key({**folds[left]["chosen"], "api_context_factor": c})]
                       for c in CONTEXT]  # fmt: skip
            best = max(options, key=lambda e: score(e["result"], train))
            together[left] = {
                "context": best["combo"]["api_context_factor"],
                **{mode: best["result"][mode][left] for mode in all_modes},
            }
        options = [runs[key({**final["combo"], "api_context_factor": c})] for c in CONTEXT]
        best_all = max(options, key=lambda e: score(e["result"], apis))
        final = {"combo": best_all["combo"], "result": final["result"]}
        for mode in all_modes:
            loso[f"together-{mode}"] = {
                m: round(sum(together[a][mode][m] for a in apis) / len(apis), 4) for m in METRICS
            }
            loso_held[f"together-{mode}"] = {
                m: round(sum(together[a][mode][m] for a in held) / len(held), 4) for m in METRICS
            }
    print("\nleave one spec out (each API scored with constants fitted on the other seven):")
    for api in apis:
        cells = "  ".join(
            f"{mode} " + " ".join(f"{folds[api][mode][m]:.3f}" for m in METRICS) for mode in modes
        )
        print(f"  {api:<13} {key(folds[api]['chosen'])}  |  {cells}")
    for mode in modes:
        print(f"  all ({mode}): {loso[mode]}   held-out six: {loso_held[mode]}")
    print("\nfitted on all eight APIs (declare in settings.py):")
    for k, v in final["combo"].items():
        print(f"  {k.upper()} = {v}")
    out = aq.HERE / "results" / "api_fit.json"
    out.write_text(
        json.dumps(
            {
                "grid": GRID,
                "modes": modes,
                "folds": folds,
                "together": together,
                "loso": loso,
                "loso_held_out": loso_held,
                "final": final["combo"],
                "final_in_sample": final["result"],
            },
            indent=1,
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
