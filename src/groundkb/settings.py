"""Settings: one declaration drives defaults, the config file, env vars, help and docs.

Precedence: defaults < ``groundkb.toml`` < ``GROUNDKB_*`` environment < explicit overrides
(CLI flags). ``docs/settings.md`` is generated from :data:`SETTINGS` (a test keeps it in
sync).

**Trusted settings.** A ``groundkb.toml`` found in the working directory may come with a
checkout nobody vetted. Settings that decide where requests carrying credentials go
(``embedder_url``, ``embedder_key_env``: together they could send any environment
variable to any host) are therefore taken from such a file only when it is trusted:
named with ``--config`` or ``GROUNDKB_CONFIG``. From a file found by itself they are
refused with a message saying how to set them (the environment, or ``--config``).
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ConfigError

# The calibrated verdict (search/verdict.py): weights fitted by benchmarks/fit_verdict.py.
FITTED_ON = (
    "(threshold= its probability cut). Fitted by benchmarks/fit_verdict.py on the Orbit "
    "verdict set, the Kubernetes/Twilio API questions, SciFact, TorchHub, TF Hub, tldr "
    "(descriptions), the tldr pages (as ingested before each example became a chunk of "
    "its own) and (hybrid) the Python docs questions; see docs/ranking.md."
)
VERDICT_SCOPE_KEYWORD = "threshold=0.90 bias=-0.47 known=2.99 cover=1.05 name=0.80 phrase=0.77"
VERDICT_ANSWER_KEYWORD = (
    "threshold=0.70 bias=-5.91 known=1.00 cover=2.40 phrase=2.07 lead=1.81 cover_lead=2.71"
    " exact=0.53 single=-4.12 terms=3.28"
)
VERDICT_SCOPE_HYBRID = (
    "threshold=0.80 bias=-1.93 known=1.40 cover=1.45 name=1.69 phrase=0.69 cosine=3.34"
)
# P(answer) from which a top meaning that the next two cannot rival (search/verdict.py,
# ``dominates``) answers: fitted by benchmarks/fit_verdict.py --declared for the models
# above. Hybrid: 1.0 (never), since every lower threshold answered the tldr pages less
# precisely (docs/benchmarks.md, nineteenth stop).
VERDICT_DOMINANT_KEYWORD = 0.65
VERDICT_DOMINANT_HYBRID = 1.0
VERDICT_ANSWER_HYBRID = (
    "threshold=0.60 bias=-5.00 cover=2.00 phrase=1.34 lead=1.88 cover_lead=2.74 cosine=1.34"
    " cosine_lead=2.19 exact=0.47 single=-4.65 terms=2.89 agree=0.56"
)


# API operation ranking (search/apis.py): fitted by benchmarks/fit_api_ranking.py.
API_FITTED = "Fitted leave-one-spec-out on eight public APIs; see docs/ranking.md."
# The best on all eight APIs, and the choice of every leave-one-spec-out fold, since the
# fit counts once in hybrid fusion (docs/benchmarks.md, "Operation fit once in hybrid
# fusion"); a question that names the resource acted on gains nothing more than its words.
# With the fit counted once the context factor no longer pays either (1.0, chosen by
# seven folds of eight; 0.8 measured the same to within a question): off.
API_KIND_BOOST = 0.25
API_RESOURCE_FACTOR = 1.0
API_PARENT_FACTOR = 0.85
API_SUPERSEDED_FACTOR = 0.98
API_CONTEXT_FACTOR = 1.0
API_READ_FACTOR = 0.35


@dataclass(frozen=True, slots=True)
class Setting:
    name: str
    type: type
    default: Any
    help: str
    secret: bool = False  # never shown: `groundkb settings`, the REST API, the console
    trusted: bool = False  # not from a groundkb.toml found by itself (module docstring)


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "db",
        str,
        "groundkb.db",
        "Index location: a SQLite file path, or a postgresql:// URL (also GROUNDKB_DATABASE_URL).",
    ),
    Setting("db_pool_size", int, 10, "PostgreSQL: most connections per process."),
    Setting("db_timeout", float, 10.0, "PostgreSQL: seconds to connect or wait for a connection."),
    Setting(
        "int8_vectors",
        bool,
        True,
        "SQLite, from 5k chunks: vector search scans an int8 copy first, then computes "
        "exactly the rows that can matter (the same results, half the time at 100k "
        "chunks; about 100 MB more memory at 100k). Needs onnxruntime.",
    ),
    Setting(
        "kept_scores_mb",
        int,
        128,
        "SQLite, in a process that searches many times (serve): memory for the keyword "
        "candidate scores and rows kept between questions, half each (the same results; "
        "a question whose words were asked before about twice as fast at 100k chunks; "
        "warming up fills up to half of each with every word's scores and the chunks' "
        "rows). 0 or less: off. Needs numpy.",
    ),
    Setting("synonyms", str, "", "Synonyms file (Solr format) added to the built-in rules."),
    Setting("default_synonyms", bool, True, "Use the built-in synonyms (get/list/show, ...)."),
    Setting(
        "verb_forms",
        bool,
        True,
        "Keyword search: a verb also finds its other regular forms (detecting: detected).",
    ),
    Setting("max_chunk_tokens", int, 500, "Largest chunk, in estimated tokens."),
    Setting("default_limit", int, 5, "Hits returned when a search gives no limit."),
    Setting("candidates", int, 50, "Chunks scored per query before de-duplication."),
    Setting(
        "candidate_clauses",
        int,
        8,
        "Keyword candidates come from the query's N rarest known words (0: all).",
    ),
    Setting("max_chunks_per_doc", int, 2, "Chunks kept per document (more if multi-intent)."),
    Setting("weight_title", float, 3.0, "BM25 weight of the title field."),
    Setting("weight_aliases", float, 3.0, "BM25 weight of the aliases field."),
    Setting("weight_keywords", float, 2.0, "BM25 weight of the keywords field."),
    Setting("weight_header", float, 1.0, "BM25 weight of the header path field."),
    Setting("weight_body", float, 1.0, "BM25 weight of the body text."),
    Setting("title_phrase_boost", float, 0.5, "Rank boost when the query phrase is in a title."),
    Setting(
        "api_kind_boost",
        float,
        API_KIND_BOOST,
        "API operations: rank boost when the question asks for the operation's action. "
        + API_FITTED,
    ),
    Setting(
        "api_resource_factor",
        float,
        API_RESOURCE_FACTOR,
        "API operations: rank factor when the question names the resource acted on. " + API_FITTED,
    ),
    Setting(
        "api_parent_factor",
        float,
        API_PARENT_FACTOR,
        "API operations: rank factor per enclosing resource the question does not name. "
        + API_FITTED,
    ),
    Setting(
        "api_context_factor",
        float,
        API_CONTEXT_FACTOR,
        "API operations: rank factor for an operation whose API has none of the question's "
        "resources (scaled by the share it lacks); 1 = off. " + API_FITTED,
    ),
    Setting(
        "api_read_factor",
        float,
        API_READ_FACTOR,
        "API operations: rank factor of an operation that reads (read, list, search, watch) "
        "when the question asks for a change (it opens with a verb that does not read: "
        "'close an issue'); 1 = off. " + API_FITTED,
    ),
    Setting(
        "api_superseded_factor",
        float,
        API_SUPERSEDED_FACTOR,
        "API operations: rank factor when a newer version of the API has the same operation.",
    ),
    Setting(
        "verdict_scope_keyword",
        str,
        VERDICT_SCOPE_KEYWORD,
        "P(the question is covered), keyword search: logistic weights " + FITTED_ON,
    ),
    Setting(
        "verdict_answer_keyword",
        str,
        VERDICT_ANSWER_KEYWORD,
        "P(the top hit answers), keyword search: logistic weights " + FITTED_ON,
    ),
    Setting(
        "verdict_scope_hybrid",
        str,
        VERDICT_SCOPE_HYBRID,
        "P(the question is covered), hybrid search: logistic weights " + FITTED_ON,
    ),
    Setting(
        "verdict_answer_hybrid",
        str,
        VERDICT_ANSWER_HYBRID,
        "P(the top hit answers), hybrid search: logistic weights " + FITTED_ON,
    ),
    Setting(
        "verdict_dominant_keyword",
        float,
        VERDICT_DOMINANT_KEYWORD,
        "P(answer) from which a top hit that matches every word the next two match, and "
        "more, answers (keyword search; 1.0: never). Fitted by benchmarks/fit_verdict.py.",
    ),
    Setting(
        "verdict_dominant_hybrid",
        float,
        VERDICT_DOMINANT_HYBRID,
        "P(answer) from which a top hit that matches every word the next two match, and "
        "more, answers (hybrid search; 1.0: never). Fitted by benchmarks/fit_verdict.py.",
    ),
    Setting(
        "option_lead", float, 0.35, "Meanings within this relative lead of the top are options."
    ),
    Setting(
        "ubiquitous_share",
        float,
        0.8,
        "A word this share of some sources' documents hold, while no other source mostly "
        "holds it and at most 1 - this share of the others' documents do (a product's "
        'name), where it only sets a question\'s context ("in Orbit, how do I …"), is no '
        "evidence and narrows the search to those sources; 0 keeps it a word.",
    ),
    Setting(
        "ubiquitous_min_docs",
        int,
        20,
        "Sources of fewer documents are never named so (a few pages still differ by it).",
    ),
    Setting(
        "typo_correction",
        bool,
        True,
        "Correct query words missing from the index (a typo, a word the docs write as two).",
    ),
    Setting("typo_max_terms", int, 4, "Correct typos only in queries of this many words."),
    Setting("bm25_k1", float, 1.5, "BM25 term-frequency saturation."),
    Setting("bm25_b", float, 0.75, "BM25 length normalization."),
    Setting(
        "embedder",
        str,
        "auto",
        "auto (minilm if installed, else none), minilm, minilm-fp32, openai:MODEL, none.",
    ),
    Setting(
        "embedder_url",
        str,
        "",
        "Base URL of an OpenAI-compatible embeddings API (trusted: env, flag or --config).",
        trusted=True,
    ),
    Setting(
        "embedder_key_env",
        str,
        "OPENAI_API_KEY",
        "Env var holding that API's key (trusted: env, flag or --config).",
        trusted=True,
    ),
    Setting("retrieval", str, "hybrid", "keyword, vector or hybrid (kill switch: keyword)."),
    Setting("fusion", str, "weighted", "Hybrid fusion: weighted (min-max scores) or rrf."),
    Setting("rrf_k", int, 60, "Reciprocal rank fusion constant."),
    Setting("keyword_weight", float, 0.3, "Keyword share of the weighted fusion."),
    Setting(
        "vector_candidates",
        int,
        20,
        "Chunks taken from vector search per query (at least twice the limit; in vector "
        "mode enough to fill the results).",
    ),
    Setting(
        "min_vector_hit", float, 0.3, "With no keyword match, least top cosine to return hits."
    ),
    Setting("log_level", str, "warning", "Logging level of the shells (debug, info, ...)."),
    Setting("prompt_templates", str, "", "Folder of YAML prompt templates (add or override)."),
    Setting("prompt_template", str, "knowledge-aware", "Template used when none is asked for."),
    Setting("prompt_grounding", str, "", "strict, moderate or flexible; '' = the template's."),
    Setting(
        "prompt_format", str, "", "Context format yaml, json or markdown; '' = the template's."
    ),
    Setting("prompt_budget_glossary", int, 300, "Prompt tokens for core concepts (glossary)."),
    Setting("prompt_budget_knowledge", int, 1500, "Prompt tokens for retrieved knowledge."),
    Setting("prompt_budget_axioms", int, 300, "Prompt tokens for axioms (domain rules)."),
    Setting("prompt_budget_state", int, 300, "Prompt tokens for caller UI/application state."),
    Setting("prompt_budget_messages", int, 500, "Prompt tokens for recent messages."),
    Setting("axiom_categories", str, "axioms", "Categories whose entries are axioms (rules)."),
    Setting("glossary_categories", str, "concepts,glossary", "Categories of the glossary."),
    Setting("tool_max_tokens", int, 18000, "Default token cap of MCP search/get results."),
    Setting(
        "mcp_structured_output",
        bool,
        False,
        "MCP tools declare output schemas and return structured content too (each result "
        "then travels twice); off: one compact JSON text. Read at server start.",
    ),
    Setting("snippet_chars", int, 200, "Longest hit snippet, in characters (40 at least)."),
    Setting(
        "admin_token",
        str,
        "",
        "Bearer token for HTTP admin actions (sync, delete, enable); '' = admin off.",
        secret=True,
    ),
    Setting(
        "auth_tokens_file",
        str,
        "",
        "HTTP callers: TOML file of bearer tokens (sha256) with user and groups; docs/access.md.",
        trusted=True,
    ),
    Setting("auth_jwt_issuer", str, "", "HTTP callers: JWT issuer (iss) to accept.", trusted=True),
    Setting(
        "auth_jwt_audience",
        str,
        "",
        "JWT audience (aud) this server accepts ('' = its public URL + /mcp).",
        trusted=True,
    ),
    Setting(
        "auth_jwt_jwks",
        str,
        "",
        "JWT signing keys: a JWKS URL, or a JWKS/PEM file.",
        trusted=True,
    ),
    Setting("auth_jwt_groups_claim", str, "groups", "JWT claim with the caller's groups."),
    Setting(
        "auth_required_scope",
        str,
        "",
        "Scope every bearer token must carry, e.g. kb:read ('' = none); 403 without it.",
    ),
    Setting(
        "public_url",
        str,
        "",
        "The server's URL as clients reach it ('' = from host and port); names the resource.",
    ),
    Setting(
        "local_user",
        str,
        "",
        "Who a stdio server's caller is ('' = the operator: every source).",
        trusted=True,
    ),
    Setting("local_groups", str, "", "Groups of local_user (comma-separated).", trusted=True),
    Setting("admin_group", str, "admin", "Group that reads every source and may administer."),
    Setting("audit_log", str, "off", "Access audit log (JSON lines): off, stderr or a file path."),
    Setting(
        "rag_registry",
        str,
        "",
        "Registry of remote knowledge servers ('' = rag-mcp.json search order).",
        trusted=True,
    ),
    Setting(
        "synthesis_url",
        str,
        "",
        "OpenAI-compatible endpoint for synthesized answers ('' = extractive answers).",
        trusted=True,
    ),
    Setting("synthesis_model", str, "", "Model name for synthesized answers."),
    Setting(
        "synthesis_key_env",
        str,
        "OPENAI_API_KEY",
        "Environment variable holding the synthesis endpoint's API key.",
        trusted=True,
    ),
    Setting(
        "rerank_url",
        str,
        "",
        "OpenAI-compatible endpoint whose model reorders a search's top documents "
        "('' = off; their titles and openings are sent to it).",
        trusted=True,
    ),
    Setting("rerank_model", str, "", "Model name for reranking (required with rerank_url)."),
    Setting(
        "rerank_key_env",
        str,
        "OPENAI_API_KEY",
        "Environment variable holding the rerank endpoint's API key.",
        trusted=True,
    ),
    Setting("rerank_candidates", int, 10, "Distinct documents the rerank model is shown (2-50)."),
    Setting("rerank_chars", int, 300, "Characters of each document's passage it is shown."),
    Setting(
        "rerank_timeout_s",
        float,
        10.0,
        "Seconds to wait for the rerank model; past that the search keeps its own order.",
    ),
    Setting(
        "embed_on_ingest",
        bool,
        True,
        "Embed new chunks as part of an ingest (false: leave them to `serve` or `reindex`).",
    ),
    Setting(
        "embed_in_background",
        bool,
        True,
        "A server embeds chunks that have no vector yet, in the background.",
    ),
    Setting("rag_rate_per_minute", int, 0, "RAG tool calls per user per minute (0 = no limit)."),
    Setting("fallback_p95_ms", float, 500.0, "Fall back to keyword when p95 latency exceeds it."),
    Setting("fallback_error_rate", float, 0.05, "Fall back to keyword above this error rate."),
    Setting("fallback_window_s", float, 300.0, "Sliding window of those two checks (seconds)."),
    Setting("fallback_min_searches", int, 20, "Searches in the window before it can fall back."),
    Setting("fallback_cooldown_s", float, 60.0, "Seconds by keyword before trying again."),
    Setting(
        "ref_paths",
        str,
        "",
        "Folders outside an ingested path that OpenAPI $ref may read (comma-separated).",
    ),
    Setting("query_log", str, "stderr", "Per-query JSON log of `serve`: stderr, off or a file."),
    Setting("crawl_max_pages", int, 5000, "Most URLs one crawl visits."),
    Setting("crawl_max_depth", int, 20, "Most links followed from the start URL."),
    Setting(
        "crawl_rate", float, 4.0, "Request starts per second per host (robots.txt may slow it)."
    ),
    Setting("crawl_concurrency", int, 4, "Requests in flight per host."),
    Setting("crawl_timeout", float, 15.0, "Seconds per socket operation; 4x for a whole response."),
    Setting("crawl_max_mb", int, 25, "Largest response read, in MiB (after decompression)."),
    Setting("crawl_user_agent", str, "", "User agent of the crawler ('' = groundkb's own)."),
)
SECRET_SETTINGS = frozenset(s.name for s in SETTINGS if s.secret)
TRUSTED_SETTINGS = frozenset(s.name for s in SETTINGS if s.trusted)
_BY_NAME = {s.name: s for s in SETTINGS}
DATABASE_URL_ENV = "GROUNDKB_DATABASE_URL"  # same as GROUNDKB_DB, which wins if both are set


@dataclass(frozen=True, slots=True)
class Settings:
    db: str = "groundkb.db"
    db_pool_size: int = 10
    db_timeout: float = 10.0
    int8_vectors: bool = True
    kept_scores_mb: int = 128
    synonyms: str = ""
    default_synonyms: bool = True
    verb_forms: bool = True
    max_chunk_tokens: int = 500
    default_limit: int = 5
    candidates: int = 50
    candidate_clauses: int = 8
    max_chunks_per_doc: int = 2
    weight_title: float = 3.0
    weight_aliases: float = 3.0
    weight_keywords: float = 2.0
    weight_header: float = 1.0
    weight_body: float = 1.0
    title_phrase_boost: float = 0.5
    api_kind_boost: float = API_KIND_BOOST
    api_resource_factor: float = API_RESOURCE_FACTOR
    api_parent_factor: float = API_PARENT_FACTOR
    api_superseded_factor: float = API_SUPERSEDED_FACTOR
    api_context_factor: float = API_CONTEXT_FACTOR
    api_read_factor: float = API_READ_FACTOR
    verdict_scope_keyword: str = VERDICT_SCOPE_KEYWORD
    verdict_answer_keyword: str = VERDICT_ANSWER_KEYWORD
    verdict_scope_hybrid: str = VERDICT_SCOPE_HYBRID
    verdict_answer_hybrid: str = VERDICT_ANSWER_HYBRID
    verdict_dominant_keyword: float = VERDICT_DOMINANT_KEYWORD
    verdict_dominant_hybrid: float = VERDICT_DOMINANT_HYBRID
    option_lead: float = 0.35
    typo_correction: bool = True
    ubiquitous_share: float = 0.8
    ubiquitous_min_docs: int = 20
    typo_max_terms: int = 4
    bm25_k1: float = 1.5
    bm25_b: float = 0.75
    embedder: str = "auto"
    embedder_url: str = ""
    embedder_key_env: str = "OPENAI_API_KEY"
    retrieval: str = "hybrid"
    fusion: str = "weighted"
    rrf_k: int = 60
    keyword_weight: float = 0.3
    vector_candidates: int = 20
    min_vector_hit: float = 0.3
    log_level: str = "warning"
    prompt_templates: str = ""
    prompt_template: str = "knowledge-aware"
    prompt_grounding: str = ""
    prompt_format: str = ""
    prompt_budget_glossary: int = 300
    prompt_budget_knowledge: int = 1500
    prompt_budget_axioms: int = 300
    prompt_budget_state: int = 300
    prompt_budget_messages: int = 500
    axiom_categories: str = "axioms"
    glossary_categories: str = "concepts,glossary"
    tool_max_tokens: int = 18000
    mcp_structured_output: bool = False
    snippet_chars: int = 200
    admin_token: str = dataclasses.field(default="", repr=False)
    auth_tokens_file: str = ""
    auth_jwt_issuer: str = ""
    auth_jwt_audience: str = ""
    auth_jwt_jwks: str = ""
    auth_jwt_groups_claim: str = "groups"
    auth_required_scope: str = ""
    public_url: str = ""
    local_user: str = ""
    local_groups: str = ""
    admin_group: str = "admin"
    audit_log: str = "off"
    rag_registry: str = ""
    synthesis_url: str = ""
    synthesis_model: str = ""
    synthesis_key_env: str = "OPENAI_API_KEY"
    rerank_url: str = ""
    rerank_model: str = ""
    rerank_key_env: str = "OPENAI_API_KEY"
    rerank_candidates: int = 10
    rerank_chars: int = 300
    rerank_timeout_s: float = 10.0
    rag_rate_per_minute: int = 0
    embed_on_ingest: bool = True
    embed_in_background: bool = True
    fallback_p95_ms: float = 500.0
    fallback_error_rate: float = 0.05
    fallback_window_s: float = 300.0
    fallback_min_searches: int = 20
    fallback_cooldown_s: float = 60.0
    ref_paths: str = ""
    query_log: str = "stderr"
    crawl_max_pages: int = 5000
    crawl_max_depth: int = 20
    crawl_rate: float = 4.0
    crawl_concurrency: int = 4
    crawl_timeout: float = 15.0
    crawl_max_mb: int = 25
    crawl_user_agent: str = ""
    config_path: str = ""
    config_trusted: bool = False  # the file was named (--config, GROUNDKB_CONFIG)
    sources: tuple[Mapping[str, Any], ...] = ()

    def replace(self, **changes: Any) -> Settings:
        return dataclasses.replace(self, **{k: _coerce(k, v) for k, v in changes.items()})

    @property
    def weights(self) -> dict[str, float]:
        return {
            "title": self.weight_title,
            "aliases": self.weight_aliases,
            "keywords": self.weight_keywords,
            "header": self.weight_header,
            "body": self.weight_body,
        }


def _coerce(name: str, value: Any) -> Any:
    spec = _BY_NAME.get(name)
    if spec is None:
        if name in ("config_path", "config_trusted", "sources"):
            return value
        raise ConfigError(f"unknown setting {name!r}")
    try:
        if spec.type is bool and isinstance(value, str):
            low = value.strip().lower()
            if low not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
                raise ValueError(value)
            return low in ("1", "true", "yes", "on")
        if spec.type is float and isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, spec.type) and not (spec.type is int and isinstance(value, bool)):
            return value
        if isinstance(value, str):
            return spec.type(value)
    except ValueError:
        pass
    raise ConfigError(f"setting {name!r} must be {spec.type.__name__}, got {value!r}")


def load_settings(
    config: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    *,
    trusted: bool | None = None,
) -> Settings:
    """Build settings from the config file (``groundkb.toml`` if present), env and overrides.

    The file is trusted (may set :data:`TRUSTED_SETTINGS`) when it is named, by
    ``config`` or ``GROUNDKB_CONFIG``, unless ``trusted`` says otherwise.
    """
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    named = bool(config) or bool(env.get("GROUNDKB_CONFIG"))
    trusted = named if trusted is None else trusted
    path = Path(config) if config else Path(env.get("GROUNDKB_CONFIG", "groundkb.toml"))
    sources: tuple[Mapping[str, Any], ...] = ()
    if path.is_file():
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read {path}: {exc}") from exc
        raw_sources = data.pop("sources", [])
        if not isinstance(raw_sources, list) or not all(isinstance(s, dict) for s in raw_sources):
            raise ConfigError(f"{path}: [[sources]] must be a list of tables")
        sources = tuple(raw_sources)
        for key, value in data.items():
            if key not in _BY_NAME:
                raise ConfigError(f"{path}: unknown setting {key!r}")
            if key in TRUSTED_SETTINGS and not trusted:
                raise ConfigError(
                    f"{path} sets {key}, which decides where requests with credentials go; a "
                    "settings file found in the working directory may not: set "
                    f"GROUNDKB_{key.upper()} instead, or trust the file with --config {path}"
                )
            values[key] = _coerce(key, value)
        for key in ("db", "synonyms", "prompt_templates", "auth_tokens_file", "rag_registry"):
            value = values.get(key)
            if value and "://" not in value and not Path(value).is_absolute():
                values[key] = str(path.parent / values[key])
    elif config:
        raise ConfigError(f"config file {path} does not exist")
    if env.get(DATABASE_URL_ENV):  # the conventional name for a database URL
        values["db"] = env[DATABASE_URL_ENV]
    for spec in SETTINGS:
        key = "GROUNDKB_" + spec.name.upper()
        if key in env:
            values[spec.name] = _coerce(spec.name, env[key])
    for key, value in (overrides or {}).items():
        if value is not None:
            values[key] = _coerce(key, value)
    return Settings(
        **values,
        config_path=str(path) if path.is_file() else "",
        config_trusted=trusted and path.is_file(),
        sources=sources,
    )


def settings_markdown() -> str:
    """The settings reference in Markdown, generated from :data:`SETTINGS`."""
    lines = [
        "# Settings",
        "",
        "Precedence: defaults < `groundkb.toml` < `GROUNDKB_*` environment variables < CLI flags.",
        "",
        "| setting | env | type | default | meaning |",
        "| --- | --- | --- | --- | --- |",
    ]
    for s in SETTINGS:
        default = repr(s.default) if s.type is str else str(s.default).lower()
        lines.append(
            f"| `{s.name}` | `GROUNDKB_{s.name.upper()}` | {s.type.__name__} | `{default}` "
            f"| {s.help} |"
        )
    return "\n".join(lines) + "\n"
