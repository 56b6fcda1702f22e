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
