"""Errors of the Anthropic-compatible gateway, in Anthropic's shape.

Every failure a caller sees is `{"type": "error", "error": {"type", "message"}}` with the status the
official SDKs map to the right exception: 400 invalid_request_error, 401 authentication_error,
402 billing_error, 403 permission_error, 404 not_found_error, 413 request_too_large, 429
rate_limit_error, 500 api_error, 504 timeout_error, 529 overloaded_error. Mid-stream failures
are the same body sent as an SSE `error` event.

    GatewayError            a refusal or failure with its status and Anthropic error type
    UpstreamError           the upstream model server failed (mapped from its status here)
"""

from __future__ import annotations

import math
from email.utils import parsedate_to_datetime
from typing import Any

import orjson

STATUS_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    502: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


class GatewayError(Exception):
    """A response the caller gets instead of a message: HTTP status, Anthropic error type, text."""

    def __init__(self, status: int, message: str, *, error_type: str | None = None, retry_after: str | None = None):
        super().__init__(message)
        self.status = status
        self.error_type = error_type or STATUS_TYPES.get(status, "api_error")
        self.message = message
        self.retry_after = retry_after

    def body(self) -> bytes:
        """The JSON error body."""
        return error_body(self.error_type, self.message)

    def headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json"}
        if self.retry_after:
            headers["retry-after"] = self.retry_after
        # The SDKs retry 409/429/5xx; a refusal that a retry cannot fix says so.
        if self.status in (400, 401, 402, 403, 404, 413):
            headers["x-should-retry"] = "false"
        return headers


class UpstreamError(GatewayError):
    """The model server behind the gateway failed. `upstream_status`, `detail` (its own message)
    and `fields` (its error object) say how, so a caller can adapt and retry."""

    upstream_status: int = 0
    detail: str = ""
    fields: dict[str, Any] | None = None


def error_body(error_type: str, message: str) -> bytes:
    return orjson.dumps({"type": "error", "error": {"type": error_type, "message": message}})


def retry_after_header(value: str | None) -> str | None:
    """An upstream's `Retry-After` as we pass it on: seconds rounded up to whole seconds (some servers
    send `35.4`, which HTTP does not allow, and rounding down would bring the client back too early),
    an HTTP date unchanged, anything else dropped."""
    text = (value or "").strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        return text
    return str(max(0, math.ceil(seconds))) if math.isfinite(seconds) else None


def upstream_error(
    status: int, detail: str, *, retry_after: str | None = None, fields: dict[str, Any] | None = None
) -> UpstreamError:
    """Our error for an upstream HTTP failure (see `_mapped`), carrying the upstream's own details."""
    error = _mapped(status, detail[:500] or "no details", retry_after_header(retry_after))
    error.upstream_status, error.detail, error.fields = status, detail, fields
    return error


def _mapped(status: int, detail: str, retry_after: str | None) -> UpstreamError:
    """Anthropic's status and error type for an upstream status: rejected upstream credentials
    are the operator's problem, not the caller's (500, not 401); an overloaded or unavailable
    server (503, 529) is `overloaded_error`, a timeout (408, 504) `timeout_error`, as Anthropic's
    API answers them."""
    if status in (401, 403):
        return UpstreamError(500, f"the upstream model server rejected the gateway's credentials ({detail})")
    if status == 404:
        return UpstreamError(404, f"the upstream model server does not know this model ({detail})")
    if status == 429:
        return UpstreamError(429, f"the upstream model server is rate-limiting ({detail})", retry_after=retry_after)
    if status in (408, 504):
        return UpstreamError(504, f"the upstream model server timed out ({detail})")
    if status in (503, 529):
        return UpstreamError(529, f"the upstream model server is overloaded ({detail})", retry_after=retry_after)
    if 400 <= status < 500:
        return UpstreamError(400, f"the upstream model server rejected the request ({status}: {detail})")
    return UpstreamError(500, f"the upstream model server failed ({status}: {detail})")
