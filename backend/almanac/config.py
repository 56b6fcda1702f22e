"""Every setting Almanac reads, in one place.

`Settings` is read from environment variables (case-insensitive) and an optional `.env` file in the
working directory. Nothing else in the package reads the environment: the composition root
(`almanac.main.create_app`) receives a `Settings` and hands plain values down.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

ChatProvider = Literal["auto", "anthropic", "openai", "offline"]


class ConfigError(Exception):
    """The configuration cannot be used; the message names the variable(s) at fault."""


class Settings(BaseSettings):
    """Almanac's configuration. Field names map to upper-case environment variables."""

    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore", case_sensitive=False)

    # --- server -----------------------------------------------------------------------------
    host: str = Field("127.0.0.1", description="Address `almanac serve` binds to.")
    port: int = Field(8000, ge=1, le=65535, description="Port `almanac serve` listens on.")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field("INFO", description="Log level.")
    data_dir: Path = Field(Path("./data"), description="Folder for the SQLite file and local secrets.")
    database_url: str = Field(
        "",
        description="SQLAlchemy URL. Empty: SQLite file `<DATA_DIR>/almanac.db`. "
        "`postgresql://…` is accepted and run with asyncpg.",
    )

    # --- auth --------------------------------------------------------------------------------
    local_user: bool = Field(
        True,
        description="On first start with no users, create `LOCAL_USER_EMAIL` and write its API key "
        "to `<DATA_DIR>/local-api-key` (mode 0600). Turn off in production.",
    )
    local_user_email: str = Field("local@localhost", description="E-mail of the local user.")
    session_ttl_s: float = Field(30 * 86400, gt=0, description="Lifetime of a browser session cookie (seconds).")
    session_cookie_secure: bool = Field(
        False, description="Mark the session cookie Secure (only sent over HTTPS). Turn on behind TLS."
    )
    allowed_hosts: str = Field(
        "localhost,127.0.0.1,::1",
        description="Comma-separated hostnames (or addresses) requests may name in `Host`; `*.example.com` "
        "matches subdomains, `*` any host. Others get 400 (the defence against DNS rebinding).",
    )
    forwarded_allow_ips: str = Field(
        "",
        description="Comma-separated addresses of reverse proxies whose X-Forwarded-For/-Proto headers are "
        "trusted (`*` for any). Empty: none — the client address and scheme are the connection's own.",
    )
    sessions_per_user: int = Field(
        20, ge=1, le=1000, description="Browser sessions a user may hold at once; the oldest end first."
    )
    api_docs: bool = Field(
        True,
        description="Interactive API docs (Swagger UI) at /docs, its assets served by this server under the "
        "strict Content-Security-Policy (no CDN, no inline script). /openapi.json is always served.",
    )
    frontend_dist: Path | None = Field(
        None, description="Folder of the built web UI. Empty: `frontend/dist` of this checkout, if built."
    )

    # --- chat model --------------------------------------------------------------------------
    chat_provider: ChatProvider = Field(
        "auto",
        description="`anthropic`, `openai` (any OpenAI-compatible server) or `offline`. `auto`: "
        "anthropic if ANTHROPIC_API_KEY is set, else openai if OPENAI_BASE_URL or OPENAI_API_KEY "
        "is set, else the built-in offline model.",
    )
    anthropic_api_key: SecretStr | None = Field(None, description="Anthropic API key.")
    anthropic_base_url: str | None = Field(None, description="Anthropic API base URL override.")
    anthropic_model: str = Field("claude-haiku-4-5", description="Anthropic chat model.")
    openai_api_key: SecretStr | None = Field(None, description="Key for the OpenAI-compatible server.")
    openai_base_url: str | None = Field(
        None, description="OpenAI-compatible base URL (Ollama, vLLM, llama.cpp, OpenRouter…)."
    )
    openai_model: str = Field("gpt-4o-mini", description="Model name on the OpenAI-compatible server.")
    summariser_model: str | None = Field(
        None,
        description="Model that summarises tool results and answers, on the chat provider. "
        "Empty: the chat model. The offline provider summarises extractively.",
    )
    model_timeout_s: float = Field(120.0, gt=0, description="Per-call model timeout (seconds).")
    model_max_retries: int = Field(
        3, ge=0, le=10, description="Retries on 429/5xx/timeouts, with backoff; honours Retry-After."
    )
    max_output_tokens: int = Field(4096, ge=16, le=128_000, description="max_tokens per model call.")
    offline_token_delay_ms: float = Field(
        8.0, ge=0, le=1000, description="Delay between the offline model's streamed words."
    )

    # --- documentation retrieval ---------------------------------------------------------------
    doc_source: Literal["auto", "context7", "local"] = Field(
        "auto", description="`context7`, `local`, or `auto`: Context7 when CONTEXT7_API_KEY is set, else local."
    )
    context7_api_key: SecretStr | None = Field(None, description="Context7 API key (optional for Context7).")
    context7_api_url: str = Field("https://context7.com/api", description="Context7 API base URL.")
    context7_timeout_s: float = Field(30.0, gt=0, description="Timeout of one Context7 request (seconds).")
    doc_cache_ttl_s: float = Field(86_400.0, ge=0, description="How long Context7 responses are cached (seconds).")
    docs_paths: str = Field("./docs", description="Comma-separated folders of Markdown/rst/text docs to index.")
    docs_include_packages: bool = Field(True, description="Index the docs of installed Python distributions.")
    docs_include_stdlib: bool = Field(True, description="Index the Python standard library's docstrings.")
    docs_auto_index: bool = Field(
        True, description="Build the local doc index in the background at startup if it was never built."
    )
    embeddings: Literal["auto", "voyage", "local", "none"] = Field(
        "auto",
        description="`voyage`, `local` (all-MiniLM-L6-v2 on the CPU), `none`, or `auto`: voyage when "
        "VOYAGE_API_KEY is set, else local.",
    )
    voyage_api_key: SecretStr | None = Field(None, description="Voyage AI key: embeddings and reranking.")
    voyage_base_url: str | None = Field(None, description="Voyage API base URL override.")
    voyage_embed_model: str = Field("voyage-3-large", description="Voyage embedding model.")
    voyage_rerank_model: str = Field("rerank-2.5", description="Voyage reranking model.")
    reranker: Literal["auto", "voyage", "model", "none"] = Field(
        "auto",
        description="`voyage`, `model` (the chat model scores passages), `none` (keep the fused order), or "
        "`auto`: voyage with a key, else the chat model if one is configured, else none.",
    )
    rag_top_k: int = Field(6, ge=1, le=30, description="Passages returned after reranking.")
    rag_candidates: int = Field(30, ge=1, le=200, description="Fused candidates handed to the reranker.")
    rag_min_score: float | None = Field(
        None, description="Drop passages whose reranker score is below this (applied after reranking)."
    )
    doc_tool_timeout_s: float = Field(90.0, gt=0, description="Time limit of one retrieve_documentation call.")

    # --- turn loop and memory ------------------------------------------------------------------
    max_turns: int = Field(15, ge=1, le=100, description="Model turns per query before a forced answer.")
    tool_timeout_s: float = Field(30.0, gt=0, description="Timeout of one tool call (seconds).")
    max_message_chars: int = Field(32_000, ge=1, description="Longest accepted user message; longer gets HTTP 413.")
    summary_fallback_chars: int = Field(
        2_000, ge=100, description="Bound on an item kept verbatim when its summary is not available."
    )
    summary_wait_s: float = Field(
        15.0, ge=0, description="How long an answer waits for pending summaries before ending."
    )
    conversation_lease_s: float = Field(
        600.0, gt=0, description="A query's hold on its conversation expires after this long."
    )
    sse_heartbeat_s: float = Field(15.0, gt=0, description="Seconds between SSE heartbeat comments.")

    # --- MCP tools (mcp/servers.json) -----------------------------------------------------------
    mcp_enabled: bool = Field(True, description="Start the MCP servers of MCP_CONFIG; false turns every MCP tool off.")
    mcp_config: Path | None = Field(
        None, description="The MCP servers file (`mcpServers` JSON). Empty: `mcp/servers.json` of this checkout."
    )
    mcp_startup_wait_s: float = Field(
        15.0, ge=0, description="How long startup waits for MCP servers' tool lists (slower ones join later)."
    )
    git_repository: Path | None = Field(
        None, description="Repository the git MCP server serves. Empty: the working directory's git work tree."
    )
    github_personal_access_token: SecretStr | None = Field(
        None, description="GitHub token for the GitHub MCP server (its tools are off without it)."
    )
    github_toolsets: str = Field("default", description="GitHub MCP server toolsets, e.g. `repos,issues`.")

    @field_validator("database_url")
    @classmethod
    def _normalise_database_url(cls, value: str) -> str:
        value = value.strip()
        if not value:
            return value
        for prefix, async_prefix in (
            ("postgresql://", "postgresql+asyncpg://"),
            ("postgres://", "postgresql+asyncpg://"),
            ("sqlite://", "sqlite+aiosqlite://"),
        ):
            if value.startswith(prefix):
                return async_prefix + value[len(prefix) :]
        if value.startswith(("postgresql+asyncpg://", "sqlite+aiosqlite://")):
            return value
        raise ValueError("must start with postgresql:// or sqlite:// (async drivers are added)")

    @model_validator(mode="after")
    def _check_provider_keys(self) -> Settings:
        if self.chat_provider == "anthropic" and self.anthropic_api_key is None:
            raise ValueError("CHAT_PROVIDER=anthropic needs ANTHROPIC_API_KEY")
        if self.chat_provider == "openai" and not (self.openai_base_url or self.openai_api_key):
            raise ValueError("CHAT_PROVIDER=openai needs OPENAI_BASE_URL or OPENAI_API_KEY")
        return self

    @property
    def resolved_allowed_hosts(self) -> list[str]:
        """ALLOWED_HOSTS as a list."""
        return [part.strip() for part in self.allowed_hosts.split(",") if part.strip()]

    @property
    def resolved_database_url(self) -> str:
        """The database URL in use: DATABASE_URL, or the SQLite file under DATA_DIR."""
        if self.database_url:
            return self.database_url
        return f"sqlite+aiosqlite:///{(self.data_dir / 'almanac.db').as_posix()}"

    @property
    def resolved_doc_source(self) -> Literal["context7", "local"]:
        """Where documentation comes from."""
        if self.doc_source != "auto":
            return self.doc_source
        return "context7" if self.context7_api_key is not None else "local"

    @property
    def resolved_docs_paths(self) -> list[Path]:
        """DOCS_PATHS as paths."""
        return [Path(part.strip()) for part in self.docs_paths.split(",") if part.strip()]

    @property
    def resolved_chat_provider(self) -> Literal["anthropic", "openai", "offline"]:
        """Which provider answers: the explicit CHAT_PROVIDER, or the first one with keys."""
        if self.chat_provider != "auto":
            return self.chat_provider
        if self.anthropic_api_key is not None:
            return "anthropic"
        if self.openai_base_url or self.openai_api_key:
            return "openai"
        return "offline"


def load_settings(**overrides: object) -> Settings:
    """Read the settings, turning validation failures into a `ConfigError` naming each variable."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        raise ConfigError(describe_validation_error(exc)) from None


def describe_validation_error(exc: ValidationError) -> str:
    """One line per problem, each starting with the environment variable's name."""
    lines = []
    for error in exc.errors():
        location = [str(part) for part in error.get("loc", ()) if part != "__root__"]
        name = location[0].upper() if location else "configuration"
        value = error.get("input")
        shown = "" if location == [] or isinstance(value, dict) else f" (got {value!r})"
        if "KEY" in name:
            shown = ""  # never echo secrets
        message = str(error.get("msg", "invalid value")).removeprefix("Value error, ")
        lines.append(f"{name}: {message}{shown}")
    return "invalid configuration:\n  " + "\n  ".join(lines)
