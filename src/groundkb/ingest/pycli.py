"""Command documents from a Python CLI object: argparse, click or typer.

The target is ``"package.module:object"`` (the module is imported, so its top-level code
runs) or the object itself. Supported objects:

- ``argparse.ArgumentParser``: the parser and its subparsers, recursively;
- a click ``Command`` or ``Group``: every command, groups recursively;
- a ``typer.Typer`` app, through typer's own conversion to click (when typer is
  installed);
- a function that uses one of these, such as a console-script entry point
  (``def main(): cli(prog_name="tool")``): the object it refers to is taken, and the
  function is never called (calling it would run the program);
- a callable taking no arguments that returns one of these (``build_parser``).

The program name defaults to the console script installed for the target (the name
people type, ``groundkb`` for ``groundkb.serve.cli:main``), else the click command's name
or the parser's ``prog``.

One document per runnable command: leaf commands, and a group or parser only when it
has no subcommands. The name path is the program followed by the subcommand names
(``helios gw users list``); id ``cmd:{name}``, ``metadata["command"]`` the name and
``metadata["syntax"]`` the usage line (``helios gw users list [OPTIONS] EMAIL``).
Category: the first subcommand level (``gw``), else the program. Options list their
flags, help, required flag and default; hidden commands and options are left out.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import threading
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from ..errors import InvalidInput
from ..models import FileError
from .base import LoadContext, Loaded
from .catalog import CommandSpec, Option, command_document


def describe_target(target: Any) -> str:
    """The origin recorded for a target: the import string, ``module:function`` for a
    factory, else the kind and program name (``argparse:notes``, ``click:shop``)."""
    if isinstance(target, str):
        return target.strip()
    if isinstance(target, argparse.ArgumentParser):
        return f"argparse:{target.prog}"
    qualname = getattr(target, "__qualname__", None)
    if isinstance(qualname, str) and getattr(target, "__module__", None):
        return f"{target.__module__}:{qualname}"
    name = getattr(target, "name", None) or getattr(getattr(target, "info", None), "name", None)
    return f"{type(target).__module__.split('.')[0]}:{name or type(target).__name__}"


_resolving = threading.local()


def _referenced_cli(fn: Any) -> Any:
    """The CLI object a plain function refers to by a global name (``main`` → ``cli``)."""
    code = getattr(fn, "__code__", None)
    names = getattr(fn, "__globals__", None)
    if code is None or not isinstance(names, dict):
        return None
    found = [names[n] for n in code.co_names if n in names and _kind(names[n]) is not None]
    return found[0] if found else None


def resolve_target(target: Any) -> Any:
    """Import ``module:object`` strings; take the CLI a function refers to; call
    factories; InvalidInput when impossible."""
    obj = target
    if isinstance(target, str):
        module_name, _, attr = target.strip().partition(":")
        if not module_name or not attr:
            raise InvalidInput(f"expected 'package.module:object', got {target!r}")
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:  # any import-time failure of user code
            raise InvalidInput(
                f"cannot import {module_name!r}: {type(exc).__name__}: {exc}"
            ) from exc
        obj = module
        for part in attr.split("."):
            if not hasattr(obj, part):
                raise InvalidInput(f"{module_name!r} has no attribute {attr!r}")
            obj = getattr(obj, part)
    if _kind(obj) is None and (used := _referenced_cli(obj)) is not None:
        return used
    if _kind(obj) is None and callable(obj) and not isinstance(obj, type):
        active: set[int] = _resolving.__dict__.setdefault("active", set())
        if id(obj) in active:  # the factory ingests itself (it runs this program)
            raise InvalidInput(f"{describe_target(target)} runs a program; give the CLI object")
        active.add(id(obj))
        try:
            made = obj()
        except (Exception, SystemExit) as exc:
            raise InvalidInput(
                f"calling {describe_target(target)} did not return a CLI object "
                f"({type(exc).__name__}); give the click, typer or argparse object itself"
            ) from None
        finally:
            active.discard(id(obj))
        if _kind(made) is not None:
            return made
    if _kind(obj) is None:
        raise InvalidInput(
            f"{describe_target(target)} is not an argparse parser, click command or typer app"
        )
    return obj


def _script_name(target: Any, obj: Any) -> str | None:
    """The console script installed for ``target`` (or for a function of its module
    that runs ``obj``), e.g. ``groundkb`` for ``groundkb.serve.cli:main``; else None."""
    if not isinstance(target, str):
        return None
    module = target.strip().partition(":")[0]
    try:
        scripts = importlib.metadata.entry_points(group="console_scripts")
    except Exception:  # a broken distribution's metadata: no name from it
        return None
    for ep in scripts:
        if ep.module != module:
            continue
        if ep.value.replace(" ", "") == target.strip():
            return ep.name
        try:
            loaded = ep.load()
        except Exception:
            continue
        if loaded is obj or _referenced_cli(loaded) is obj:
            return ep.name
    return None


def _kind(obj: Any) -> str | None:
    if isinstance(obj, argparse.ArgumentParser):
        return "argparse"
    try:
        import click
    except ImportError:  # pragma: no cover - click is a dependency of groundkb
        return None
    if isinstance(obj, click.Command) or _click_like(obj):
        return "click"
    if type(obj).__name__ == "Typer" and type(obj).__module__.startswith("typer"):
        return "typer"
    return None


def _click_like(obj: Any) -> bool:
    """A command of a click fork with the same API (typer ships one)."""
    return all(hasattr(obj, a) for a in ("get_params", "collect_usage_pieces", "context_class"))


def load_cli(
    target: Any, source: str, *, program: str | None = None, max_chunk_tokens: int = 500
) -> tuple[list[Loaded], list[FileError]]:
    """Documents for every command of ``target`` (see the module docstring)."""
    obj = resolve_target(target)
    origin = describe_target(target)
    program = program or _script_name(target, obj)
    kind = _kind(obj)
    if kind == "typer":
        try:
            typer_main = importlib.import_module("typer.main")
        except ImportError as exc:  # pragma: no cover - the object came from typer
            raise InvalidInput("typer is not importable") from exc
        obj = typer_main.get_command(obj)
        kind = "click"
    specs = list(_argparse(obj, program) if kind == "argparse" else _click(obj, program))
    ctx = LoadContext(source, origin, "", max_chunk_tokens)
    out: list[Loaded] = []
    errors: list[FileError] = []
    for spec, meta in specs:
        if not spec.description:
            spec = replace(spec, description=f"The `{spec.name}` command.")
        out.append(command_document(spec, ctx, {"generated_from": kind, **meta}))
    if not out:
        errors.append(FileError(origin, "the CLI defines no commands"))
    return out, errors


# ----------------------------------------------------------------- argparse


def _argparse(
    parser: argparse.ArgumentParser, program: str | None
) -> Iterator[tuple[CommandSpec, dict[str, Any]]]:
    root = program or parser.prog
    yield from _walk_parser(parser, [root], "", root)


def _walk_parser(
    parser: argparse.ArgumentParser, path: list[str], help_text: str, root: str
) -> Iterator[tuple[CommandSpec, dict[str, Any]]]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if subs:
        helps = {c.dest: c.help or "" for a in subs for c in a._choices_actions}
        for group in subs:
            seen: set[int] = set()
            for name, sub in group.choices.items():
                if id(sub) in seen:  # an alias of a subcommand already walked
                    continue
                seen.add(id(sub))
                yield from _walk_parser(sub, [*path, name], helps.get(name, ""), root)
        return
    options: list[Option] = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
            continue
        metavar = action.metavar if isinstance(action.metavar, str) else ""
        name = ", ".join(action.option_strings) or metavar or action.dest
        default = action.default
        show_default = default not in (None, False, argparse.SUPPRESS) and action.option_strings
        options.append(
            Option(
                name=str(name),
                description=(action.help or "").replace("%(default)s", str(default)),
                required=bool(action.required)
                or (not action.option_strings and action.nargs not in ("?", "*")),
                default=str(default) if show_default else "",
            )
        )
    usage = " ".join(parser.format_usage().split())
    usage = usage[len("usage: ") :] if usage.lower().startswith("usage: ") else usage
    prefix = " ".join(path)
    if not usage.startswith(prefix):
        usage = " ".join([*path, *usage.split()[len(parser.prog.split()) :]])
    description = parser.description or help_text or ""
    examples = (parser.epilog or "").strip()
    name = " ".join(path)
    yield (
        CommandSpec(
            name=name,
            description=description + (f"\n\n{examples}" if examples else ""),
            syntax=usage,
            category=path[1] if len(path) > 2 else root,
            options=tuple(options),
        ),
        {"program": root},
    )


# -------------------------------------------------------------------- click


def _click(cmd: Any, program: str | None) -> Iterator[tuple[CommandSpec, dict[str, Any]]]:
    root = program or cmd.name or "cli"
    ctx = cmd.context_class(cmd, info_name=root)
    yield from _walk_click(cmd, ctx, [root], root)


def _walk_click(
    cmd: Any, ctx: Any, path: list[str], root: str
) -> Iterator[tuple[CommandSpec, dict[str, Any]]]:
    # Duck-typed, so that click forks with the same API (typer's) work too.
    subcommands = getattr(cmd, "commands", None)
    if subcommands:
        for name in sorted(subcommands):
            sub = subcommands[name]
            if getattr(sub, "hidden", False):
                continue
            sub_ctx = sub.context_class(sub, info_name=name, parent=ctx)
            yield from _walk_click(sub, sub_ctx, [*path, name], root)
        return
    options: list[Option] = []
    for param in cmd.get_params(ctx):
        if getattr(param, "hidden", False) or param.name == "help":
            continue
        if getattr(param, "param_type_name", "") == "option":
            names = ", ".join([*param.opts, *param.secondary_opts])
            default = param.default
            options.append(
                Option(
                    names,
                    getattr(param, "help", None) or "",
                    bool(param.required),
                    str(default) if _shown_default(default) else "",
                )
            )
        else:
            label = getattr(param, "human_readable_name", None) or str(param.name or "").upper()
            options.append(Option(label, getattr(param, "help", None) or "", bool(param.required)))
    pieces = cmd.collect_usage_pieces(ctx)
    syntax = " ".join([*path, *pieces])
    description = (cmd.help or cmd.short_help or "").split("\f", 1)[0].strip()
    yield (
        CommandSpec(
            name=" ".join(path),
            description=description,
            syntax=syntax,
            category=path[1] if len(path) > 2 else root,
            options=tuple(options),
        ),
        {"program": root, "deprecated": bool(getattr(cmd, "deprecated", False))},
    )


def _shown_default(default: Any) -> bool:
    """Whether a click default is worth showing (not None/False/empty/a sentinel/callable)."""
    if default is None or default is False or callable(default):
        return False
    if isinstance(default, tuple | list) and not default:
        return False
    return "UNSET" not in repr(default) and "Sentinel" not in type(default).__name__
