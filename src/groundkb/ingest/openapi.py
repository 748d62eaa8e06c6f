"""OpenAPI specs (Swagger 2.0, OpenAPI 3.0 and 3.1; JSON or YAML): one document per operation.

**Recognition.** A ``.json``, ``.yaml`` or ``.yml`` file whose top level has an
``openapi`` or ``swagger`` key with a version (``"openapi": "3.0.3"``) is a spec; other
structured files go to the catalog or entries loaders.

**Split specs.** ``$ref`` values that name other files (``schemas/pet.yaml#/Pet``) are
resolved relative to the file that contains them. A JSON/YAML file referenced by a spec
in the same ingest belongs to that spec: it produces no documents and no entry errors of
its own, and a change to it re-ingests the spec (the spec's change detection covers
every file it references). A file that is itself a spec is always ingested as one.

**Documents.** One per operation, type ``api``:

- ``id``: ``{spec}:{METHOD} {path}``, e.g. ``stripe:POST /v1/charges/{charge}/capture``.
  The spec name is the file name without suffix (``stripe.json`` → ``stripe``,
  lower-cased, other characters than ``a-z0-9._-`` replaced by ``-``); a generic file
  name (``openapi``, ``swagger``, ``api``, ``spec``, ``index``…) uses the slug of
  ``info.title`` instead. File names are unique in a folder, titles often are not
  (several Twilio specs share one).
- ``title``: the summary when it is one sentence, else its first sentence when that
  is short (at most 100 characters; the whole summary then opens the description);
  without a summary, the first sentence of the description when it is short; else what
  the method and path say ("Create a phone number"), else ``METHOD path``. Links keep
  their text and a closing full stop goes. ``summary``: ``METHOD path — first sentence
  of the description``.
- ``content``: description, parameters (name, in, type, required, description), the
  request body flattened to dotted fields with types and required flags, responses by
  status, response fields, and an example request (a ``curl`` line, also in
  ``examples``). Descriptions in HTML are converted to text; long lists are cut with a
  note (at most 60 parameters, 80 request fields, 40 response fields shown).
- ``category``: the first tag (else the first resource). ``keywords``: tags, the
  resource acted on, operation kind, the words of the last path segment and of the
  operationId. ``aliases``: the operationId and its words, its verb kept even where
  that is an HTTP method ("deleteModel" → delete model) but "get" left out (a read is
  named by what it returns: "GetAccount" → account). ``METHOD path`` opens the
  content; parent path segments (``{namespace}``) stay out of the weighted fields
  because they recur in thousands of operations. ``related_ids``: operations on the
  same path and on the parent/child item path.
- ``metadata`` (the API graph, see :mod:`groundkb.apigraph`): ``spec``, ``method``
  (upper case), ``path`` (as in the spec), ``server`` (first server URL), ``operation_id``,
  ``operation_kind``, ``resources``, ``tags``, ``parameters`` (names),
  ``request_fields`` and ``response_fields`` (dotted names, at most 200 and 100),
  ``deprecated`` and ``has_summary``.

**Problems.** Unparseable files and unsupported versions are errors naming the line or
JSON pointer; the file yields nothing. An operation that is not an object, or whose
parameters are malformed, is skipped with an error naming its pointer
(``/paths/~1pets/get``); the others are ingested. An unresolvable ``$ref`` is reported
once, and the operation is ingested without the part it pointed to.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Any

from ..analyze.chunk import chunk_markdown, clean_heading
from ..analyze.text import STOP_WORDS
from ..apigraph import collection_path
from ..apinames import (
    CRUD_KINDS,
    HTTP_METHODS,
    collection_segments,
    is_param,
    is_version,
    operation_kind,
    path_resources,
    path_segments,
    singular,
    split_words,
)
from ..errors import IngestError
from ..models import Document, Example, FileError, without_full_stop
from .base import LoadContext, Loaded, decode_text, finalize
from .entries import EntriesLoader
from .oas_schema import (
    FieldInfo,
    Flattener,
    Resolver,
    html_to_text,
    parse_text,
    pointer_escape,
    short,
)
from .oas_text import (
    CodeSample,
    OperationText,
    Param,
    curl,
    description_text,
    example_text,
    lead,
    media_example,
)
from .oas_text import body as operation_body

_SNIFF_JSON = re.compile(rb'(?<!\\)"(?:openapi|swagger)"\s*:\s*"?\d')
_SNIFF_YAML = re.compile(rb"""^["']?(?:openapi|swagger)["']?[ \t]*:[ \t]*["']?\d""", re.M)
_GENERIC_STEMS = frozenset(
    {"openapi", "swagger", "api", "apis", "spec", "specs", "index", "main", "schema", "root",
     "api-docs", "openapi3", "v1", "v2", "v3"}
)  # fmt: skip
_SLUG = re.compile(r"[^a-z0-9._-]+")
_MEDIA_PREFERENCE = ("application/json", "application/x-www-form-urlencoded", "multipart/form-data")

_NOT_KEYWORDS = frozenset({*HTTP_METHODS, "api", "apis"})


class _Broken(Exception):
    """An operation that cannot be turned into a document."""


def is_openapi(data: bytes) -> bool:
    """True when the bytes look like a spec: a top-level ``openapi``/``swagger`` version key."""
    return bool(_SNIFF_YAML.search(data) or _SNIFF_JSON.search(data))


def slug(text: str) -> str:
    return _SLUG.sub("-", text.strip().lower()).strip("-.")


def spec_name(origin: str, root: Mapping[str, Any]) -> str:
    """The name that prefixes operation ids (see the module docstring)."""
    stem = slug(PurePosixPath(origin).stem)
    if stem and stem not in _GENERIC_STEMS:
        return stem
    info = root.get("info")
    title = info.get("title") if isinstance(info, Mapping) else None
    return slug(str(title)) if title and slug(str(title)) else stem or "api"


def _version(root: Mapping[str, Any]) -> tuple[str, str]:
    """("swagger2" | "openapi3", version text), or IngestError naming the pointer."""
    if "swagger" in root:
        text = str(root["swagger"])
        if not text.startswith("2"):
            raise IngestError(f"unsupported Swagger version {text!r}; expected 2.0", "", "/swagger")
        return "swagger2", text
    text = str(root.get("openapi"))
    if not re.match(r"3\.[01]\b", text):
        raise IngestError(
            f"unsupported OpenAPI version {text!r}; expected 3.0 or 3.1", "", "/openapi"
        )
    return "openapi3", text


def _server(root: Mapping[str, Any], *levels: Any) -> str:
    for level in (*levels, root):
        servers = level.get("servers") if isinstance(level, Mapping) else None
        if isinstance(servers, list) and servers and isinstance(servers[0], Mapping):
            url = str(servers[0].get("url") or "")
            variables = servers[0].get("variables")
            if isinstance(variables, Mapping):
                for name, var in variables.items():
                    if isinstance(var, Mapping) and "default" in var:
                        url = url.replace("{" + str(name) + "}", str(var["default"]))
            return url.rstrip("/")
    if "host" in root:  # Swagger 2.0
        schemes = root.get("schemes")
        scheme = schemes[0] if isinstance(schemes, list) and schemes else "https"
        return f"{scheme}://{root['host']}{root.get('basePath') or ''}".rstrip("/")
    base = root.get("basePath")
    return str(base).rstrip("/") if isinstance(base, str) else ""


class _Spec:
    """One parsed spec and what building its operations needs."""

    def __init__(
        self, root: Mapping[str, Any], file: Path, flavour: str, allowed: tuple[Path, ...] = ()
    ) -> None:
        self.root = root
        self.file = file
        self.flavour = flavour
        self.resolver = Resolver(root, file, allowed)
        self.request = Flattener(self.resolver, max_fields=200, max_depth=4)
        self.response = Flattener(self.resolver, max_fields=100, max_depth=2)
        # The file of the path item being built: references in it resolve against it.
        self.base = file
        self._param_base: dict[int, Path] = {}
        self._tags: dict[str, str] | None = None
        self.collections: frozenset[str] = frozenset()  # segments a parameter follows

    def tag_lead(self, name: str) -> str:
        """The lead of a tag's description (top-level ``tags``), or ''."""
        if self._tags is None:
            self._tags = {}
            tags = self.root.get("tags")
            for raw in tags if isinstance(tags, list) else []:
                tag, base = self.deref(raw, self.file)
                if not isinstance(tag, Mapping) or not isinstance(tag.get("name"), str):
                    continue
                about, _ = self.deref(tag.get("description"), base)
                text = html_to_text(about) if isinstance(about, str) else ""
                self._tags[tag["name"]] = lead(text, 160) if text else ""
        return self._tags.get(name, "")

    def deref(self, node: Any, base: Path | None = None) -> tuple[Any, Path]:
        target, target_base, _ = self.resolver.deref(node, base or self.base)
        return target, target_base

    def parameters(
        self, item: Mapping[str, Any], item_base: Path, op: Mapping[str, Any], op_base: Path
    ) -> list[Mapping[str, Any]]:
        """The operation's parameters, path-item level ones first (the operation's win)."""
        merged: dict[tuple[str, str], Mapping[str, Any]] = {}
        for level, level_base in ((item, item_base), (op, op_base)):
            params = level.get("parameters")
            if params is None:
                continue
            if not isinstance(params, list):
                raise _Broken("'parameters' must be a list")
            for i, raw in enumerate(params):
                p, base = self.deref(raw, level_base)
                if p == {} and isinstance(raw, Mapping) and "$ref" in raw:
                    continue  # unresolvable: reported by the resolver
                if not isinstance(p, Mapping) or not isinstance(p.get("name"), str):
                    raise _Broken(f"parameters[{i}] must be an object with a 'name'")
                merged[(p["name"], str(p.get("in", "")))] = p
                self._param_base[id(p)] = base
        return list(merged.values())

    def param_type(self, p: Mapping[str, Any]) -> str:
        base = self._param_base.get(id(p), self.base)
        if "schema" in p:
            return self.request.label(p["schema"], base)
        if "content" in p and isinstance(p["content"], Mapping) and p["content"]:
            media = next(iter(p["content"].values()))
            if isinstance(media, Mapping) and "schema" in media:
                return self.request.label(media["schema"], base)
        return self.request.label(p, base) if "type" in p else "string"

    def body_example(self, op: Mapping[str, Any]) -> str:
        """The request body's example (OpenAPI 3), as compact JSON, or ''."""
        body, _ = self.deref(op.get("requestBody"))
        content = body.get("content") if isinstance(body, Mapping) else None
        if not isinstance(content, Mapping) or not content:
            return ""
        entry = content[_pick_media(list(content))]
        value = media_example(entry) if isinstance(entry, Mapping) else None
        return example_text(value) if value is not None else ""

    def body(
        self, op: Mapping[str, Any], params: list[Mapping[str, Any]], consumes: list[str]
    ) -> tuple[str, list[FieldInfo], int, bool]:
        """(media type, fields, fields left out, required) of the request body."""
        if self.flavour == "swagger2":
            for p in params:
                if p.get("in") == "body":
                    base = self._param_base.get(id(p), self.base)
                    fields, left = self.request.fields(p.get("schema"), base)
                    media = consumes[0] if consumes else "application/json"
                    return media, fields, left, bool(p.get("required"))
            form = [p for p in params if p.get("in") == "formData"]
            if form:
                fields = [
                    FieldInfo(
                        str(p["name"]), self.param_type(p), bool(p.get("required")),
                        short(str(p.get("description") or ""), 160),
                    )
                    for p in form
                ]  # fmt: skip
                media = next(
                    (c for c in consumes if "form" in c), "application/x-www-form-urlencoded"
                )
                return media, fields, 0, any(f.required for f in fields)
            return "", [], 0, False
        body, base = self.deref(op.get("requestBody"))
        if not isinstance(body, Mapping):
            return "", [], 0, False
        content = body.get("content")
        if not isinstance(content, Mapping) or not content:
            return "", [], 0, bool(body.get("required"))
        media = _pick_media(list(content))
        entry = content[media]
        schema = entry.get("schema") if isinstance(entry, Mapping) else None
        if schema is None:
            return media, [], 0, bool(body.get("required"))
        fields, left = self.request.fields(schema, base)
        if not fields:
            label = self.request.label(schema, base)
            if label == "object":  # an empty object: no body worth describing
                return "", [], 0, False
            fields = [FieldInfo("(body)", label, True, "")]
        return media, fields, left, bool(body.get("required"))

    def responses(self, op: Mapping[str, Any]) -> tuple[list[tuple[str, str]], list[str], int, str]:
        """((status, description)…), response field names of the first success, left out,
        and the name of the schema that success returns."""
        raw = op.get("responses")
        if not isinstance(raw, Mapping):
            return [], [], 0, ""
        out: list[tuple[str, str]] = []
        names: list[str] = []
        left = 0
        returns = ""
        for status, resp in raw.items():
            r, base = self.deref(resp)
            if not isinstance(r, Mapping):
                continue
            out.append((str(status), short(str(r.get("description") or ""), 160)))
            if names or not str(status).startswith("2"):
                continue
            schema = r.get("schema")  # Swagger 2.0
            content = r.get("content")
            if schema is None and isinstance(content, Mapping) and content:
                entry = content[_pick_media(list(content))]
                schema = entry.get("schema") if isinstance(entry, Mapping) else None
            if schema is not None:
                fields, left = self.response.fields(schema, base)
                names = [f.name for f in fields]
                returns = self.response.label(schema, base)
        return out[:20], names, left, _schema_name(returns)


def _pick_media(types: list[str]) -> str:
    for want in _MEDIA_PREFERENCE:
        if want in types:
            return want
    return next((t for t in types if "json" in t), types[0])


_KIND_TITLES = {
    "create": "Create {a_one}",
    "read": "Get {a_one}",
    "list": "List {many}",
    "update": "Update {a_one}",
    "delete": "Delete {a_one}",
}
_STAGES = frozenset({"alpha", "beta", "preview"})


def _kind_phrase(kind: str, path: str, namespace: bool = True) -> str:
    """What the operation does, in words, from its kind and path: "Create a phone number".

    The collection named is the path's last literal segment (the one before when that is
    the operation's verb or the verb it undoes: ``POST /calls/{sid}/cancel``, ``DELETE
    /issues/{n}/lock`` that unlocks), with the literal segment right before it when no
    parameter, version or stage stands between: a collection of that namespace ("Create
    a chat completion" for ``POST /chat/completions``; "Get a balance history" for ``GET
    /v1/balance/history``); not with ``namespace`` false."""
    segs = path_segments(path)
    at = [i for i, seg in enumerate(segs) if not is_param(seg)]
    words = _words(segs[at[-1]].removesuffix(".json")) if at else []
    own = (_words(kind), _words(kind.removeprefix("un")))
    if kind not in CRUD_KINDS and len(at) > 1 and words in own:
        at = at[:-1]  # the action or, "un…", its undoing ("DELETE …/lock" unlocks)
        words = _words(segs[at[-1]].removesuffix(".json"))  # POST /calls/{sid}/cancel
    if not words:
        return ""
    if kind not in CRUD_KINDS and words[0] == kind:
        return " ".join(words).capitalize()  # POST …/submit_tool_outputs: "Submit tool outputs"
    last = at[-1]
    if namespace and last > 0 and not is_param(segs[last - 1]):
        space = _words(segs[last - 1])
        said = {singular(w) for w in words}  # not "an account bank account"
        if space and not set(space) & (_STAGES | STOP_WORDS) and singular(space[-1]) not in said:
            words = [*space[:-1], singular(space[-1]), *words]
    many = " ".join(words)
    one = " ".join([*words[:-1], singular(words[-1])])
    a_one = f"{'an' if one[0] in 'aeio' else 'a'} {one}"
    template = _KIND_TITLES.get(kind, kind.replace("_", " ").capitalize() + " {a_one}")
    return template.format(a_one=a_one, many=many)


TITLE_CHARS = 100  # a title longer than this is a paragraph: its first sentence names it


def _title(op: Mapping[str, Any], method: str, path: str, kind: str) -> tuple[str, str]:
    """The operation's title, and the summary's whole text when the title is only part
    of it ('' when the title is the whole summary, or there is none).

    A summary is the title when it is one sentence. Some specs write a paragraph
    there (OpenAI's "Creates an intermediate [Upload](…) object that you can add
    [Parts](…) to. Currently, an Upload can accept…", 1,353 characters at most): its
    first sentence is the title and the paragraph goes into the description, as a
    description's first sentence is the title of an operation without a summary. Links
    keep their text, a closing full stop goes; a first sentence that is long or asks a
    question ("**Starting a new project?** We recommend…") gives way to what the method
    and path say ("Create a chat completion")."""
    summary = op.get("summary")
    if isinstance(summary, str) and summary.strip():
        text = " ".join(clean_heading(" ".join(summary.split())).split())
        first = _first_sentence(text)
        if first == text:
            return without_full_stop(text), ""
        whole = " ".join(html_to_text(summary).split())
        if first and len(first) <= TITLE_CHARS and not first.endswith("?"):
            return without_full_stop(first), whole
        return _kind_phrase(kind, path) or f"{method} {path}", whole
    desc = " ".join(html_to_text(str(op.get("description") or "")).split("\n\n", 1)[0].split())
    first = clean_heading(_first_sentence(desc))
    if first and len(first) <= TITLE_CHARS:
        return without_full_stop(first), ""
    return _kind_phrase(kind, path) or f"{method} {path}", ""


def _first_sentence(text: str) -> str:
    m = re.match(r"(.+?[.!?])(?:\s|$)", text)
    return (m.group(1) if m else text).strip()


def _schema_name(label: str) -> str:
    """``PaymentIntent``, ``array<Customer>`` → the schema's name; '' for plain types."""
    inner = label.split(" ")[0].removeprefix("array<").rstrip(">")
    plain = {"object", "string", "integer", "number", "boolean", "array", "any", "null"}
    return "" if not inner or inner.split("<")[0] in plain else inner


def _samples(spec: _Spec, op: Mapping[str, Any], base: Path) -> list[CodeSample]:
    """The spec's own code samples: ``x-codeSamples`` (or ``x-code-samples``)."""
    raw = op.get("x-codeSamples", op.get("x-code-samples"))
    raw, base = spec.deref(raw, base)
    if not isinstance(raw, list):
        return []
    out = []
    for item in raw[:10]:
        sample, _ = spec.deref(item, base)
        if isinstance(sample, Mapping) and isinstance(sample.get("source"), str):
            lang = str(sample.get("lang") or sample.get("label") or "")
            source = sample["source"].strip()
            out.append(CodeSample(lang, source if len(source) <= 800 else source[:799] + "…"))
    return out


def _words(*texts: str) -> list[str]:
    """Words worth a keyword: no HTTP methods, versions, numbers or api/apis."""
    out: list[str] = []
    for text in texts:
        out.extend(
            w
            for w in split_words(text)
            if len(w) > 1 and not is_version(w) and w not in _NOT_KEYWORDS
        )
    return out


def _name_words(op_id: str) -> list[str]:
    """The words of an operationId as a name. "get" goes: a read is named by what it
    returns ("get-an-album" → an album, "GetAccount" → account). Every other verb stays,
    even an HTTP method ("deleteModel" → delete model): "model" would name the model,
    which the delete is not, and make "models" the delete's exact name."""
    return [w for w in split_words(op_id) if len(w) > 1 and not is_version(w) and w != "get"]


class OpenAPILoader:
    name = "openapi"
    version = "6"
    suffixes: tuple[str, ...] = (".json", ".yaml", ".yml")

    def sniff(self, data: bytes) -> bool:
        return is_openapi(data)

    def load(self, data: bytes, ctx: LoadContext) -> tuple[list[Loaded], list[FileError]]:
        path = ctx.origin
        try:
            root = parse_text(decode_text(data, path), path)
            if not isinstance(root, Mapping) or not ("openapi" in root or "swagger" in root):
                return EntriesLoader().load(data, ctx)  # the sniff saw a nested key
            flavour, _ = _version(root)
            paths = root.get("paths", {})
            if paths is None:
                paths = {}
            if not isinstance(paths, Mapping):
                raise IngestError("must be an object mapping paths to path items", path, "/paths")
        except IngestError as exc:
            return [], [FileError(path, exc.reason, exc.field)]
        base = Path(ctx.base_dir) if ctx.base_dir else Path.cwd()
        allowed = tuple(Path(d) for d in (ctx.root_dir or str(base), *ctx.ref_allow))
        spec = _Spec(root, (base / PurePosixPath(path).name).resolve(), flavour, allowed)
        spec.collections = collection_segments(str(p) for p in paths)
        name = spec_name(path, root)
        errors: list[FileError] = []
        built: list[tuple[Document, str]] = []
        for raw_path, raw_item in paths.items():
            api_path = str(raw_path)
            if api_path.startswith("x-"):  # an extension, not a path
                continue
            if not api_path.startswith("/"):
                errors.append(
                    FileError(path, "a path must start with '/'; skipped", _ptr(api_path))
                )
                continue
            spec.resolver.where = _ptr(api_path)
            item, item_base = spec.deref(raw_item, spec.file)
            spec.base = item_base
            if not isinstance(item, Mapping):
                errors.append(FileError(path, "path item must be an object", _ptr(api_path)))
                continue
            for method in HTTP_METHODS:
                if method not in item:
                    continue
                pointer = _ptr(api_path, method)
                spec.resolver.where = pointer
                try:
                    doc, body = self._operation(spec, name, api_path, method, item, ctx)
                except _Broken as exc:
                    errors.append(FileError(path, f"operation skipped: {exc}", pointer))
                    continue
                except (TypeError, ValueError, KeyError, AttributeError, RecursionError) as exc:
                    errors.append(
                        FileError(path, f"operation skipped: {type(exc).__name__}: {exc}", pointer)
                    )
                    continue
                finally:
                    spec.base = item_base  # the next operation's references start here
                built.append((doc, body))
        for ref, (why, where) in spec.resolver.problems.items():
            errors.append(FileError(path, f"unresolvable $ref {ref!r}: {why}", where))
        docs = _link_related([d for d, _ in built])
        out = [
            finalize(doc, chunk_markdown(doc, body, ctx.max_chunk_tokens))
            for doc, (_, body) in zip(docs, built, strict=True)
        ]
        return out, errors

    def _operation(
        self, spec: _Spec, name: str, api_path: str, method: str, item: Mapping[str, Any],
        ctx: LoadContext,
    ) -> tuple[Document, str]:  # fmt: skip
        item_base = spec.base
        op, op_base = spec.deref(item[method], item_base)  # an operation may be a $ref
        if not isinstance(op, Mapping):
            raise _Broken("an operation must be an object")
        spec.base = op_base
        root = spec.root
        upper = method.upper()
        params = spec.parameters(item, item_base, op, op_base)
        consumes = op.get("consumes") or root.get("consumes") or []
        consumes = [str(c) for c in consumes] if isinstance(consumes, list) else []
        media, fields, fields_left, body_required = spec.body(op, params, consumes)
        responses, response_fields, response_left, returns = spec.responses(op)
        server = _server(root, item, op)
        tags = [str(t) for t in op.get("tags") or [] if isinstance(t, str | int)]
        op_id = str(op.get("operationId") or "")
        hint = str(op.get("x-kubernetes-action") or "")
        methods = [m for m in HTTP_METHODS if m in item]
        kind = operation_kind(upper, api_path, hint, op_id, spec.collections, methods)
        resources = path_resources(api_path, spec.collections)
        summary_text = op.get("summary")
        has_summary = isinstance(summary_text, str) and bool(summary_text.strip())
        title, whole_summary = _title(op, upper, api_path, kind)
        description = description_text(op.get("description"))
        if whole_summary and whole_summary not in description:
            # the paragraph a long summary holds is said, in the description's place
            description = "\n\n".join(x for x in (whole_summary, description) if x)
        first = short(description, 200) if description else ""
        summary = f"{upper} {api_path}" + (f" — {first}" if first and first != title else "")
        deprecated = op.get("deprecated") is True
        visible = [p for p in params if p.get("in") not in ("body", "formData")]
        shown = [
            Param(
                str(p["name"]), str(p.get("in", "?")), spec.param_type(p), bool(p.get("required")),
                short(str(p.get("description") or ""), 200),
            )
            for p in visible
        ]  # fmt: skip
        example = curl(upper, server, api_path, shown, media, fields)
        samples = _samples(spec, op, op_base)
        text = OperationText(
            method=upper, path=api_path, title=title, description=description,
            deprecated=deprecated, tags=[(t, spec.tag_lead(t)) for t in tags], params=shown,
            media=media, body_required=body_required, fields=fields, fields_left=fields_left,
            body_example=spec.body_example(op), responses=responses, returns=returns,
            response_fields=response_fields, response_left=response_left, samples=samples,
            curl=example,
        )  # fmt: skip
        body = operation_body(text)

        # Only the operation's own words: parent path segments ({namespace}, accounts)
        # recur in thousands of operations and would drown the resource acted on.
        literal = [seg for seg in path_segments(api_path) if not is_param(seg)]
        own = _words(literal[-1]) if literal else []
        doing = _kind_phrase(kind, api_path, namespace=False).lower()
        doing = doing.replace(" an ", " ").replace(" a ", " ")
        keywords = [*tags, *resources[-1:], kind, *own, *_words(op_id)]
        keywords = list(dict.fromkeys([doing, *keywords] if doing else keywords))[:30]
        aliases = [a for a in (op_id, " ".join(_name_words(op_id))) if a]
        doc = Document(
            id=f"{name}:{upper} {api_path}",
            source=ctx.source,
            title=title,
            content=body,
            type="api",
            category=tags[0] if tags else (resources[0] if resources else name),
            summary=summary,
            keywords=tuple(keywords),
            aliases=tuple(dict.fromkeys(aliases)),
            examples=(
                Example(code=example, description="Example request"),
                *(Example(code=c.source, description=c.lang) for c in samples),
            ),
            uri=_uri(op, ctx, api_path, method),
            origin=ctx.origin,
            origin_hash=ctx.origin_hash,
            metadata={
                "spec": name,
                "method": upper,
                "path": api_path,
                "server": server,
                "operation_id": op_id,
                "operation_kind": kind,
                "resources": resources,
                "tags": tags,
                "parameters": [str(p["name"]) for p in visible],
                "request_fields": [f.name for f in fields],
                "response_fields": response_fields,
                "returns": returns,
                "deprecated": deprecated,
                "has_summary": has_summary,
            },
        )
        return doc, body


def _ptr(api_path: str, method: str = "") -> str:
    return f"/paths/{pointer_escape(api_path)}" + (f"/{method}" if method else "")


def _uri(op: Mapping[str, Any], ctx: LoadContext, api_path: str, method: str) -> str:
    docs = op.get("externalDocs")
    if isinstance(docs, Mapping) and isinstance(docs.get("url"), str) and docs["url"]:
        return str(docs["url"])
    return f"{ctx.source}:{ctx.origin}#{_ptr(api_path, method)}"


def _link_related(docs: list[Document], limit: int = 10) -> list[Document]:
    """Fill ``related_ids``: the same path's other operations, then the item/collection."""
    by_coll: dict[str, list[Document]] = {}
    for d in docs:
        by_coll.setdefault(_collection(d), []).append(d)
    out: list[Document] = []
    for d in docs:
        path = str(d.metadata["path"])
        at = by_coll.get(_collection(d), [])
        same = [o.id for o in at if o.id != d.id and o.metadata["path"] == path]
        near = [o.id for o in at if o.metadata["path"] != path]
        related = tuple(dict.fromkeys(same + near))[:limit]
        out.append(replace(d, related_ids=related) if related else d)
    return out


def _collection(doc: Document) -> str:
    return collection_path(str(doc.metadata["path"]), doc.metadata.get("resources") or ())
