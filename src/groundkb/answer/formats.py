"""Formatting knowledge for a prompt (YAML, JSON or Markdown) and keeping data in its place.

Every piece of text that did not come from the template itself (document passages,
entity properties from a spec, axioms, glossary terms, caller state and messages, the
question) goes through :func:`escape_data` before it is formatted:

- a ``<`` that would open or close one of the prompt's section tags (``<evidence>``,
  ``</document>``, any tag the template in use writes, and the chat-role names
  ``system``/``user``/``assistant``) becomes ``&lt;``, so the text cannot end its section
  or forge a new one;
- chat special-token openers ``<|`` become ``&lt;|``;
- invisible Unicode tag characters (U+E0000–U+E007F, used to hide instructions) are
  removed.

Other text, code and markup stays as written (``helios gw users get <email>`` is not
mangled). Then each format keeps items apart by its own syntax: JSON strings are quoted,
YAML uses block scalars, and Markdown passages sit inside ``<document …>`` tags whose
attributes are quoted. Template rendering never evaluates data: ``{{ … }}`` inside a
document is printed, not executed.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import yaml

ContextFormat = Literal["yaml", "json", "markdown"]
FORMATS: tuple[str, ...] = ("yaml", "json", "markdown")

BASE_TAGS: frozenset[str] = frozenset(
    {
        "axioms",
        "document",
        "evidence",
        "glossary",
        "knowledge",
        "messages",
        "message",
        "question",
        "state",
        "options",
        "instructions",
        "system",
        "user",
        "assistant",
    }
)
_TAG_NAME = re.compile(r"</?\s*([A-Za-z][\w.-]*)")
_HIDDEN = re.compile("[\U000e0000-\U000e007f]")


def template_tags(*sources: str) -> frozenset[str]:
    """The tag names a template writes, plus the base section and role names."""
    found = {m.group(1).lower() for s in sources for m in _TAG_NAME.finditer(s)}
    return BASE_TAGS | found


def _tag_pattern(tags: Iterable[str]) -> re.Pattern[str]:
    names = "|".join(sorted((re.escape(t) for t in tags), key=len, reverse=True))
    return re.compile(rf"<(?=\s*/?\s*(?:{names})(?![\w.-]))|<(?=\|)", re.IGNORECASE)


class Escaper:
    """Escapes data for a prompt whose sections use ``tags``."""

    def __init__(self, tags: Iterable[str] = BASE_TAGS) -> None:
        self._pattern = _tag_pattern(tags)

    def __call__(self, text: str) -> str:
        return self._pattern.sub("&lt;", _HIDDEN.sub("", text))

    def data(self, value: Any) -> Any:
        """Escape every string inside ``value`` (mappings, sequences, scalars)."""
        if isinstance(value, str):
            return self(value)
        if isinstance(value, Mapping):
            return {self(str(k)): self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(v) for v in value]
        return value


escape_data = Escaper()


def _attr(value: Any) -> str:
    text = str(value).replace("&", "&amp;").replace('"', "&quot;").replace("\n", " ")
    return text.replace("<", "&lt;").replace(">", "&gt;")


def dump(value: Any, fmt: ContextFormat) -> str:
    """``value`` (already escaped) in YAML or JSON; Markdown callers format themselves.

    YAML lists are dumped item by item (cached), so re-rendering a part while it is
    fitted into its budget costs little; the result equals dumping the whole list.
    """
    if fmt == "json":
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if isinstance(value, list):
        return "\n".join(_yaml_item(json.dumps(v, ensure_ascii=False)) for v in value)
    if (
        isinstance(value, Mapping)
        and value
        and all(
            isinstance(v, list) and v and _PLAIN_KEY.fullmatch(str(k)) for k, v in value.items()
        )
    ):
        return "\n".join(f"{k}:\n{dump(v, 'yaml')}" for k, v in value.items())
    return _yaml(value)


_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@functools.lru_cache(maxsize=4096)
def _yaml_item(item_json: str) -> str:
    return _yaml([json.loads(item_json)])


def _yaml(value: Any) -> str:
    text: str = yaml.dump(
        value, Dumper=_dumper(), sort_keys=False, allow_unicode=True, width=1000
    ).rstrip("\n")
    return text


@functools.lru_cache(maxsize=1)
def _dumper() -> Any:
    """A safe dumper (libyaml's when available) writing multi-line strings as blocks."""
    base: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

    class _Dumper(base):  # type: ignore[misc]
        pass

    def _str(dumper: Any, data: str) -> Any:
        style = "|" if "\n" in data else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)

    _Dumper.add_representer(str, _str)
    return _Dumper


def _md_value(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return str(value)


def markdown_entities(
    entities: Sequence[Mapping[str, Any]], relationships: Sequence[Mapping[str, Any]]
) -> str:
    lines: list[str] = []
    for e in entities:
        lines.append(f"- {e['type']}: {e['name']} (id: {e['id']})")
        lines += [f"  - {k}: {_md_value(v)}" for k, v in e.get("properties", {}).items()]
    if relationships:
        lines.append("")
        lines.append("Relationships:")
        lines += [f"- {r['source']} --[{r['type']}]--> {r['target']}" for r in relationships]
    return "\n".join(lines)


def markdown_passages(passages: Sequence[Mapping[str, Any]]) -> str:
    out: list[str] = []
    for p in passages:
        attrs = " ".join(
            f'{k}="{_attr(v)}"' for k, v in p.items() if k != "text" and v not in ("", None, [])
        )
        out.append(f"<document {attrs}>\n{p['text']}\n</document>")
    return "\n".join(out)


def markdown_list(items: Sequence[Mapping[str, Any]], key: str, value: str) -> str:
    return "\n".join(f"- {i[key]}: {i[value]}" for i in items)


def format_block(kind: str, items: Any, fmt: ContextFormat) -> str:
    """One prompt section's body: ``kind`` is knowledge, evidence, axioms, glossary,
    state or messages; ``items`` is already escaped."""
    if not items:
        return ""
    if fmt != "markdown":
        return dump(items, fmt)
    if kind == "knowledge":
        return markdown_entities(items.get("entities", []), items.get("relationships", []))
    if kind == "evidence":
        return markdown_passages(items)
    if kind == "axioms":
        return "\n".join(f"- {a['name']} ({a['id']}): {a['rule']}" for a in items)
    if kind == "glossary":
        return markdown_list(items, "term", "definition")
    if kind == "messages":
        return "\n".join(
            f'<message role="{_attr(m["role"])}">\n{m["content"]}\n</message>' for m in items
        )
    if isinstance(items, str):
        return items
    return dump(items, "yaml")
