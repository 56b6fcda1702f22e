"""`retrieve_documentation`: the best passages of a library's documentation for a question."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from almanac.billing.pricing import BillingCategory
from almanac.rag.format import citations, to_markdown
from almanac.rag.pipeline import DocRequest, DocumentationPipeline
from almanac.rag.sources.base import AuthFailed, DocSourceError, SourceUnavailable
from almanac.tools.base import ToolContext, ToolOutput, ToolUnavailable


class DocumentationTool:
    name = "retrieve_documentation"
    description = (
        "Look up a library's or framework's documentation and return the most relevant passages, each with "
        "its title, library and source URL (cite them). Use it for questions about APIs, configuration, "
        "usage and examples. Give the question in `query`; set `library` when you know it (a package name "
        "like 'fastapi', or a Context7 ID like '/tiangolo/fastapi' or '/vercel/next.js@v14.3.0' to pin a "
        "version) and optionally a short `topic`. Costs 10 credits once per question."
    )
    input_schema: Mapping[str, Any] = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to look up, in the user's words.", "maxLength": 10000},
            "library": {"type": "string", "description": "Library name or Context7 ID (optional).", "maxLength": 200},
            "topic": {"type": "string", "description": "A short topic to focus on (optional).", "maxLength": 500},
        },
        "required": ["query"],
        "additionalProperties": False,
    }
    output_schema: Mapping[str, Any] | None = None
    billing = BillingCategory.DOCUMENTATION
    source = "builtin"

    def __init__(self, pipeline: DocumentationPipeline, *, timeout_s: float | None = None) -> None:
        self._pipeline = pipeline
        self.timeout_s = timeout_s

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutput:
        request = DocRequest(
            str(arguments.get("query", "")), arguments.get("library"), arguments.get("topic"), progress=context.report
        )
        try:
            result = await self._pipeline.run(request)
        except (SourceUnavailable, AuthFailed) as exc:  # nothing could be looked up: not charged
            raise ToolUnavailable(str(exc)) from None
        except DocSourceError as exc:
            # Library not found, documentation not finalized, an unclear request: nothing was
            # found, so nothing is charged; the model reads why.
            return ToolOutput(content=str(exc), is_error=True, free=True)
        return ToolOutput(
            content=to_markdown(result),
            data={"citations": citations(result), "library": result.library.id, "source": result.source},
            free=not result.passages,  # documentation is charged only when passages came back
        )
