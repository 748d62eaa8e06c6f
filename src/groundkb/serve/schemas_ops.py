"""Pydantic models of the REST API's operations routes: sources, stats, settings, the
retrieval mode, the search history, admin actions and errors (``schemas.py`` holds the
models MCP and REST share)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from ..models import IngestReport, SourceInfo, Stats
    from ..ops.metrics import Point


class _Out(BaseModel):
    model_config = ConfigDict(from_attributes=True)


# ------------------------------------------------------- sources and operations
class IngestReportOut(_Out):
    source: str
    inserted: int
    updated: int
    unchanged: int
    deleted: int
    chunks_written: int
    files: int
    errors: list[str] = Field(description="Files or entries that could not be ingested.")
    seconds: float
    chunks_embedded: int = 0
    notice: str = ""


def report_out(r: IngestReport) -> IngestReportOut:
    return IngestReportOut.model_validate(
        {
            **{
                f: getattr(r, f)
                for f in (
                    "source",
                    "inserted",
                    "updated",
                    "unchanged",
                    "deleted",
                    "chunks_written",
                    "files",
                    "chunks_embedded",
                    "notice",
                )
            },
            "errors": [str(e) for e in r.errors],
            "seconds": round(r.seconds, 3),
        }
    )


class SourceOut(BaseModel):
    name: str
    kind: str
    location: str
    groups: list[str]
    documents: int
    chunks: int
    updated_at: str = Field(description="When it was last indexed (UTC).")
    enabled: bool = Field(description="Disabled sources are left out of every read.")
    last_sync: IngestReportOut | None = Field(
        default=None, description="The last ingest of this source by this server, if any."
    )


def source_out(
    i: SourceInfo,
    enabled: bool,
    last: IngestReport | None,
    groups: tuple[str, ...] | None = None,
    location: bool = True,
) -> SourceOut:
    """One source as the REST API shows it: ``groups`` the effective reader groups (the
    settings file's, else the stored ones); without ``location`` the path or URL it was
    read from is left out (callers who are not the operator)."""
    return SourceOut(
        name=i.source.name,
        kind=i.source.kind,
        location=i.source.location if location else "",
        groups=list(i.source.groups if groups is None else groups),
        documents=i.documents,
        chunks=i.chunks,
        updated_at=i.updated_at,
        enabled=enabled,
        last_sync=report_out(last) if last is not None else None,
    )


class SourcesOut(BaseModel):
    sources: list[SourceOut]


class StatsOut(_Out):
    path: str
    backend: str
    schema_version: int
    documents: int
    chunks: int
    sources: int
    by_type: dict[str, int]
    size_bytes: int


def stats_out(s: Stats) -> StatsOut:
    return StatsOut.model_validate(s)


class WindowOut(_Out):
    searches: int
    p50_ms: float
    p95_ms: float
    error_rate: float


class ModeOut(_Out):
    configured: str = Field(description="The `retrieval` setting.")
    mode: str = Field(description="What searches run in now.")
    reason: str = Field(description="Why it differs: latency, errors, forced or no_embedder.")
    detail: str
    retry_in_s: float = Field(description="Seconds until the configured mode is tried again.")
    window: WindowOut


class EmbeddingOut(BaseModel):
    """The server's background embedding (``ops/backfill.py``)."""

    state: str = Field("off", description="idle, embedding, waiting (after an error) or off.")
    pending: int = Field(0, description="Chunks without a vector when last counted.")
    embedded: int = Field(0, description="Chunks this server embedded since it started.")
    chunks_per_s: float = Field(0.0, description="Rate of the current or last run.")
    detail: str = ""


class HealthOut(BaseModel):
    status: Literal["ok"]
    documents: int
    chunks: int
    retrieval: ModeOut
    embedding: EmbeddingOut | None = Field(
        None, description="Background embedding, when this server does it."
    )


class PointOut(_Out):
    start: float = Field(description="Unix time the bucket starts.")
    searches: int
    p50_ms: float
    p95_ms: float
    no_match_rate: float
    clarify_rate: float
    errors: int
    fallbacks: int


class SeriesOut(BaseModel):
    bucket_s: float
    now: float
    summary: dict[str, float]
    points: list[PointOut]
    retrieval: ModeOut


def points_out(points: list[Point]) -> list[PointOut]:
    return [PointOut.model_validate(p) for p in points]


class SettingOut(BaseModel):
    name: str
    value: Any
    default: Any
    help: str
    secret: bool = False


class SettingsOut(BaseModel):
    config_path: str
    settings: list[SettingOut]


class ChangedOut(BaseModel):
    source: str
    enabled: bool
    changed: bool


class DeletedOut(BaseModel):
    source: str
    deleted_documents: int


class ModeIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    keyword: bool = Field(description="true: every search by keyword until set back to false.")


class ReloadOut(BaseModel):
    config_path: str
    changed: list[str] = Field(description="Settings whose value changed.")


class ErrorOut(BaseModel):
    code: str = Field(description="Stable error code, e.g. not_found, invalid_input.")
    message: str


class ErrorBody(BaseModel):
    error: ErrorOut
