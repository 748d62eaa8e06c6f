"""Every read a shell serves goes through one gate: who is calling, what they may read,
and one audit line (``access/audit.py``).

The shell says who the caller is (``principal``: a verified bearer token on HTTP, the
configured local user on stdio); the gate runs the core call on that caller's view of
the knowledge base (``KnowledgeBase.reader``) in a worker thread and records the access.
A model never names the caller: a ``username`` a tool receives is replaced by the gate's.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from ..access import audit
from ..access.principal import Principal
from ..errors import GroundKBError, NotFound
from ..ops import Caller, calling

if TYPE_CHECKING:
    from ..api import KnowledgeBase

T = TypeVar("T")


class Gate:
    """Runs reads as a caller over one knowledge base (module doc)."""

    def __init__(self, kb: KnowledgeBase, shell: str, principal: Callable[[], Principal]):
        self.kb = kb
        self.shell = shell
        self.principal = principal  # who the current request is, as the transport says

    async def run(
        self,
        action: str,
        fn: Callable[[KnowledgeBase], T],
        *,
        principal: Principal | None = None,
        sources: Collection[str] = (),
        **details: Any,
    ) -> T:
        """``fn`` on the caller's view in a worker thread, audited. ``sources`` are the
        sources the call asked for (to record those it may not read)."""
        who = principal or self.principal()
        return await anyio.to_thread.run_sync(lambda: self.call(action, fn, who, sources, details))

    def call(
        self,
        action: str,
        fn: Callable[[KnowledgeBase], T],
        who: Principal,
        sources: Collection[str] = (),
        details: dict[str, Any] | None = None,
    ) -> T:
        """The same, in this thread."""
        details = details or {}
        outcome = "ok"
        view: KnowledgeBase | None = None
        try:
            with calling(Caller(shell=self.shell, user=who.user)):
                view = self.kb.reader(who)
                return fn(view)
        except BaseException as exc:
            outcome = exc.code if isinstance(exc, GroundKBError) else "internal_error"
            raise
        finally:
            readable = view.readable if view is not None else frozenset()
            denied = [s for s in sources if readable is not None and s not in readable]
            doc_id = details.get("doc_id")
            if isinstance(doc_id, str) and readable is not None and outcome == NotFound.code:
                denied += self._owner_hidden(doc_id, readable)
            audit.record(
                action,
                who,
                shell=self.shell,
                allowed=readable,
                denied=denied,
                outcome=outcome,
                **details,
            )

    def _owner_hidden(self, doc_id: str, readable: Collection[str]) -> list[str]:
        """The source of ``doc_id`` when it exists but the caller may not read it (for
        the audit line only; the caller gets the same not-found as for no document)."""
        head = doc_id.rpartition("#")[0] or doc_id
        try:
            owners = self.kb.store.owners([doc_id, head])
        except GroundKBError:
            return []
        return sorted({s for s in owners.values() if s not in readable})
