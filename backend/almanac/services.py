"""`Services`: everything a request handler may use, built once per application by the
composition root (`almanac.main.build_services`). Its own module, below both `main` and `api`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from almanac.admin.service import AdminService
from almanac.auth.local import LocalSignIn
from almanac.auth.service import AccountService
from almanac.billing.ledger import CreditService
from almanac.billing.service import BillingService
from almanac.chat.service import ChatService
from almanac.chat.summaries import SummaryJobs
from almanac.config import Settings
from almanac.discussions.service import DiscussionService
from almanac.gateway.service import GatewayService
from almanac.integrations import TokenVault
from almanac.llm.base import Model
from almanac.mcp_client import McpClient
from almanac.memory.conversations import ConversationService
from almanac.memory.history import HistoryStore
from almanac.memory.summarise import Summariser
from almanac.ops.operations import Operations
from almanac.rag.documentation import Documentation
from almanac.storage.db import Database
from almanac.tools.assembly import BuiltinTools
from almanac.tools.registry import ToolRegistry
from almanac.usage.service import UsageService


@dataclass
class Services:
    """Everything a request handler may use, built once per application."""

    settings: Settings
    database: Database
    accounts: AccountService
    credits: CreditService
    history: HistoryStore
    registry: ToolRegistry
    model: Model
    summariser: Summariser
    summaries: SummaryJobs
    chat: ChatService
    conversations: ConversationService
    documentation: Documentation
    local_sign_in: LocalSignIn | None = None
    web_ui: Path | None = None
    mcp: McpClient | None = None
    gateway: GatewayService | None = None  # the Anthropic-compatible /v1/messages gateway
    integrations: TokenVault | None = None  # users' own tokens for outside services (GitHub)
    tools: BuiltinTools | None = None  # code execution, workspace files, SQL, web search
    billing: BillingService | None = None  # payments (Stripe, when configured), plans from Stripe's events
    admin: AdminService | None = None  # administrators' actions, with the audit log
    usage: UsageService | None = None  # usage reports
    ops: Operations | None = None  # rate limits, metrics, graceful shutdown
    discussions: DiscussionService | None = None  # discussions between models (and the model catalog)
