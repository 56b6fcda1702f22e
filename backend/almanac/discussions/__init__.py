"""Discussions between models: participants (any configured model, `offline` included) take turns
toward a goal, with tools and collaboration, streamed as events, stored like chats and billed per
turn and per tool call (`service.py`)."""
