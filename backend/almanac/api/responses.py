"""The error responses each route declares in OpenAPI (`responses=`), so the schema lists every
status code an operation can answer and the shape of each body. Codes any request can get from
the middleware (400 unknown host, 413 body too large, 431 headers too large, 500) are declared on
every operation; the rest per route."""

from __future__ import annotations

from typing import Any

from almanac.api.schemas import ErrorPublic, InsufficientCreditsPublic, ValidationErrorPublic

Responses = dict[int | str, dict[str, Any]]

_DESCRIPTIONS: dict[int, str] = {
    400: "the request names a host this server does not serve (see ALLOWED_HOSTS)",
    401: "missing, invalid or revoked API key (or an ended session)",
    402: "not enough credits; nothing was done or charged",
    403: "a cookie-authenticated request that changes state, sent from another site's page",
    404: "not found (or not yours: indistinguishable)",
    409: "the conversation is answering another message",
    413: "request body over the size limit",
    422: "the request does not match the schema; error.fields names each field at fault",
    429: "a limit was reached: too many requests per minute for your plan, or too many open streams "
    "(`rate_limited`, with `limit`, `allowed` and `retry_after`; `Retry-After` says when to retry); nothing was "
    "started or charged",
    431: "request headers too large",
    500: "an internal error (logged, without the request's contents)",
    502: "the model failed before producing anything (the query was refunded)",
    503: "the database does not answer",
}
COMMON = (400, 413, 431, 500)


def errors(*codes: int, **descriptions: str) -> Responses:
    """OpenAPI `responses` for these error codes plus the common ones; `descriptions` (keyed
    `e404=…`) replace the default wording of a code."""
    declared: Responses = {}
    for code in sorted({*codes, *COMMON}):
        model: type[Any] = ErrorPublic
        if code == 422:
            model = ValidationErrorPublic
        elif code == 402:
            model = InsufficientCreditsPublic
        declared[code] = {"model": model, "description": descriptions.get(f"e{code}", _DESCRIPTIONS[code])}
    return declared
