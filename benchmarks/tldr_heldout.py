"""Write a held-out set of CLI task descriptions, built the way the tldr development set
(``../shared/eval/tldr_docprompting_desc_dev``) was: each example description of a tldr
page, lowercased and without its closing colon, is a question whose answer is that page.

The pages are drawn at random (seed 29) from the real pages in
``../shared/corpora/tldr/pages/`` that the development set never asks about, as many as
it asks about (375), so that the verdict and ranking can be judged on questions no fit
and no rule has seen. The documents are the development set's own corpus (titles and
descriptions of every page), so ``verdicts.py --sets tldr_heldout`` searches the same
index as the development set.

Written once and committed (``benchmarks/data/tldr_heldout/``: ``queries.jsonl`` and
``qrels.tsv`` in BEIR format); running it again writes the same files.

    python benchmarks/tldr_heldout.py
"""

from __future__ import annotations

import json
import random
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = next(
    (p / "shared" for p in HERE.parents if (p / "shared" / "eval").is_dir()),
    HERE.parent.parent / "shared",
)
PAGES = SHARED / "corpora" / "tldr" / "pages"
DEV = SHARED / "eval" / "tldr_docprompting_desc_dev"
OUT = HERE / "data" / "tldr_heldout"
SEED = 29
EXAMPLE = re.compile(r"^- (.+?):?\s*$")
# today's pages mark a long option's letters ("[a]dd", "e[x]tract"); the development
# set's pages did not yet
MNEMONIC = re.compile(r"(?<=\w)\[(\w+)\]|\[(\w+)\](?=\w)")


def question(description: str) -> str:
    return MNEMONIC.sub(lambda m: m.group(1) or m.group(2), description).strip().lower()


def main() -> int:
    if not PAGES.is_dir() or not DEV.is_dir():
        print(f"need {PAGES} and {DEV}", file=sys.stderr)
        return 2
    corpus = {json.loads(line)["id"] for line in (DEV / "corpus.jsonl").open(encoding="utf-8")}
    asked = {
        line.split("\t")[1]
        for line in (DEV / "qrels.tsv").read_text(encoding="utf-8").splitlines()[1:]
    }
    pages: dict[str, Path] = {}
    for path in sorted(PAGES.rglob("*.md")):
        # a command on two platforms is one document of the corpus: its first page
        if path.stem in corpus and path.stem not in asked:
            pages.setdefault(path.stem, path)
    chosen = sorted(random.Random(SEED).sample(sorted(pages), len(asked)))
    queries: list[dict[str, str]] = []
    qrels: list[tuple[str, str]] = []
    for name in chosen:
        for line in pages[name].read_text(encoding="utf-8").splitlines():
            if m := EXAMPLE.match(line):
                qid = f"heldout-{len(queries)}"
                queries.append({"id": qid, "text": question(m.group(1))})
                qrels.append((qid, name))
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "queries.jsonl").write_text(
        "".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8"
    )
    (OUT / "qrels.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n" for q, d in qrels),
        encoding="utf-8",
    )
    print(f"{len(queries)} questions about {len(chosen)} pages written to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
