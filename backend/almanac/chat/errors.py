"""Why a chat request was refused before any work began (the API maps each to a 4xx)."""

from __future__ import annotations


class ChatRefused(Exception):
    """Base class: nothing was done and nothing was charged."""

    code = "refused"


class EmptyMessage(ChatRefused):
    code = "empty_message"

    def __init__(self) -> None:
        super().__init__("message must contain some text")


class MessageTooLarge(ChatRefused):
    code = "message_too_large"

    def __init__(self, *, size: int, limit: int) -> None:
        super().__init__(f"message is {size:,} characters; the limit is {limit:,}")
        self.size = size
        self.limit = limit


class ConversationNotFound(ChatRefused):
    code = "conversation_not_found"

    def __init__(self, conversation_id: str) -> None:
        super().__init__(f"no conversation {conversation_id}")


class ConversationBusy(ChatRefused):
    code = "conversation_busy"

    def __init__(self, conversation_id: str) -> None:
        super().__init__(f"conversation {conversation_id} is answering another message; retry when it has finished")


class InsufficientCredits(ChatRefused):
    code = "insufficient_credits"

    def __init__(self, *, balance: int, needed: int, plan: str, how_to_get_more: str) -> None:
        super().__init__(f"this query needs {needed} credits and the balance is {balance}")
        self.balance = balance
        self.needed = needed
        self.plan = plan
        self.how_to_get_more = how_to_get_more


class ContextTooLarge(MessageTooLarge):
    """The message (with the system prompt and tools) does not fit the model's context window.
    `size` and `limit` are in tokens."""

    code = "context_too_large"

    def __init__(self, *, needed: int, available: int, model: str) -> None:
        ChatRefused.__init__(
            self,
            f"this message needs about {needed:,} tokens but {model} has room for {available:,} "
            "(its context window, less the system prompt, the tools and room for the answer); shorten it",
        )
        self.size = needed
        self.limit = available


class StrategyUnavailable(ChatRefused):
    code = "strategy_unavailable"

    def __init__(self, strategy: str, why: str) -> None:
        super().__init__(f"the {strategy!r} strategy is not available here: {why}")
        self.strategy = strategy
