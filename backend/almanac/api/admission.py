"""Admission: who is calling is decided from the headers, before anything of a body is read.

FastAPI reads and parses a route's body before it runs the route's dependencies, so without this
an unauthenticated client could make the server read (and hold) a body up to the size limit — or
learn, from a 422 about its JSON, that an administrators' route exists. This middleware, in front
of the routes, settles two things first, for every route there is or will be (it reads the
routes' own dependencies, never a list of paths):

- A route that takes a body and needs a signed-in caller (`CurrentUser`): the caller is
  authenticated from the headers (`deps.authenticate`); a refusal is the same 401 the route would
  give, and the body is never read. The identity is handed on, so the route does not look it up
  again.
- A path some administrators' route answers (`AdminUser`), with any method: anyone but an
  administrator gets exactly what a path that does not exist gets — 404 `not_found`, the same body
  — never a 405 with `Allow`, a 422 about the body, or anything else that tells the path exists.
  (Without credentials, 401 as everywhere.)
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from fastapi.dependencies.models import Dependant
from starlette.requests import Request
from starlette.routing import get_route_path
from starlette.types import ASGIApp, Receive, Scope, Send

from almanac.api.deps import IDENTITY_STATE, authenticate, get_admin_user, get_current_user
from almanac.api.errors import ApiError, api_error_response, error_body, error_json


@dataclass(frozen=True)
class _Needs:
    user: bool  # the route depends on a signed-in caller
    admin: bool  # …who is an administrator
    body: bool  # FastAPI reads a body before the dependencies run


def _calls(dependant: Dependant) -> Iterator[Any]:
    for dependency in dependant.dependencies:
        yield dependency.call
        yield from _calls(dependency)


_NOTHING = _Needs(False, False, False)


def route_needs(route: Any) -> _Needs:
    """What a route asks of its caller, read from its dependencies."""
    dependant = getattr(route, "dependant", None)
    if not isinstance(dependant, Dependant):
        return _NOTHING
    calls = set(_calls(dependant))
    admin = get_admin_user in calls
    return _Needs(admin or get_current_user in calls, admin, getattr(route, "body_field", None) is not None)


def flat_routes(routes: Iterable[Any]) -> Iterator[Any]:
    """Every route as the router tries them, in order, with its router's prefix and dependencies
    applied (FastAPI keeps an included router as one entry whose `effective_candidates()` are its
    routes so combined)."""
    for route in routes:
        candidates = getattr(route, "effective_candidates", None)
        if callable(candidates):
            yield from flat_routes(candidates())
        else:
            yield route


def not_found() -> Any:
    """The answer to a path no route serves (the same as the router's own 404)."""
    return error_json(404, error_body("not_found", "Not Found"))


@dataclass(frozen=True)
class _Entry:
    regex: re.Pattern[str]
    methods: frozenset[str] | None  # None: any method
    needs: _Needs


def route_table(routes: Iterable[Any]) -> list[_Entry]:
    """The routes in the order the router tries them: path pattern, methods, what each needs."""
    table = []
    for route in flat_routes(routes):
        regex = getattr(route, "path_regex", None)
        if isinstance(regex, re.Pattern):
            methods = getattr(route, "methods", None)
            table.append(_Entry(regex, frozenset(methods) if methods else None, route_needs(route)))
    return table


class Admission:
    """ASGI middleware (see the module docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._table: list[_Entry] = []
        self._table_of: tuple[int, int] | None = None  # (router, number of routes) the table was read from

    def _routes(self, scope: Scope) -> list[_Entry]:
        router = scope["app"].router
        key = (id(router), len(router.routes))
        if key != self._table_of:  # built once; again only if routes are added
            self._table, self._table_of = route_table(router.routes), key
        return self._table

    def _decide(self, scope: Scope) -> tuple[bool, bool]:
        """(authenticate first, administrators only) for this request."""
        path = get_route_path(scope)
        method = scope["method"]
        first_full: _Needs | None = None
        admin_path = False
        for entry in self._routes(scope):
            if entry.regex.match(path) is None:
                continue
            admin_path = admin_path or entry.needs.admin
            if first_full is None and (entry.methods is None or method in entry.methods):
                first_full = entry.needs
        if admin_path:
            return True, True
        if first_full is None:
            return False, False
        return first_full.user and first_full.body, False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or "app" not in scope:
            await self.app(scope, receive, send)
            return
        first, admins_only = self._decide(scope)
        if first:
            request = Request(scope)
            try:
                identity = await authenticate(request, scope["app"].state.services)
            except ApiError as exc:
                await api_error_response(exc)(scope, receive, send)
                return
            if admins_only and not identity.user.is_admin:
                await not_found()(scope, receive, send)
                return
            scope.setdefault("state", {})[IDENTITY_STATE] = identity
        await self.app(scope, receive, send)
