"""Usage reports: credits per day, per tool, tokens per model and the queries that cost most, for
one user or (for administrators) the whole service, over a range of UTC days."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta

from almanac.storage import usage as store
from almanac.storage.db import Database

MAX_DAYS = 366
DEFAULT_DAYS = 30
TOP_QUERIES = 10


class InvalidRange(ValueError):
    """A day that is not one (`field` names the parameter)."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class DayRange:
    start: date
    end: date  # inclusive

    @property
    def days(self) -> list[date]:
        return [self.start + timedelta(days=n) for n in range((self.end - self.start).days + 1)]


@dataclass(frozen=True)
class UsageReport:
    range: DayRange
    days: list[store.DaySpend]  # every day of the range, zeros included
    items: list[store.ItemSpend]
    models: list[store.ModelTokens]
    top_queries: list[store.QuerySpend]
    top_users: list[store.UserSpend] = field(default_factory=list)  # service-wide reports only

    @property
    def credits(self) -> int:
        return sum(day.daily + day.pack for day in self.days)


def day_range(start: date | None, end: date | None, *, today: date) -> DayRange:
    """The range to report, forgiving by design (a report is only a view): `end` defaults to today
    and `start` to 30 days before `end` (both inclusive); a reversed range is turned round, and one
    longer than MAX_DAYS keeps its last MAX_DAYS days."""
    end = _within(end) if end is not None else None
    start = _within(start) if start is not None else None
    if end is None:
        end = today if start is None else min(today, _shift(start, DEFAULT_DAYS - 1))
    if start is None:
        start = _shift(end, -(DEFAULT_DAYS - 1))
    if start > end:
        start, end = end, start
    if (end - start).days + 1 > MAX_DAYS:
        start = _shift(end, -(MAX_DAYS - 1))
    return DayRange(start, end)


def parse_day(text: str | None, field: str) -> date | None:
    """A YYYY-MM-DD day, or None; `InvalidRange` naming `field` for anything else."""
    if text is None:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise InvalidRange(f"{text[:20]!r} is not a day (YYYY-MM-DD)", field) from None


_LAST = date.max - timedelta(days=1)  # the day after it must exist (the range ends at its midnight)


def _within(day: date) -> date:
    return min(day, _LAST)


def _shift(day: date, days: int) -> date:
    try:
        return _within(day + timedelta(days=days))
    except OverflowError:
        return date.min if days < 0 else _LAST


class UsageService:
    def __init__(self, database: Database, *, clock: Callable[[], datetime] | None = None) -> None:
        self._db = database
        self._clock = clock or (lambda: datetime.now(UTC))

    def range(self, start: date | None, end: date | None) -> DayRange:
        """See `day_range`, with today's UTC date."""
        return day_range(start, end, today=self._clock().astimezone(UTC).date())

    async def report(self, *, user_id: str | None, days: DayRange, top: int = TOP_QUERIES) -> UsageReport:
        """The usage of one user (`user_id`) or of everyone (None) over `days`."""
        first, last = days.start.isoformat(), days.end.isoformat()
        since = datetime.combine(days.start, time(), UTC)
        until = datetime.combine(days.end + timedelta(days=1), time(), UTC)
        async with self._db.session() as session:
            spent = {row.day: row for row in await store.spend_by_day(session, user_id=user_id, start=first, end=last)}
            items = await store.spend_by_item(session, user_id=user_id, start=first, end=last)
            models = await store.model_tokens(session, user_id=user_id, since=since, until=until)
            queries = await store.top_queries(session, user_id=user_id, start=first, end=last, limit=top)
            users = await store.top_users(session, start=first, end=last, limit=top) if user_id is None else []
        every_day = [spent.get(day.isoformat(), store.DaySpend(day.isoformat(), 0, 0)) for day in days.days]
        return UsageReport(days, every_day, items, models, queries, users)
