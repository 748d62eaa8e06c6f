"""Progress on stderr for the long ``groundkb`` commands: ingest, sync, reindex, copy
and crawls."""

from __future__ import annotations

import sys
import time
from typing import Any

import click


class Progress:
    """Progress on stderr for ingest, sync and reindex: a bar with the rate and the time
    left on a terminal, else a plain line every ``every`` seconds (and one at the end).

    A call with ``done == 0`` starts a phase named by its ``name`` ("ingesting",
    "embedding"); without one, a phase starts when ``done`` goes back or ``total``
    changes, and takes the next of ``labels``."""

    def __init__(
        self, quiet: bool, *labels: str, every: float = 10.0, tty: bool | None = None
    ) -> None:
        self.quiet = quiet
        self.tty = sys.stderr.isatty() if tty is None else tty
        self.labels = list(labels) or ["ingesting", "embedding"]
        self.label = ""
        self.every = every
        self.bar: Any = None
        self.done = 0
        self.total = 0
        self.shown = -1  # ``done`` of the last line printed in this phase
        self.phase = -1
        self.running = False
        self.started = self.last = 0.0

    def __call__(self, done: int, total: int, name: str) -> None:
        if self.quiet:
            return
        if done == 0 or not self.running or done < self.done or total != self.total:
            self.close()  # a new phase (e.g. embedding after ingesting)
            self.running = True
            self.phase += 1
            self.label = name if done == 0 and name else self.labels[self.phase % len(self.labels)]
            self.done, self.total, self.shown = 0, total, -1
            self.started = self.last = time.monotonic()
            if self.tty:
                self.bar = click.progressbar(
                    length=total,
                    label=self.label,
                    file=sys.stderr,
                    show_eta=True,
                    item_show_func=lambda _: self._rate(),
                )
                self.bar.__enter__()
        if self.bar is not None:
            self.bar.update(done - self.done, name)
        self.done = done
        now = time.monotonic()
        if not self.tty and now - self.last >= self.every:
            self.last, self.shown = now, done
            click.echo(self._line(), err=True)

    def _rate(self) -> str:
        elapsed = time.monotonic() - self.started
        return f"{self.done / elapsed:.0f}/s" if elapsed > 0.5 and self.done else ""

    def _line(self) -> str:
        elapsed = time.monotonic() - self.started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        line = f"{self.label}: {self.done}/{self.total}"
        if rate > 0:
            left = (self.total - self.done) / rate
            line += f" ({rate:.1f}/s, {left:.0f} s left)" if self.done < self.total else ""
        return line + f" after {elapsed:.0f} s"

    def close(self) -> None:
        """End the current phase: close its bar, or print its last line."""
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None
        elif self.running and not self.tty and self.shown != self.done:
            click.echo(self._line(), err=True)  # the last line, unless it was just shown
        self.running = False


class CrawlProgress:
    """Crawl progress on stderr: a status line on a terminal, else a line every 10 s."""

    def __init__(self, quiet: bool, label: str, every: float = 10.0) -> None:
        self.quiet = quiet
        self.tty = sys.stderr.isatty()
        self.label = label
        self.every = every if not self.tty else 0.1
        self.last = 0.0
        self.line = ""

    def __call__(self, status: Any) -> None:
        self.line = (
            f"crawling {self.label}: {status.fetched} fetched, {status.queued} queued,"
            f" {status.failed} failed, {status.skipped} skipped"
        )
        now = time.monotonic()
        if self.quiet or now - self.last < self.every:
            return
        self.last = now
        if self.tty:
            click.echo("\r" + cut_line(self.line + f"  {status.url}"), nl=False, err=True)
        else:
            click.echo(self.line, err=True)

    def close(self) -> None:
        if not self.quiet and self.line:
            click.echo(("\r\033[K" if self.tty else "") + self.line, err=True)


def cut_line(text: str) -> str:
    import shutil

    width = shutil.get_terminal_size((100, 20)).columns - 1
    return text if len(text) <= width else text[: width - 1] + "…"
