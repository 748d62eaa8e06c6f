"""OpenAPI plumbing: parsing, ``$ref`` resolution across files, schema flattening.

References are resolved relative to the file that contains them: ``#/components/…``
inside the same file, ``schemas/pet.yaml#/Pet`` or ``../common.yaml`` in a sibling
file (read once and cached). Remote references (``https://…``) are not fetched, and
neither is a file outside the ingested folder (``/etc/passwd``, ``../../secrets.yaml``)
unless the user allowed its folder (setting ``ref_paths``): the refusal says the same
whether or not such a file exists. A chain of more than 64 references is cut and
reported. A reference that cannot be resolved is recorded as a problem once and
treated as an empty schema, so one bad reference never stops an ingest.

Flattening turns a request or response schema into dotted field names
(``customer.address.city``, ``items[].price``) with a type label, a required flag and
a short description. ``allOf`` parts are merged, ``oneOf``/``anyOf`` variants
contribute their fields as optional, and a schema that refers back to itself (directly
or through others) stops with a ``(recursive)`` type instead of recursing. Depth and the
number of fields are bounded, so a huge schema costs bounded time and text.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import yaml

from ..errors import IngestError
from .structured import load_json, load_yaml

MAX_REF_FILE_BYTES = 64 * 1024 * 1024
MAX_REF_FILES = 20000
MAX_REF_HOPS = 64

_REF_TEXT = re.compile(rb"""\$ref["']?\s*:\s*["']?([^"'\s#{}\[\],][^"'\s,}\]#]*)""")
_TAG = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9]*)[^>]*>")
_SPACES = re.compile(r"[ \t]+")


def parse_text(text: str, path: str) -> Any:
    """JSON or YAML (by content, then suffix); IngestError names the line and column."""
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")) or path.lower().endswith(".json"):
        try:
            return load_json(text, path)
        except json.JSONDecodeError as exc:
            if path.lower().endswith(".json"):
                raise IngestError(
                    f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}", path
                ) from exc
    try:
        return load_yaml(text, path)  # a safe loader, within bounds (structured.py)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise IngestError(f"invalid YAML{where}: {problem}", path) from exc


def within(target: Path, allowed: tuple[Path, ...]) -> bool:
    """Whether a resolved path is inside one of the allowed (resolved) folders."""
    return any(target.is_relative_to(folder) for folder in allowed)


def referenced_files(data: bytes, file: Path, *allowed: Path) -> list[Path]:
    """Local files a spec refers to through ``$ref``, transitively, found by a text scan.

    Used to decide which files belong to a split spec and to include them in its change
    detection. The scan may over-approximate (a ``$ref`` quoted in a description); only
    existing regular files inside the ``allowed`` folders (default: the spec's own
    folder) are returned. Remote references are ignored.
    """
    roots = tuple(a.resolve() for a in allowed) or (file.resolve().parent,)
    found: dict[Path, None] = {}
    queue: list[tuple[bytes, Path]] = [(data, file)]
    while queue and len(found) < MAX_REF_FILES:
        text, where = queue.pop()
        targets = {m.group(1) for m in _REF_TEXT.finditer(text)}
        for raw in sorted(targets):
            ref = raw.decode("utf-8", "replace")
            if "://" in ref:
                continue
            target = (where.parent / unquote(ref)).resolve()
            if target in found or target == file.resolve() or not within(target, roots):
                continue
            if not target.is_file():
                continue
            found[target] = None
            try:
                if target.stat().st_size <= MAX_REF_FILE_BYTES:
                    queue.append((target.read_bytes(), target))
            except OSError:
                continue
    return list(found)


def pointer_escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def html_to_text(text: str) -> str:
    """Descriptions written in HTML (``<p>``, ``<a>``, ``<code>``) as Markdown-ish text."""
    if "<" not in text:
        return text.strip()

    def tag(m: re.Match[str]) -> str:
        closing, name = m.group(1), m.group(2).lower()
        if name in ("p", "br", "div", "ul", "ol", "li", "h1", "h2", "h3", "h4", "tr"):
            return "\n- " if name == "li" and not closing else "\n"
        if name == "code":
            return "`"
        return ""

    out = html.unescape(_TAG.sub(tag, text))
    lines = [_SPACES.sub(" ", line).strip() for line in out.split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def short(text: str, limit: int = 200) -> str:
    """The first paragraph of a description on one line, cut at a word boundary."""
    text = html_to_text(text)
    para = text.split("\n\n", 1)[0]
    para = " ".join(para.split())
    if len(para) <= limit:
        return para
    cut = para.rfind(" ", 0, limit - 1)
    return para[: cut if cut > limit // 2 else limit - 1] + "…"


@dataclass
class Resolver:
    """Resolves ``$ref`` values across files; records each unresolvable reference once."""

    root: Any
    file: Path
    # folders whose files references may read (default: the spec's folder)
    allowed: tuple[Path, ...] = ()
    problems: dict[str, tuple[str, str]] = field(default_factory=dict)  # ref -> (why, where)
    where: str = ""  # JSON pointer of what is being resolved, for problem reports
    _docs: dict[Path, Any] = field(default_factory=dict)
    _pointer_cache: dict[tuple[Path, str], Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._docs[self.file] = self.root
        self.allowed = tuple(a.resolve() for a in self.allowed) or (self.file.resolve().parent,)

    def _document(self, path: Path) -> Any:
        if path in self._docs:
            return self._docs[path]
        if not path.is_file():
            raise LookupError(f"file {path.name} not found")
        if path.stat().st_size > MAX_REF_FILE_BYTES:
            raise LookupError(f"file {path.name} is too large")
        try:
            text = path.read_bytes().decode("utf-8-sig")
            doc = parse_text(text, path.name)
        except (OSError, UnicodeDecodeError) as exc:
            raise LookupError(f"cannot read {path.name}: {exc}") from exc
        except IngestError as exc:
            raise LookupError(f"{path.name}: {exc.reason}") from exc
        self._docs[path] = doc
        return doc

    def _pointer(self, doc_path: Path, pointer: str) -> Any:
        key = (doc_path, pointer)
        if key in self._pointer_cache:
            return self._pointer_cache[key]
        node = self._document(doc_path)
        for raw in pointer.split("/")[1:] if pointer else []:
            token = unquote(raw).replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping):
                if token not in node:
                    raise LookupError(f"no {token!r} at {pointer}")
                node = node[token]
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                raise LookupError(f"no {token!r} at {pointer}")
        self._pointer_cache[key] = node
        return node

    def deref(self, node: Any, base: Path) -> tuple[Any, Path, str]:
        """Follow ``$ref`` chains; returns (target, its file, name of the last reference).

        An unresolvable reference yields ``({}, base, name)`` and is recorded.
        """
        name = ""
        seen: set[tuple[Path, str]] = set()
        first = node.get("$ref") if isinstance(node, Mapping) else None
        for _ in range(MAX_REF_HOPS):
            if not isinstance(node, Mapping):
                return node, base, name
            ref = node.get("$ref")
            if not isinstance(ref, str):
                return node, base, name
            try:
                target_base, pointer = self.locate(ref, base)
            except LookupError as exc:
                self.problems.setdefault(ref, (str(exc), self.where))
                return {}, base, ref_name(ref)
            if (target_base, pointer) in seen:
                self.problems.setdefault(ref, ("reference cycle", self.where))
                return {}, base, ref_name(ref)
            seen.add((target_base, pointer))
            try:
                node = self._pointer(target_base, pointer)
            except LookupError as exc:
                self.problems.setdefault(ref, (str(exc), self.where))
                return {}, base, ref_name(ref)
            base, name = target_base, ref_name(ref)
        if isinstance(node, Mapping) and isinstance(node.get("$ref"), str):
            self.problems.setdefault(
                str(first), (f"a chain of more than {MAX_REF_HOPS} references; cut", self.where)
            )
            return {}, base, name
        return node, base, name

    def locate(self, ref: str, base: Path) -> tuple[Path, str]:
        """The file and JSON pointer a reference points to (LookupError for remote ones)."""
        if "://" in ref:
            raise LookupError("remote references are not fetched")
        file_part, _, pointer = ref.partition("#")
        target = (base.parent / unquote(file_part)).resolve() if file_part else base
        if file_part and not within(target, self.allowed):
            raise LookupError(
                "outside the ingested folder, not followed (allow its folder with `ref_paths`)"
            )
        if pointer and not pointer.startswith("/"):
            raise LookupError(f"unsupported reference fragment {pointer!r}")
        return target, pointer


def ref_name(ref: str) -> str:
    """The short name of a reference's target.

    ``#/components/schemas/Customer`` → ``Customer``; ``pet.yaml`` → ``pet``;
    ``#/definitions/io.k8s.api.core.v1.Pod`` → ``Pod``.
    """
    if "#" in ref:
        tail = unquote(ref.rsplit("/", 1)[-1]).replace("~1", "/").replace("~0", "~")
        return tail.rsplit(".", 1)[-1] or tail
    return unquote(ref.rsplit("/", 1)[-1]).split(".")[0]


@dataclass(frozen=True, slots=True)
class FieldInfo:
    name: str
    type: str
    required: bool
    description: str


def _types(schema: Mapping[str, Any]) -> list[str]:
    t = schema.get("type")
    if isinstance(t, str):
        return [t]
    if isinstance(t, list):
        return [str(x) for x in t]
    return []


class Flattener:
    """Flattens schemas to dotted fields within bounds (see the module docstring)."""

    def __init__(self, resolver: Resolver, max_fields: int = 200, max_depth: int = 4) -> None:
        self.resolver = resolver
        self.max_fields = max_fields
        self.max_depth = max_depth
        self._left = 0

    def label(self, schema: Any, base: Path, depth: int = 0) -> str:
        """A short type label: ``string``, ``integer<int64>``, ``array<Customer>``."""
        node, base, name = self.resolver.deref(schema, base)
        if not isinstance(node, Mapping):
            return "any"
        types = [t for t in _types(node) if t != "null"]
        nullable = "null" in _types(node) or node.get("nullable") is True
        if not types:
            variants = node.get("oneOf") or node.get("anyOf")
            if isinstance(variants, list) and variants and depth < 2:
                labels = list(dict.fromkeys(self.label(v, base, depth + 1) for v in variants))
                text = " | ".join(labels[:4]) + (" | …" if len(labels) > 4 else "")
                return text + (" | null" if nullable else "")
            if "properties" in node or "allOf" in node:
                types = ["object"]
        if types == ["array"]:
            items = node.get("items")
            inner = self.label(items, base, depth + 1) if items is not None and depth < 2 else "any"
            text = f"array<{inner}>"
        elif types == ["object"] and name:
            text = name
        elif types:
            text = " | ".join(types)
            fmt = node.get("format")
            if isinstance(fmt, str) and len(types) == 1:
                text += f"<{fmt}>"
        else:
            text = name or "any"
        return text + (" | null" if nullable else "")

    def fields(
        self, schema: Any, base: Path, depth: int | None = None
    ) -> tuple[list[FieldInfo], int]:
        """Flattened fields and the number left out beyond ``max_fields``."""
        out: list[FieldInfo] = []
        self._left = 0
        self._walk(schema, base, "", 0, (), out, self.max_depth if depth is None else depth)
        return out, self._left

    def _collect(
        self, node: Any, base: Path, optional: bool, guard: frozenset[int] = frozenset()
    ) -> tuple[list[tuple[str, Any, Path, bool]], Any]:
        """(name, schema, base, required) of a schema's properties, allOf/oneOf merged."""
        props: list[tuple[str, Any, Path, bool]] = []
        items: Any = None
        node, base, _ = self.resolver.deref(node, base)
        if not isinstance(node, Mapping) or id(node) in guard or len(guard) > 16:
            return props, items
        guard = guard | {id(node)}
        required = node.get("required")
        req = set(required) if isinstance(required, list) else set()
        properties = node.get("properties")
        if isinstance(properties, Mapping):
            for name, sub in properties.items():
                props.append((str(name), sub, base, str(name) in req and not optional))
        if node.get("type") == "array" and node.get("items") is not None:
            items = (node["items"], base)
        for key, opt in (("allOf", optional), ("oneOf", True), ("anyOf", True)):
            parts = node.get(key)
            if isinstance(parts, list):
                for part in parts[:20]:
                    sub_props, _ = self._collect(part, base, opt, guard)
                    props.extend(sub_props)
        return props, items

    def _walk(
        self,
        schema: Any,
        base: Path,
        prefix: str,
        depth: int,
        stack: tuple[tuple[Path, str], ...],
        out: list[FieldInfo],
        max_depth: int,
    ) -> None:
        if isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str):
            try:
                key = self.resolver.locate(schema["$ref"], base)
            except LookupError:
                key = (base, schema["$ref"])
            if key in stack:
                return
            stack = (*stack, key)
        props, items = self._collect(schema, base, False)
        if not props and items is not None and depth < max_depth:
            self._walk(items[0], items[1], prefix + "[].", depth + 1, stack, out, max_depth)
            return
        seen: set[str] = set()
        for name, sub, sub_base, required in props:
            full = prefix + name
            if full in seen:
                continue
            seen.add(full)
            if len(out) >= self.max_fields:
                self._left += 1
                continue
            node, _, _ = self.resolver.deref(sub, sub_base)
            recursive = self._is_recursive(sub, sub_base, stack)
            label = self.label(sub, sub_base) + (" (recursive)" if recursive else "")
            desc = ""
            if isinstance(node, Mapping):
                raw = node.get("description") or (
                    sub.get("description") if isinstance(sub, Mapping) else ""
                )
                desc = short(str(raw or ""), 160)
                enum = node.get("enum")
                if isinstance(enum, list) and enum:
                    values = ", ".join(str(v) for v in enum[:8]) + (", …" if len(enum) > 8 else "")
                    desc = f"{desc} One of: {values}.".strip()
            out.append(FieldInfo(full, label, required, desc))
            if recursive or depth + 1 >= max_depth:
                continue
            child_props, child_items = self._collect(sub, sub_base, False)
            if child_props:
                self._walk(sub, sub_base, full + ".", depth + 1, stack, out, max_depth)
            elif child_items is not None:
                inner, _, _ = self.resolver.deref(child_items[0], child_items[1])
                if isinstance(inner, Mapping) and (
                    "properties" in inner or "allOf" in inner or "oneOf" in inner
                ):
                    self._walk(
                        child_items[0], child_items[1], full + "[].", depth + 1, stack, out,
                        max_depth,
                    )  # fmt: skip

    def _is_recursive(self, sub: Any, base: Path, stack: tuple[tuple[Path, str], ...]) -> bool:
        node = sub
        if isinstance(node, Mapping) and node.get("type") == "array":
            node = node.get("items")
        if isinstance(node, Mapping) and isinstance(node.get("$ref"), str):
            try:
                return self.resolver.locate(node["$ref"], base) in stack
            except LookupError:
                return False
        return False
