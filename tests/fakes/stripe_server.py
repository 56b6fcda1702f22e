"""A fake of the Stripe API endpoints Almanac calls, speaking Stripe's wire format, plus what Stripe
does when a customer pays: the events it would send, signed as Stripe signs them.

The API side (`app`, served with `tests.fakes.server.ServerThread`): form-encoded requests with
bracketed nested keys (`line_items[0][price]`), `Authorization: Bearer <secret key>`, JSON objects
back, Stripe's error shape (`{"error": {"type", "message", "param"}}`) with its statuses, and
`Idempotency-Key` replays. It validates like Stripe: known prices only, a recurring price only in
subscription mode and a one-time price only in payment mode, `success_url` required, customers
must exist. `failures` queues faults served before normal answers (a status, e.g. 500 or 402).

The event side: `complete_checkout`, `cancel_at_period_end`, `end_subscription`, `fail_renewal`
change the fake's state and return the events Stripe would send about it; `signed(event, secret)`
gives the body and `Stripe-Signature` header, computed here independently of the SDK
(`t=<unix time>,v1=<hex HMAC-SHA256 of "t.body">`).
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

SECRET_KEY = "sk_test_almanac_fake_0123456789"
WEBHOOK_SECRET = "whsec_test_almanac_fake_secret"
PRICE_PRO = "price_test_pro_monthly"
PRICE_PACK = "price_test_pack_500"
CHECKOUT_HOST = "https://checkout.stripe.com"
PORTAL_HOST = "https://billing.stripe.com"
_ids = itertools.count(1)


def _id(prefix: str) -> str:
    return f"{prefix}_test_{next(_ids):06d}{int(time.time() * 1000) % 100000:05d}"


def parse_form(body: str) -> dict[str, Any]:
    """Stripe's form encoding → nested dicts and lists (`a[b][0][c]=v`)."""
    root: dict[str, Any] = {}
    for key, value in parse_qsl(body, keep_blank_values=True):
        parts = key.replace("]", "").split("[")
        node: Any = root
        for part, following in itertools.pairwise(parts):
            child: Any = [] if following.isdigit() else {}
            if isinstance(node, list):
                index = int(part)
                while len(node) <= index:
                    node.append(None)
                node[index] = node[index] if node[index] is not None else child
                node = node[index]
            else:
                node = node.setdefault(part, child)
        last = parts[-1]
        if isinstance(node, list):
            index = int(last)
            while len(node) <= index:
                node.append(None)
            node[index] = value
        else:
            node[last] = value
    return root


def _error(status: int, message: str, *, param: str | None = None, kind: str = "invalid_request_error") -> JSONResponse:
    error: dict[str, Any] = {"type": kind, "message": message}
    if param:
        error["param"] = param
    return JSONResponse({"error": error}, status_code=status, headers={"Request-Id": _id("req")})


@dataclass
class FakeStripe:
    secret_key: str = SECRET_KEY
    prices: dict[str, str] = field(default_factory=lambda: {PRICE_PRO: "recurring", PRICE_PACK: "one_time"})
    customers: dict[str, dict[str, Any]] = field(default_factory=dict)
    sessions: dict[str, dict[str, Any]] = field(default_factory=dict)
    subscriptions: dict[str, dict[str, Any]] = field(default_factory=dict)
    portal_sessions: list[dict[str, Any]] = field(default_factory=list)
    requests: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    failures: deque[int] = field(default_factory=deque)
    _replays: dict[str, dict[str, Any]] = field(default_factory=dict)

    # --- the API -------------------------------------------------------------------------------

    @property
    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/customers", self._customers, methods=["POST"]),
                Route("/v1/checkout/sessions", self._checkout, methods=["POST"]),
                Route("/v1/billing_portal/sessions", self._portal, methods=["POST"]),
            ]
        )

    async def _read(self, request: Request) -> tuple[dict[str, Any], JSONResponse | None]:
        params = parse_form((await request.body()).decode())
        self.requests.append((request.method, request.url.path, params))
        if request.headers.get("authorization") != f"Bearer {self.secret_key}":
            return params, _error(401, "Invalid API Key provided", kind="invalid_request_error")
        if request.headers.get("content-type", "").split(";")[0] != "application/x-www-form-urlencoded":
            return params, _error(400, "Stripe takes form-encoded bodies")
        if self.failures:
            status = self.failures.popleft()
            return params, _error(status, "a fault the test asked for", kind="api_error")
        return params, None

    async def _customers(self, request: Request) -> JSONResponse:
        params, refused = await self._read(request)
        if refused is not None:
            return refused
        key = request.headers.get("idempotency-key")
        if key and key in self._replays:
            return JSONResponse(self._replays[key])
        customer = {
            "id": _id("cus"),
            "object": "customer",
            "email": params.get("email"),
            "metadata": params.get("metadata", {}),
            "created": int(time.time()),
        }
        self.customers[customer["id"]] = customer
        if key:
            self._replays[key] = customer
        return JSONResponse(customer)

    async def _checkout(self, request: Request) -> JSONResponse:
        params, refused = await self._read(request)
        if refused is not None:
            return refused
        mode = params.get("mode")
        if mode not in ("payment", "subscription"):
            return _error(400, "Invalid mode", param="mode")
        if not params.get("success_url"):
            return _error(400, "Missing required param: success_url.", param="success_url")
        items = params.get("line_items") or []
        if not items:
            return _error(400, "line_items is required", param="line_items")
        for index, item in enumerate(items):
            kind = self.prices.get(item.get("price", ""))
            if kind is None:
                return _error(400, f"No such price: '{item.get('price')}'", param=f"line_items[{index}][price]")
            if (kind == "recurring") != (mode == "subscription"):
                return _error(400, "The price type does not fit the mode", param=f"line_items[{index}][price]")
        customer = params.get("customer")
        if customer and customer not in self.customers:
            return _error(400, f"No such customer: '{customer}'", param="customer")
        session_id = _id("cs")
        session = {
            "id": session_id,
            "object": "checkout.session",
            "mode": mode,
            "status": "open",
            "payment_status": "unpaid",
            "url": f"{CHECKOUT_HOST}/c/pay/{session_id}",
            "customer": customer,
            "client_reference_id": params.get("client_reference_id"),
            "metadata": params.get("metadata", {}),
            "success_url": params["success_url"],
            "cancel_url": params.get("cancel_url"),
            "subscription": None,
            "line_items": items,
            "_subscription_data": params.get("subscription_data", {}),
        }
        self.sessions[session_id] = session
        return JSONResponse({k: v for k, v in session.items() if not k.startswith("_")})

    async def _portal(self, request: Request) -> JSONResponse:
        params, refused = await self._read(request)
        if refused is not None:
            return refused
        customer = params.get("customer")
        if not customer:
            return _error(400, "Missing required param: customer.", param="customer")
        if customer not in self.customers:
            return _error(400, f"No such customer: '{customer}'", param="customer")
        portal_id = _id("bps")
        portal = {
            "id": portal_id,
            "object": "billing_portal.session",
            "customer": customer,
            "return_url": params.get("return_url"),
            "url": f"{PORTAL_HOST}/p/session/{portal_id}",
        }
        self.portal_sessions.append(portal)
        return JSONResponse(portal)

    # --- what Stripe sends ---------------------------------------------------------------------

    def complete_checkout(self, session_id: str, *, paid: bool = True, now: int | None = None) -> list[dict[str, Any]]:
        """The customer paid: the events Stripe sends (a subscription's first, then the session's)."""
        now = now or int(time.time())
        session = self.sessions[session_id]
        session["status"] = "complete"
        session["payment_status"] = "paid" if paid else "unpaid"
        events = []
        if session["mode"] == "subscription":
            subscription = self._new_subscription(session, now)
            session["subscription"] = subscription["id"]
            events.append(event("customer.subscription.created", subscription, created=now))
        public = {k: v for k, v in session.items() if not k.startswith("_") and k != "line_items"}
        events.append(event("checkout.session.completed", public, created=now))
        return events

    def _new_subscription(self, session: dict[str, Any], now: int) -> dict[str, Any]:
        end = now + 30 * 86400
        subscription = {
            "id": _id("sub"),
            "object": "subscription",
            "customer": session["customer"],
            "status": "active",
            "cancel_at_period_end": False,
            "metadata": session["_subscription_data"].get("metadata", {}),
            "items": {"object": "list", "data": [{"id": _id("si"), "current_period_end": end}]},
        }
        self.subscriptions[subscription["id"]] = subscription
        return subscription

    def cancel_at_period_end(self, subscription_id: str, *, now: int | None = None) -> dict[str, Any]:
        """The customer cancelled in the portal: Pro until the period ends."""
        subscription = self.subscriptions[subscription_id]
        subscription["cancel_at_period_end"] = True
        return event("customer.subscription.updated", dict(subscription), created=now)

    def end_subscription(self, subscription_id: str, *, now: int | None = None) -> dict[str, Any]:
        """The paid period is over (or the retries failed for good): Stripe deletes the subscription."""
        subscription = self.subscriptions[subscription_id]
        subscription["status"] = "canceled"
        return event("customer.subscription.deleted", dict(subscription), created=now)

    def fail_renewal(self, subscription_id: str, *, now: int | None = None) -> list[dict[str, Any]]:
        """A renewal payment failed: the invoice's event, and the subscription turning past_due."""
        subscription = self.subscriptions[subscription_id]
        subscription["status"] = "past_due"
        invoice = {
            "id": _id("in"),
            "object": "invoice",
            "customer": subscription["customer"],
            "status": "open",
            "parent": {"type": "subscription_details", "subscription_details": {"subscription": subscription_id}},
        }
        return [
            event("invoice.payment_failed", invoice, created=now),
            event("customer.subscription.updated", dict(subscription), created=now),
        ]


def event(kind: str, obj: dict[str, Any], *, created: int | None = None) -> dict[str, Any]:
    """A Stripe event (snapshot payload) about `obj`."""
    return {
        "id": _id("evt"),
        "object": "event",
        "api_version": "2026-10-28.clover",
        "created": created if created is not None else int(time.time()),
        "livemode": False,
        "pending_webhooks": 1,
        "type": kind,
        "data": {"object": json.loads(json.dumps(obj))},
    }


def signature(body: bytes, secret: str = WEBHOOK_SECRET, *, timestamp: int | None = None) -> str:
    """The `Stripe-Signature` header Stripe would send with `body`."""
    stamp = int(time.time()) if timestamp is None else timestamp
    mac = hmac.new(secret.encode(), f"{stamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={stamp},v1={mac}"


def signed(
    event_: dict[str, Any], secret: str = WEBHOOK_SECRET, *, timestamp: int | None = None
) -> tuple[bytes, dict[str, str]]:
    """A webhook delivery: the body and its headers."""
    body = json.dumps(event_).encode()
    return body, {"Stripe-Signature": signature(body, secret, timestamp=timestamp), "Content-Type": "application/json"}
