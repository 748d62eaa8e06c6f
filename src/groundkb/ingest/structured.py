"""JSON and YAML from files nobody vetted: parsed within bounds, or one clear error.

An ingest reads whatever is in a folder, so one file must never take the process down.
Three things in structured text can, and each is checked here before it can do harm:

- **Nesting.** libyaml's composer recurses in C: 50,000 nested ``[`` crash the
  interpreter (SIGSEGV), which no ``except`` can catch. Before YAML is loaded, a cheap
  scan bounds its depth from above (indentation columns, leading ``- `` indicators and
  flow brackets); only when that bound passes :data:`MAX_NESTING` are the parser's
  events counted exactly (libyaml's parser keeps its own stack, so that is safe), and
  a file nested deeper is refused. JSON is parsed by the standard library, whose
  decoder stops at the interpreter's recursion limit with ``RecursionError``; that
  and any deeper than :data:`MAX_NESTING` are refused the same way.
- **Alias expansion** ("billion laughs"). YAML anchors let a 1 KB file describe a
  structure of a billion nodes. The loader shares the repeated parts, but anything
  that walks the result (a JSON dump of an entry's extra keys, ``str()`` of an
  OpenAPI description) expands them. When the text uses anchors, the expanded size
  is counted (linear in the distinct nodes) and a file that would expand past
  ``MAX_EXPANSION_BASE + MAX_EXPANSION_FACTOR × its length`` is refused.
- **Size.** Files are read at most ``MAX_FILE_BYTES`` (``ingest/files.py``).

Errors are :class:`~groundkb.errors.IngestError` naming the file; YAML syntax errors
are left to the callers, who word them with the line (``yaml.YAMLError``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import yaml

from ..errors import IngestError

try:  # libyaml is several times faster on large specs
    YamlLoader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    YamlLoader = yaml.SafeLoader

MAX_NESTING = 200  # deepest structure accepted (OpenAPI specs seen: about 20)
MAX_EXPANSION_BASE = 2_000_000
MAX_EXPANSION_FACTOR = 10

_KEEP_BRACKETS = bytes(range(256)).translate(None, b"[]{}")
_OPEN = frozenset(b"[{")


def nesting_bound(text: str) -> int:
    """An upper bound of the nesting depth of YAML (or JSON) text, without parsing.

    Block collections need more indentation or a ``- `` / ``? `` indicator per level
    (a sequence may sit at its key's indentation, hence the factor 2); flow
    collections need a bracket each. Brackets inside strings count too: the bound may
    be loose, never too small.
    """
    data = text.encode("utf-8", "surrogatepass")
    flow = deepest = 0
    for ch in data.translate(None, _KEEP_BRACKETS):
        if ch in _OPEN:
            flow += 1
            deepest = max(deepest, flow)
        elif flow:
            flow -= 1
    columns = 0
    for line in data.split(b"\n"):
        rest = line.lstrip(b" ")
        n = len(line) - len(rest)
        while rest[:2] in (b"- ", b"? ") or rest in (b"-", b"?"):
            n += 1
            rest = rest[2:].lstrip(b" ")
        columns = max(columns, n)
    return deepest + 2 * columns + 1


def yaml_nesting(text: str) -> int:
    """The exact nesting depth of YAML text, from libyaml's events (no composing)."""
    depth = deepest = 0
    for event in yaml.parse(text, Loader=YamlLoader):
        if isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
            depth += 1
            deepest = max(deepest, depth)
        elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
            depth -= 1
    return deepest


def _too_deep(path: str) -> IngestError:
    return IngestError(f"nested deeper than {MAX_NESTING} levels; not loaded", path)


def expanded_size(value: Any, limit: int) -> int:
    """How many nodes ``value`` has with every shared part counted each time it
    appears (strings weigh one per 64 characters); ``limit + 1`` once past ``limit``
    or when a part contains itself (a recursive alias)."""
    sizes: dict[int, int] = {}
    open_: set[int] = set()
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if isinstance(node, Mapping):
            kids = [*node.keys(), *node.values()]
        elif isinstance(node, list | tuple):
            kids = list(node)
        else:
            sizes[key] = 1 + (len(node) // 64 if isinstance(node, str | bytes) else 0)
            continue
        if children_done:
            open_.discard(key)
            sizes[key] = min(limit + 1, 1 + sum(sizes[id(k)] for k in kids))
            continue
        if key in sizes:
            continue
        if key in open_:
            return limit + 1  # a node inside itself
        open_.add(key)
        stack.append((node, True))
        stack.extend((k, False) for k in kids if id(k) not in sizes)
    return sizes[id(value)]


def load_yaml(text: str, path: str) -> Any:
    """YAML within the bounds of the module docstring (a safe loader: no tags run code).

    Raises IngestError past a bound and lets ``yaml.YAMLError`` through for syntax.
    """
    if nesting_bound(text) > MAX_NESTING and yaml_nesting(text) > MAX_NESTING:
        raise _too_deep(path)
    try:
        value = yaml.load(text, Loader=YamlLoader)  # a safe loader: no tags run code
    except RecursionError:
        raise _too_deep(path) from None
    if "&" in text and "*" in text:  # anchors and aliases: count what they expand to
        limit = MAX_EXPANSION_BASE + MAX_EXPANSION_FACTOR * len(text)
        if expanded_size(value, limit) > limit:
            raise IngestError(
                f"YAML aliases expand to more than {limit:,} nodes or contain themselves "
                "(a 'billion laughs' file?); not loaded",
                path,
            )
    return value


def load_json(text: str, path: str) -> Any:
    """JSON, refusing nesting past :data:`MAX_NESTING`; lets ``json.JSONDecodeError`` through."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise _too_deep(path) from None
    if nesting_bound_json(value) > MAX_NESTING:
        raise _too_deep(path)
    return value


def nesting_bound_json(value: Any) -> int:
    """The nesting depth of parsed JSON (no sharing in JSON, so a plain walk)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            depth += 1
            stack.extend((v, depth) for v in node.values() if isinstance(v, dict | list))
        elif isinstance(node, list):
            depth += 1
            stack.extend((v, depth) for v in node if isinstance(v, dict | list))
        deepest = max(deepest, depth)
    return deepest
