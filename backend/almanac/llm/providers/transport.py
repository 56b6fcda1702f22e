"""Transport failures that vendor SDKs let escape mid-stream (read timeouts, dropped connections).

SDK releases differ in their HTTP library (`httpx` or its fork `httpx2`); both are covered.
"""

from __future__ import annotations

import importlib

_timeouts: list[type[BaseException]] = []
_failures: list[type[BaseException]] = []
for _name in ("httpx", "httpx2"):
    try:
        _module = importlib.import_module(_name)
    except ImportError:  # pragma: no cover - depends on the installed SDKs
        continue
    _timeouts.append(_module.TimeoutException)
    _failures.append(_module.TransportError)

TIMEOUTS: tuple[type[BaseException], ...] = tuple(_timeouts)
TRANSPORT_ERRORS: tuple[type[BaseException], ...] = tuple(_failures)
