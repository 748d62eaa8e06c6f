"""Federation across knowledge servers: a registry of remote servers (``registry.py``)
and the aggregator that fans RAG searches out to them (``aggregator.py``). See
docs/federation.md."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..settings import Settings
    from .aggregator import Aggregator


def aggregator_for(settings: Settings) -> Aggregator | None:
    """The aggregator over the registry the settings point to; None without one."""
    from .aggregator import Aggregator
    from .registry import Registry

    registry = Registry.from_settings(settings.rag_registry, settings.config_path)
    return None if registry is None else Aggregator(registry, settings.admin_group)
