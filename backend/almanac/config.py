"""Every setting Almanac reads, in one place.

`Settings` is read from environment variables (case-insensitive) and an optional `.env` file in the
working directory. Nothing else in the package reads the environment: the composition root
(`almanac.main.create_app`) receives a `Settings` and hands plain values down.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal
from urllib.parse import unquote

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
    offline_summary_delay_ms: float = Field(
        0.0,
        ge=0,
        le=600_000,
        description="How long the offline (extractive) summariser takes per summary; lets a local run behave like "
        "one with a real summariser (summaries arriving after the answer).",
    )

    # --- documentation retrieval ---------------------------------------------------------------
    doc_source: Literal["auto", "context7", "local"] = Field(
        "auto",
        description="`context7`, `local`, or `auto`: Context7 while it answers (checked at startup and every "
        "DOC_SOURCE_RECHECK_S; no key needed), else the local index.",
    )
    doc_source_recheck_s: float = Field(
        300.0, gt=0, description="DOC_SOURCE=auto: how often to check whether Context7 answers (seconds)."
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
        None,
        ge=0,
        le=1,
        description="Drop passages scored below this, 0–1 on every reranker (applied after reranking).",
    )
    fusion: Literal["gated", "zscore", "rrf"] = Field(
        "gated", description="How BM25 and vector results are fused: `gated`, `zscore` or `rrf`."
    )
    rrf_k: float = Field(60.0, ge=0, description="The k of reciprocal rank fusion (FUSION=rrf).")
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
        30.0,
        gt=0,
        description="A query's hold on its conversation: renewed every third of this while it runs; when its "
        "process dies, the conversation is free again (and the query settled) after at most this long.",
    )
    model_context_tokens: int = Field(
        0,
        ge=0,
        description="The chat model's context window in tokens. 0: from a table of known models "
        "(Claude, GPT-4o-class, common local models), else 32,000.",
    )
    tool_result_max_tokens: int = Field(
        6_000,
        ge=100,
        description="A current tool result longer than this is cut to a head and a pointer to its ID "
        "(never more than 40 % of the window).",
    )
    max_query_credits: int = Field(
        50, ge=0, description="Most credits one question may cost; tool calls beyond it are not run. 0: no limit."
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
        None,
        description="Repository the git MCP server serves. Empty: on a local run (LOCAL_USER=true) the working "
        "directory's git work tree; with LOCAL_USER=false the git tools are off.",
    )
    github_personal_access_token: SecretStr | None = Field(
        None,
        description="The operator's GitHub token: lists the GitHub MCP server's tools (its tools are off "
        "without it); serves users' calls only with GITHUB_SHARED_TOKEN=true.",
    )
    github_toolsets: str = Field("default", description="GitHub MCP server toolsets, e.g. `repos,issues`.")
    github_shared_token: bool = Field(
        False,
        description="Let users without a GitHub token of their own call the GitHub tools with "
        "GITHUB_PERSONAL_ACCESS_TOKEN (everyone then acts as the operator on GitHub).",
    )
    secret_key: SecretStr | None = Field(
        None,
        description="Key that encrypts users' integration tokens at rest (at least 32 characters). Empty: "
        "generated into `<DATA_DIR>/secret-key` on a local run; with LOCAL_USER=false, per-user tokens are off.",
    )

    # --- gateway and boost -------------------------------------------------------------------------
    gateway_upstream: Literal["auto", "openai", "anthropic", "offline"] = Field(
        "auto",
        description="Where /v1/messages requests go: `openai` (OPENAI_BASE_URL, converted), `anthropic` "
        "(ANTHROPIC_BASE_URL, passed through), `offline`, or `auto`: openai if OPENAI_BASE_URL or OPENAI_API_KEY is "
        "set, else anthropic if ANTHROPIC_API_KEY is set, else the offline model.",
    )
    big_model: str = Field(
        "",
        description="Model for requests naming opus. Empty: `gpt-4o` on an OpenAI-compatible upstream, the requested "
        "name on Anthropic. A prefix picks another upstream: `anthropic:…`, `openai:…`, `offline:`.",
    )
    middle_model: str = Field("", description="Model for requests naming sonnet. Empty: BIG_MODEL.")
    small_model: str = Field(
        "", description="Model for requests naming haiku. Empty: `gpt-4o-mini` on an OpenAI-compatible upstream."
    )
    openai_native_tools: Literal["auto", "true", "false"] = Field(
        "auto",
        description="Chat on an OpenAI-compatible server: `true` native tool calling, `false` the text tool protocol "
        "(manifest in the prompt, calls parsed from the reply), `auto` native until the server refuses tools.",
    )
    text_tool_format: Literal["concise", "verbose", "qwen_xml"] = Field(
        "concise", description="The manifest the text tool protocol uses: `concise`, `verbose` or `qwen_xml`."
    )
    gateway_credits_per_1k_tokens: float = Field(
        0.0, ge=0, description="Credits per 1,000 gateway tokens (planner's included). 0: record usage only."
    )
    gateway_key_cache_s: float = Field(
        5.0, ge=0, description="How long the gateway trusts an API key lookup (a revoked key works this long)."
    )
    boost_base_url: str | None = Field(None, description="OpenAI-compatible base URL of the boost (planner) model.")
    boost_api_key: SecretStr | None = Field(None, description="Key for BOOST_BASE_URL (local servers need none).")
    boost_model: str = Field("gpt-4o", description="The boost (planner) model.")
    enable_boost_support: str = Field(
        "NONE",
        description="Tiers whose requests are boosted: NONE, or BIG_MODEL, MIDDLE_MODEL, SMALL_MODEL "
        "(comma-separated for several).",
    )
    boost_wrapper_template: str | None = Field(
        None,
        description="The planner's prompt template (or the path of a file holding it); placeholders {loop_count}, "
        "{max_loops}, {previous_attempts}, {user_request}, {conversation}, {tools_text}. Empty: the built-in one.",
    )
    boost_timeout_s: float = Field(60.0, gt=0, description="Time limit of one boost (planner) call (seconds).")
    default_strategy: Literal["direct", "boost", "collaborate"] = Field(
        "direct",
        description="How chat questions are answered unless the request or the user's own default says otherwise: "
        "`direct`, `boost` (a planner model guides the chat model; the planner is BOOST_MODEL when BOOST_BASE_URL "
        "is set, else the chat model plans for itself) or `collaborate`.",
    )

    @field_validator("enable_boost_support")
    @classmethod
    def _normalise_boost_tiers(cls, value: str) -> str:
        tiers = [part.strip().upper() for part in value.replace(";", ",").split(",") if part.strip()]
        if not tiers or tiers == ["NONE"]:
            return "NONE"
        wrong = [tier for tier in tiers if tier not in ("BIG_MODEL", "MIDDLE_MODEL", "SMALL_MODEL")]
        if wrong:
            raise ValueError("must be NONE or a comma-separated list of BIG_MODEL, MIDDLE_MODEL, SMALL_MODEL")
        return ",".join(dict.fromkeys(tiers))

    @model_validator(mode="after")
    def _check_boost(self) -> Settings:
        if self.enable_boost_support != "NONE" and not self.boost_base_url:
            raise ValueError("ENABLE_BOOST_SUPPORT needs BOOST_BASE_URL (an OpenAI-compatible server for the planner)")
        if self.boost_base_url and not self.boost_base_url.startswith(("http://", "https://")):
            raise ValueError("BOOST_BASE_URL must start with http:// or https://")
        return self

    @property
    def boost_tiers(self) -> frozenset[str]:
        """ENABLE_BOOST_SUPPORT as a set of tier names (empty for NONE)."""
        return frozenset() if self.enable_boost_support == "NONE" else frozenset(self.enable_boost_support.split(","))

    @property
    def resolved_gateway_upstream(self) -> Literal["openai", "anthropic", "offline"]:
        """Where gateway requests go by default."""
        if self.gateway_upstream != "auto":
            return self.gateway_upstream
        if self.openai_base_url or self.openai_api_key:
            return "openai"
        if self.anthropic_api_key is not None:
            return "anthropic"
        return "offline"

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

    @field_validator("secret_key")
    @classmethod
    def _check_secret_key(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None or not value.get_secret_value().strip():
            return None
        if len(value.get_secret_value().strip()) < 32:
            raise ValueError(
                "must be at least 32 characters (e.g. `python -c 'import secrets; print(secrets.token_urlsafe(48))'`)"
            )
        return SecretStr(value.get_secret_value().strip())

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
    """One line per problem, each starting with the environment variable's name. A value is echoed
    only when it cannot be a secret: never for keys, tokens and passwords, and a URL's password
    (`postgresql://user:***@host/db`, `?password=***`) is masked."""
    lines = []
    for error in exc.errors():
        location = [str(part) for part in error.get("loc", ()) if part != "__root__"]
        name = location[0].upper() if location else "configuration"
        value = error.get("input")
        shown = ""
        if location and not isinstance(value, dict | list) and not _is_secret_setting(location[0]):
            shown = f" (got {redact_url(value)!r})" if isinstance(value, str) else f" (got {value!r})"
        message = redact_url(str(error.get("msg", "invalid value")).removeprefix("Value error, "))
        lines.append(f"{name}: {message}{shown}")
    return "invalid configuration:\n  " + "\n  ".join(lines)


_SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD")
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^:/?#@\s]*:)(?P<password>.*)@(?P<tail>[^@]*)$", re.S)
_QUERY_PASSWORD = re.compile(r"(?i)(?P<head>[?&](?:password|passwd|pwd|sslpassword)=)(?P<password>[^&#]*)")


def _is_secret_setting(name: str) -> bool:
    field = Settings.model_fields.get(name.lower())
    return any(word in name.upper() for word in _SECRET_WORDS) or (
        field is not None and "SecretStr" in str(field.annotation)
    )


def redact_url(text: str) -> str:
    """`text` (a URL, or a message quoting one) with any password in it replaced by `***`."""
    masked = _URL_PASSWORD.sub(lambda m: f"{m['head']}***@{m['tail']}", text)
    return _QUERY_PASSWORD.sub(lambda m: f"{m['head']}***", masked)


def url_passwords(url: str) -> list[str]:
    """The passwords a database URL carries (as written and percent-decoded), to keep out of logs."""
    found = [m["password"] for m in (_URL_PASSWORD.search(url), *_QUERY_PASSWORD.finditer(url)) if m is not None]
    found = [password for password in found if password]
    return sorted({*found, *(unquote(password) for password in found)}, key=len, reverse=True)
