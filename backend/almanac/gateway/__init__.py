"""The Anthropic-compatible gateway (`/v1/messages`): Anthropic wire format ⇄ upstream models,
tier mapping, streaming, boost mode, usage recording. `build_gateway` assembles it."""
