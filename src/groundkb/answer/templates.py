"""Prompt templates: YAML files, a registry, and sandboxed rendering.

A template file (``*.yaml`` / ``*.yml``)::

    id: knowledge-aware            # letters, digits, '-', '_', '.'; unique
    name: Knowledge-aware answer
    version: "1.0"
    description: Answer from the knowledge base, citing it.
    system: |                      # Jinja2 text (``system_prompt`` also accepted)
      ...{{ grounding_instructions }}...
    user: |                        # (``user_prompt`` also accepted)
      ...{{ question }}...
    requirements:                  # checked when the verdict is "answer"
      min_entities: 0
      min_evidence: 0
      requires_relationships: false
      requires_axioms: false
    defaults:
      grounding: moderate          # strict | moderate | flexible
      format: yaml                 # yaml | json | markdown
      include_relationships: true
      include_axioms: true

Built-in templates ship in ``answer/builtin/``; the folder named by the
``prompt_templates`` setting adds templates and overrides built-ins with the same id.
A file that cannot be read or does not fit the schema is skipped and reported by the
registry (:attr:`TemplateRegistry.problems`); asking for it is a
:class:`TemplateNotFound` that says why. A template whose Jinja2 text does not compile
is listed with its ``error``; using it falls back to the default template, as does one
that fails while rendering, and the reason is logged and returned with the prompt.

Rendering uses Jinja2's ``SandboxedEnvironment``: a template can loop, branch and
filter, but cannot reach Python internals (``__class__``, ``__subclasses__``,
``__globals__``), call unsafe methods or build huge ranges, and data is never evaluated
as template code. Undefined variables are errors (``StrictUndefined``), so a typo fails
loudly and the builder falls back to the default template instead of sending a prompt
with holes.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import ConfigError, InvalidInput, MissingDependency, NotFound
from .formats import FORMATS, ContextFormat
from .grounding import GROUNDING_LEVELS, GroundingLevel

log = logging.getLogger(__name__)

DEFAULT_TEMPLATE = "knowledge-aware"
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


class TemplateNotFound(NotFound):
    """No template with the requested id (or its file was rejected)."""

    code = "template_not_found"


class MissingContext(InvalidInput):
    """The knowledge found does not meet the template's requirements."""

    code = "missing_context"
    status = 422


class TemplateError(ConfigError):
    """A template (the default included) could not be rendered."""

    code = "template_error"
    status = 500


@dataclass(frozen=True, slots=True)
class Requirements:
    min_entities: int = 0
    min_evidence: int = 0
    requires_relationships: bool = False
    requires_axioms: bool = False


@dataclass(frozen=True, slots=True)
class TemplateDefaults:
    grounding: GroundingLevel = "moderate"
    format: ContextFormat = "yaml"
    include_relationships: bool = True
    include_axioms: bool = True


@dataclass(frozen=True, slots=True)
class PromptTemplate:
    id: str
    name: str
    version: str
    description: str
    system: str
    user: str
    requirements: Requirements = Requirements()
    defaults: TemplateDefaults = TemplateDefaults()
    origin: str = "builtin"
    error: str = ""  # why it cannot be compiled; using it falls back to the default


def _schema() -> Any:
    """The pydantic models of a template file (built lazily: pydantic is not light)."""
    from pydantic import BaseModel, ConfigDict, Field

    class _Req(BaseModel):
        model_config = ConfigDict(extra="forbid")
        min_entities: int = Field(0, ge=0)
        min_evidence: int = Field(0, ge=0)
        requires_relationships: bool = False
        requires_axioms: bool = False

    class _Def(BaseModel):
        model_config = ConfigDict(extra="forbid")
        grounding: GroundingLevel = "moderate"
        format: ContextFormat = "yaml"
        include_relationships: bool = True
        include_axioms: bool = True

    class _File(BaseModel):
        model_config = ConfigDict(extra="forbid", populate_by_name=True)
        id: str = Field(pattern=_ID.pattern)
        name: str = Field(min_length=1)
        version: str = "1"
        description: str = ""
        system: str = Field(alias="system_prompt", min_length=1)
        user: str = Field(alias="user_prompt", min_length=1)
        requirements: _Req | None = None
        defaults: _Def | None = None

    return _File


def parse_template(data: Any, origin: str) -> PromptTemplate:
    """A template from parsed YAML; InvalidInput naming the field when it does not fit."""
    from pydantic import ValidationError

    if isinstance(data, Mapping) and isinstance(data.get("version"), int | float):
        data = {**data, "version": str(data["version"])}
    try:
        f = _schema().model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(file)"
        raise InvalidInput(f"{origin} [{where}]: {err['msg']}") from None
    error = ""
    for part in ("system", "user"):
        try:
            _environment().parse(getattr(f, part))
        except Exception as exc:  # jinja2.TemplateSyntaxError
            error = f"{origin} [{part}] line {getattr(exc, 'lineno', '?')}: {exc}"
            break
    return PromptTemplate(
        id=f.id,
        name=f.name,
        version=f.version,
        description=f.description,
        system=f.system,
        user=f.user,
        requirements=Requirements(**f.requirements.model_dump())
        if f.requirements
        else Requirements(),
        defaults=TemplateDefaults(**f.defaults.model_dump()) if f.defaults else TemplateDefaults(),
        origin=origin,
        error=error,
    )


def _read(path: str, text: str) -> PromptTemplate:
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise InvalidInput(f"{path}: invalid YAML{where}") from None
    return parse_template(data, path)


class TemplateRegistry:
    """Templates by id: built-ins, then the user's folder (same id overrides)."""

    def __init__(
        self, templates: Mapping[str, PromptTemplate], problems: Mapping[str, str] | None = None
    ) -> None:
        self._templates = dict(templates)
        self.problems: dict[str, str] = dict(problems or {})  # file -> why it was skipped

    @classmethod
    def load(cls, folder: str = "") -> TemplateRegistry:
        templates: dict[str, PromptTemplate] = {}
        problems: dict[str, str] = {}
        builtin = resources.files(__package__ or "groundkb.answer") / "builtin"
        for entry in sorted(builtin.iterdir(), key=lambda e: e.name):
            if entry.name.endswith((".yaml", ".yml")):
                t = _read(f"builtin:{entry.name}", entry.read_text(encoding="utf-8"))
                templates[t.id] = t
        if folder:
            root = Path(folder)
            if not root.is_dir():
                raise ConfigError(f"prompt_templates folder {folder} does not exist")
            for path in sorted([*root.glob("*.yaml"), *root.glob("*.yml")]):
                try:
                    t = _read(str(path), path.read_text(encoding="utf-8"))
                except (OSError, UnicodeDecodeError, InvalidInput) as exc:
                    why = exc.message if isinstance(exc, InvalidInput) else f"{path}: {exc}"
                    log.warning("prompt template skipped: %s", why)
                    problems[str(path)] = why
                    continue
                if t.id in templates and not templates[t.id].origin.startswith("builtin:"):
                    why = f"{path}: id {t.id!r} is already defined by {templates[t.id].origin}"
                    log.warning("prompt template skipped: %s", why)
                    problems[str(path)] = why
                    continue
                if t.error:
                    log.warning("prompt template %s does not compile: %s", t.id, t.error)
                    problems[str(path)] = t.error
                templates[t.id] = t
        return cls(templates, problems)

    def list(self) -> list[PromptTemplate]:
        return sorted(self._templates.values(), key=lambda t: t.id)

    def get(self, template_id: str) -> PromptTemplate:
        found = self._templates.get(template_id)
        if found is not None:
            return found
        rejected = [why for path, why in self.problems.items() if Path(path).stem == template_id]
        msg = f"no prompt template {template_id!r}; available: " + ", ".join(
            sorted(self._templates)
        )
        if rejected:
            msg += f" (a file of that name was skipped: {rejected[0]})"
        raise TemplateNotFound(msg)


def _stamp(folder: str) -> tuple[tuple[str, int, int], ...]:
    root = Path(folder)
    if not folder or not root.is_dir():
        return ()
    files = sorted([*root.glob("*.yaml"), *root.glob("*.yml")])
    return tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in files)


def load_registry(folder: str = "") -> TemplateRegistry:
    """The registry for ``folder``, re-read when a file in it changes."""
    return _cached(folder, _stamp(folder))


@functools.lru_cache(maxsize=8)
def _cached(folder: str, stamp: tuple[tuple[str, int, int], ...]) -> TemplateRegistry:
    return TemplateRegistry.load(folder)


@functools.lru_cache(maxsize=1)
def _environment() -> Any:
    try:
        from jinja2 import StrictUndefined
        from jinja2.sandbox import SandboxedEnvironment
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingDependency(
            "prompt templates need jinja2: pip install 'groundkb[prompts]'"
        ) from exc

    return SandboxedEnvironment(
        undefined=StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
        trim_blocks=True,
        lstrip_blocks=True,
    )


@functools.lru_cache(maxsize=64)
def variables(source: str) -> frozenset[str]:
    """The top-level variables a template text uses."""
    from jinja2 import meta

    env = _environment()
    return frozenset(meta.find_undeclared_variables(env.parse(source)))


@functools.lru_cache(maxsize=64)
def _compiled(source: str) -> Any:
    return _environment().from_string(source)


def render(source: str, context: Mapping[str, Any]) -> str:
    """Render template text in the sandbox; raises whatever rendering raised."""
    text: str = _compiled(source).render(**context)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


__all__ = [
    "DEFAULT_TEMPLATE",
    "FORMATS",
    "GROUNDING_LEVELS",
    "MissingContext",
    "PromptTemplate",
    "Requirements",
    "TemplateDefaults",
    "TemplateError",
    "TemplateNotFound",
    "TemplateRegistry",
    "load_registry",
    "render",
    "variables",
]
