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
    docs_paths: str = Field(
        "", description="Comma-separated folders of Markdown/rst/text docs to index. Empty: <DATA_DIR>/docs."
    )
    docs_include_packages: bool = Field(True, description="Index the docs of installed Python distributions.")
    docs_include_stdlib: bool = Field(True, description="Index the Python standard library's docstrings.")
    python_docs_dir: str = Field(
        "auto",
        description="The Python documentation's library reference sources (`*.rst.txt`), searched alongside "
        "the standard library's docstrings: `auto` (Debian's pythonX.Y-doc folder for this interpreter, if "
        "installed), a folder, or `none`.",
    )
    docs_introspect: bool = Field(
        True,
        description="Also index what importing the modules shows (C APIs, builtins, re-exports), in an isolated "
        "subprocess with a time limit per module.",
    )
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
        "`auto`: voyage with a key, else none.",
    )
    rerank_timeout_s: float = Field(
        15.0, gt=0, description="RERANKER=model: time limit of the scoring call; past it the fused order stands."
    )
    rerank_max_candidates: int = Field(
        20, ge=1, le=200, description="RERANKER=model: candidates the chat model scores (the rest follow in order)."
    )
    rerank_passage_chars: int = Field(
        600, ge=50, le=4000, description="RERANKER=model: each candidate is cut to this many characters."
    )
    rerank_fused_weight: float = Field(
        0.5,
        ge=0,
        le=10,
        description="RERANKER=model: the search's own order, added to the model's 0-1 score with this weight "
        "(0: the model's scores alone).",
    )
    rag_top_k: int = Field(6, ge=1, le=30, description="Passages returned after reranking.")
    rag_candidates: int = Field(40, ge=1, le=200, description="Fused candidates handed to the reranker.")
    rag_synonyms: bool = Field(
        True,
        description="Search the documentation's words for a question's words too (\"parse\" → deserialize, loads; "
        '"extension" → suffix): a table of everyday programming vocabulary (rag/synonyms.py).',
    )
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
    local_dense: Literal["both", "reorder", "fuse"] = Field(
        "reorder",
        description="How the local index uses embeddings: `reorder` (BM25 finds the candidates, the question's "
        "embedding reorders them), `both` (a whole-index vector search fused with BM25 by FUSION wherever the "
        "vectors are ready, then the reorder) or `fuse` (the seed's way: fusion only).",
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

    # --- tools: code execution, files, SQL, web search -----------------------------------------------
    tools_config: Path | None = Field(
        None,
        description="Optional YAML file enabling and configuring the built-in tools per deployment (`tools.enabled`, "
        "per-tool `enabled` and `parameters`); its parameters override the settings below.",
    )
    code_execution_enabled: bool = Field(
        True,
        description="Offer `code_execution` (Python, JavaScript, bash in a bubblewrap sandbox) wherever the sandbox "
        "can be set up; without it the tool is off (code never runs unsandboxed).",
    )
    code_execution_timeout_s: float = Field(
        10.0, gt=0, le=600, description="Wall-clock limit of one program; the whole process tree is killed then."
    )
    code_execution_memory_mb: int = Field(
        512, ge=64, le=65_536, description="Address space of each sandboxed process (MiB); node also gets it as heap."
    )
    code_execution_host_uid: int = Field(
        65534,
        ge=1,
        description="Host uid the sandbox runs as when Almanac itself runs as root (the kernel ignores process "
        "limits for root). Unused otherwise: the sandbox then runs as Almanac's own user.",
    )
    code_execution_require_limits: bool = Field(
        True,
        description="Offer `code_execution` only where the kernel enforces the sandbox's disk limit (bubblewrap 0.8+ "
        "with --size) and its system-call filter loads (libseccomp). false: run with whatever of those the host has "
        "(the startup table lists the protections that are active).",
    )
    code_execution_cgroups: bool = Field(
        True,
        description="Give each sandboxed run its own memory and pids cgroup (all its processes and its /tmp and "
        "/workspace together) where the host lets Almanac make one: cgroup v2 delegated, or v1 writable (as root).",
    )
    code_execution_cgroup: Path | None = Field(
        None,
        description="A delegated cgroup v2 folder (its cgroup.subtree_control enables memory and pids, writable by "
        "Almanac) to make the per-run cgroups in. Empty: found from Almanac's own cgroup.",
    )
    workspace_enabled: bool = Field(
        True, description="Offer the workspace file tools (`read_file`, `write_file`, `list_files`)."
    )
    workspace_max_file_mb: float = Field(5.0, gt=0, description="Largest file in a user's workspace (MiB).")
    workspace_max_mb: float = Field(50.0, gt=0, description="Total size of one user's workspace (MiB).")
    sql_tool_database_url: SecretStr | None = Field(
        None,
        description="Database `sql_query` reads (`sqlite:///path.db` or `postgresql://…`; use a read-only role). "
        "Empty: the tool is off.",
    )
    sql_tool_max_rows: int = Field(200, ge=1, le=10_000, description="Most rows `sql_query` returns.")
    sql_tool_timeout_s: float = Field(10.0, gt=0, le=300, description="Time limit of one `sql_query` statement.")
    sql_tool_max_result_mb: float = Field(
        4.0,
        gt=0,
        le=256,
        description="Most one `sql_query` may return, in MB (10^6 bytes); on SQLite one value may be at most a "
        "quarter of it. Larger results are refused (the model is told to select less).",
    )
    web_search_api_key: SecretStr | None = Field(
        None, description="Brave Search API key (`X-Subscription-Token`). Empty: `web_search` is off."
    )
    web_search_url: str = Field(
        "https://api.search.brave.com/res/v1/web/search", description="The Brave Search web search endpoint."
    )
    web_search_results: int = Field(5, ge=1, le=20, description="Results one `web_search` call returns.")

    # --- payments and admin ----------------------------------------------------------------------------
    stripe_secret_key: SecretStr | None = Field(
        None,
        description="Stripe secret key (`sk_…`). Empty: payments are off (no checkout, no portal, no webhook); "
        "plans and packs then come only from administrators.",
    )
    stripe_webhook_secret: SecretStr | None = Field(
        None, description="The signing secret of the Stripe webhook endpoint (`whsec_…`); needed with payments."
    )
    stripe_price_pro: str = Field("", description="Stripe Price ID of Pro (a monthly recurring price; `price_…`).")
    stripe_price_pack: str = Field("", description="Stripe Price ID of a credit pack (a one-time price; `price_…`).")
    stripe_api_base: str | None = Field(
        None, description="Stripe API base URL override (tests and staging point the SDK at a local fake)."
    )

    # --- limits and operations ---------------------------------------------------------------------
    redis_url: str = Field(
        "",
        description="Redis that every app process shares for the rate limits and stream caps (`redis://host:6379/0`, "
        "`rediss://…`). Empty: in-process limits (each process counts on its own).",
    )
    rate_limit_free_per_min: int = Field(
        30, ge=0, description="Requests per minute a Free user may send to the chat routes and /v1/messages. 0: none."
    )
    rate_limit_pro_per_min: int = Field(
        120, ge=0, description="Requests per minute a Pro user may send to the chat routes and /v1/messages. 0: none."
    )
    max_concurrent_streams: int = Field(
        4,
        ge=0,
        description="Streams (SSE chat answers, streaming /v1/messages requests) one user may have open at once. "
        "0: no cap.",
    )
    stream_slot_ttl_s: float = Field(
        60.0,
        ge=1,
        le=3600,
        description="How long a stream's slot outlives a process that died holding it: live streams renew theirs "
        "every third of this.",
    )
    metrics_token: SecretStr | None = Field(
        None, description="Bearer token GET /metrics requires (Prometheus format). Empty: /metrics is off (404)."
    )
    log_format: Literal["text", "json"] = Field(
        "text", description="`text` (one line per record) or `json` (one JSON object per line), with request IDs."
    )
    shutdown_grace_s: float = Field(
        20.0,
        ge=0,
        le=3600,
        description="On SIGTERM: how long running answers and streams may finish before they are stopped (what "
        "completed is stored and billed; the stream ends with an `error` event).",
    )

    # --- collaboration and discussions ---------------------------------------------------------------
    collaboration_helper_model: str = Field(
        "",
        description="The helper of the `collaborate` strategy and of discussion participants without a pair: a "
        "configured model name (GET /api/models), `anthropic:<model>`, `openai:<model>` or `offline`; a bare name "
        "not configured elsewhere runs on the chat provider. Empty: each model is its own helper.",
    )
    collaboration_threshold: float = Field(
        0.5, ge=0, le=1, description="An answer whose quality score (0-1) is below this counts as stuck."
    )
    collaboration_max_retries: int = Field(
        1, ge=0, le=5, description="How often one answer may ask the helper and try again (0: never)."
    )
    collaboration_config: Path | None = Field(
        None,
        description="Optional YAML or JSON file with `collaboration: {enabled, pairs: [{primary, secondary, threshold, "
        "max_retries}]}` (also under `discussion:`; may be the TOOLS_CONFIG file).",
    )
    discussion_max_turns: int = Field(20, ge=1, le=200, description="Most turns one discussion may ask for.")
    discussion_max_participants: int = Field(4, ge=2, le=20, description="Most participants one discussion may have.")

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
        description="Models on an OpenAI-compatible server (chat and the gateway): `true` native tool calling, `false` "
        "the text tool protocol (manifest in the prompt, calls parsed from the reply), `auto` native until the server "
        "refuses tools.",
    )
    openai_system_messages: Literal["auto", "keep", "fold"] = Field(
        "auto",
        description="System messages after the first message (Claude Code 2.1 sends them) to an OpenAI-compatible "
        "gateway upstream: `keep` them where they are, `fold` them into the neighbouring user turn (for chat templates "
        "that refuse them), or `auto`: keep until the server refuses them, then fold for that model.",
    )
    big_model_max_tokens: int = Field(
        0,
        ge=0,
        description="Most output tokens a gateway request for the BIG_MODEL tier is given (the client's max_tokens "
        "stands below it). 0: the model's known limit (llm/tokens.py), else the client's value.",
    )
    middle_model_max_tokens: int = Field(0, ge=0, description="As BIG_MODEL_MAX_TOKENS, for the MIDDLE_MODEL tier.")
    small_model_max_tokens: int = Field(0, ge=0, description="As BIG_MODEL_MAX_TOKENS, for the SMALL_MODEL tier.")
    text_tool_format: Literal["concise", "verbose", "qwen_xml"] = Field(
        "concise", description="The manifest the text tool protocol uses: `concise`, `verbose` or `qwen_xml`."
    )
    gateway_credits_per_1k_tokens: float = Field(
        0.0, ge=0, description="Credits per 1,000 gateway tokens (planner's included). 0: record usage only."
    )
    gateway_key_cache_s: float = Field(
        5.0, ge=0, description="How long the gateway trusts an API key lookup (a revoked key works this long)."
    )
    gateway_stream_hold_s: float = Field(
        20.0,
        ge=0,
        description="How long a boosted gateway stream holds its response head waiting for the first output: a refusal "
        "before then gets its HTTP status (429, 400…); after it the stream starts and is kept alive with pings, and a "
        "refusal becomes an `error` event.",
    )
    gateway_max_body_mb: float = Field(
        16.0,
        gt=0,
        le=256,
        description="Largest /v1/messages (and count_tokens) request body, in MB (10^6 bytes); larger gets 413 "
        "before it is read. Read only after the API key is accepted.",
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
    boost_plan_reuse: bool = Field(
        True,
        description="Gateway: a continuation of a user turn (its last message holds tool results) is executed with the "
        "turn's plan instead of asking the planner again, unless a tool failed or the executor is stuck or repeating "
        "itself. Kept per process.",
    )
    boost_stream_summary: bool = Field(
        True,
        description="A planner's SUMMARY streams to the client as the planner writes it (gateway and chat); false: it "
        "is sent in one piece once the planner's reply is complete.",
    )
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

    @field_validator("stripe_secret_key", "stripe_webhook_secret")
    @classmethod
    def _blank_stripe_secret_is_none(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None or not value.get_secret_value().strip():
            return None
        return SecretStr(value.get_secret_value().strip())

    @model_validator(mode="after")
    def _check_payments(self) -> Settings:
        if self.stripe_secret_key is None:
            return self
        missing = [
            name
            for name, value in (
                ("STRIPE_WEBHOOK_SECRET", self.stripe_webhook_secret),
                ("STRIPE_PRICE_PRO", self.stripe_price_pro),
                ("STRIPE_PRICE_PACK", self.stripe_price_pack),
            )
            if not value
        ]
        if missing:
            raise ValueError(f"STRIPE_SECRET_KEY (payments) also needs {', '.join(missing)}")
        if self.stripe_api_base and not self.stripe_api_base.startswith(("http://", "https://")):
            raise ValueError("STRIPE_API_BASE must start with http:// or https://")
        return self

    @property
    def payments_enabled(self) -> bool:
        """Payments run when STRIPE_SECRET_KEY is set (the validator checks the rest)."""
        return self.stripe_secret_key is not None

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

    @field_validator("redis_url")
    @classmethod
    def _check_redis_url(cls, value: str) -> str:
        value = value.strip()
        if value and not value.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must start with redis://, rediss:// or unix://")
        return value

    @field_validator("metrics_token")
    @classmethod
    def _blank_metrics_token_is_none(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None or not value.get_secret_value().strip():
            return None
        if len(value.get_secret_value().strip()) < 16:
            raise ValueError("must be at least 16 characters")
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
        """DOCS_PATHS as paths; empty means `<DATA_DIR>/docs` (not this checkout's own docs/ folder)."""
        paths = [Path(part.strip()) for part in self.docs_paths.split(",") if part.strip()]
        return paths or [self.data_dir / "docs"]

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
