"""Terminal rendering and input parsing for ``groundkb prompt`` and ``groundkb templates``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput

if TYPE_CHECKING:
    from ..answer import BuiltPrompt


def read_structured(value: str, option: str) -> Any:
    """JSON or YAML given inline, or read from ``@FILE``."""
    import yaml

    text = value
    if value.startswith("@"):
        try:
            text = Path(value[1:]).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInput(f"{option}: cannot read {value[1:]}: {exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        raise InvalidInput(f"{option}: not valid JSON or YAML") from None


def prompt_audit(p: BuiltPrompt) -> str:
    """What went into a prompt, in a few lines, for stderr."""
    v = p.verdict
    lines = [
        f"template: {p.template} v{p.template_version} · grounding {p.grounding} · "
        f"format {p.format} · {p.estimated_tokens} tokens ({p.tokenizer})",
        f"verdict: {v.kind} ({v.reason})"
        + (f" · options: {'; '.join(p.options)}" if p.options else ""),
    ]
    for label, ids in (
        ("hits", p.hit_ids),
        ("entities", p.entity_ids),
        ("axioms", p.axiom_ids),
        ("glossary", p.glossary_ids),
        ("dropped", p.dropped),
        ("trimmed", p.trimmed),
    ):
        if ids:
            lines.append(f"{label}: {', '.join(ids)}")
    for f in p.flagged:
        lines.append(f"suspicious: {f.id}: {'; '.join(f.flags)}")
    parts = ", ".join(f"{x.name} {x.tokens}/{x.budget}" for x in p.parts)
    lines.append(f"parts: {parts}")
    if p.fallback:
        lines.append(f"fallback: {p.fallback}")
    return "\n".join(lines)
