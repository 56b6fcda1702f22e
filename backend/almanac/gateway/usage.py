"""Recording gateway usage off the request path: rows queue in memory and a background task writes
them in batches (one INSERT per batch), so a request never waits for the database.

With `credits_per_1k_tokens` > 0 each flush also bills: per user, the batch's tokens (planner and
executor alike) times the rate, rounded up once per user and flush, debited through the ledger
(`CreditService`) like chat. What a balance cannot cover is debited down to zero — a caller is
never charged more than they had; the gateway refuses new requests (402) while a balance is empty.
On shutdown the queue is flushed.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace

from almanac.billing.ledger import ChargeContext, CreditService
from almanac.storage import gateway as store
from almanac.storage.db import Database
from almanac.storage.gateway import GatewayUsageRecord

log = logging.getLogger(__name__)


class UsageRecorder:
    def __init__(
        self,
        database: Database,
        *,
        credits: CreditService | None = None,
        credits_per_1k_tokens: float = 0.0,
        flush_interval_s: float = 0.5,
        batch_size: int = 500,
    ) -> None:
        self._db = database
        self._credits = credits
        self._rate = credits_per_1k_tokens
        self._interval = flush_interval_s
        self._batch = batch_size
        self._pending: list[GatewayUsageRecord] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._writing = asyncio.Lock()  # one flush at a time (shutdown waits for the one running)
        self.written = 0
        self.observers: list[Callable[[GatewayUsageRecord], None]] = []  # each row as it is queued (metrics)

    @property
    def billing(self) -> bool:
        return self._rate > 0 and self._credits is not None

    def record(self, row: GatewayUsageRecord) -> None:
        """Queue a row (never blocks, never raises)."""
        for observe in self.observers:
            observe(row)
        self._pending.append(row)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())
        if len(self._pending) >= self._batch:
            self._wake.set()

    async def _run(self) -> None:
        while self._pending:
            try:
                await asyncio.wait_for(self._wake.wait(), self._interval)
            except TimeoutError:
                pass
            self._wake.clear()
            await self.flush()

    async def flush(self) -> None:
        """Write (and bill) everything queued so far."""
        async with self._writing:
            await self._write_pending()

    async def _write_pending(self) -> None:
        while self._pending:
            batch, self._pending = self._pending[: self._batch], self._pending[self._batch :]
            if self.billing:
                try:
                    batch = await self._bill(batch)
                except Exception:  # boundary: billing failed (logged); the rows are still recorded
                    log.exception("could not bill %d gateway usage rows", len(batch))
            await self._write(batch)

    async def _write(self, batch: list[GatewayUsageRecord]) -> None:
        """One INSERT for the batch; if it fails, each row on its own, so one bad row (its user
        deleted meanwhile, a value the database refuses) costs only itself, never the others'."""
        try:
            async with self._db.session() as session:
                await store.add_usage(session, rows=batch)
            self.written += len(batch)
            return
        except Exception as exc:  # boundary: isolate the failing row below; the types are logged, not values
            if len(batch) == 1:
                log.error("could not record a gateway usage row (%s)", type(exc).__name__)
                return
            log.warning(
                "could not record %d gateway usage rows at once (%s); one at a time", len(batch), type(exc).__name__
            )
        for row in batch:
            await self._write([row])

    async def _bill(self, batch: list[GatewayUsageRecord]) -> list[GatewayUsageRecord]:
        assert self._credits is not None
        tokens: dict[str, int] = defaultdict(int)
        for row in batch:
            tokens[row.user_id] += row_tokens(row)
        charged: dict[str, int] = {}
        for user_id, count in tokens.items():
            amount = math.ceil(count * self._rate / 1000)
            if amount <= 0:
                continue
            context = ChargeContext(f"gateway: {count:,} tokens")
            charge = await self._credits.debit(user_id=user_id, amount=amount, context=context)
            if charge is None:  # short: take what is left, never more
                left = await self._credits.balance(user_id=user_id)
                charge = await self._credits.debit(user_id=user_id, amount=left, context=context) if left > 0 else None
            charged[user_id] = charge.amount if charge else 0
        billed = []
        for row in batch:
            share = charged.get(row.user_id, 0)
            billed.append(replace(row, credits=share) if share else row)
            charged[row.user_id] = 0  # the batch's charge is noted on the user's first row of it
        return billed

    async def close(self) -> None:
        """Write everything queued (the background write in progress completes first) and stop."""
        self._wake.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
        await self.flush()


def row_tokens(row: GatewayUsageRecord) -> int:
    return row.input_tokens + row.output_tokens + row.planner_input_tokens + row.planner_output_tokens
