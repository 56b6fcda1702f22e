"""GET /metrics: this process's metrics in the Prometheus text format, for the operator's scraper.

Never open by default: without METRICS_TOKEN the route answers 404 as if it did not exist; with
it, a request must send `Authorization: Bearer <METRICS_TOKEN>` (compared in constant time), or it
gets 401. Not part of the public API schema.
"""

from __future__ import annotations

import hmac

from fastapi import APIRouter, Request
from fastapi.responses import Response

from almanac.api.deps import ServicesDep
from almanac.api.errors import ApiError
from almanac.ops.metrics import CONTENT_TYPE

router = APIRouter(tags=["operations"])


def _bearer(request: Request) -> str:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


@router.get("/metrics", include_in_schema=False)
async def metrics(request: Request, services: ServicesDep) -> Response:
    """Every metric of this process (see `almanac/ops/metrics.py`)."""
    ops = services.ops
    if ops is None or not ops.metrics_token:
        raise ApiError(404, "not_found", "Not Found")
    if not hmac.compare_digest(_bearer(request).encode(), ops.metrics_token.encode()):
        raise ApiError(401, "unauthorized", "GET /metrics needs 'Authorization: Bearer <METRICS_TOKEN>'")
    return Response(ops.metrics.exposition(), media_type=CONTENT_TYPE)
