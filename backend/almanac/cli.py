"""The `almanac` command: serve, migrate, manage users and credits.

almanac serve [--host H] [--port P] [--workers N]   apply pending migrations, then serve (N processes)
almanac db upgrade                      apply pending migrations
almanac users create --email E [--plan free|pro] [--admin]   prints the new API key as the last line
almanac users promote --email E [--demote]   give (or take back) the admin role
almanac keys create --email E           another API key for a user (last line)
almanac keys list --email E             a user's keys (ID, prefix, name, created, last used, revoked)
almanac keys revoke --email E --key K   revoke a key by ID or prefix (its browser sessions end too)
almanac credits grant --email E --amount N --reason R
almanac credits show --email E
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Literal, TypeVar

from almanac.admin.service import CLI_ACTOR, Actor, AdminConflict, AdminService
from almanac.api.logs import LogHygiene, install_log_hygiene, secret_values
from almanac.auth.service import AccountService, EmailTaken, NewUser, UnknownUser
from almanac.billing.adjustments import CreditAdjustments
from almanac.billing.ledger import CreditService
from almanac.config import ConfigError, Settings, load_settings, redact_url
from almanac.ops.log_format import configure_logging
from almanac.storage.db import Database
from almanac.storage.migrate import upgrade

T = TypeVar("T")
log = logging.getLogger("almanac.cli")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        settings = load_settings()
    except ConfigError as exc:
        print(f"almanac: {exc}", file=sys.stderr)
        return 2
    configure_logging(settings.log_level, settings.log_format)  # LOG_FORMAT: text or json, with request IDs
    secrets = secret_values(settings)
    install_log_hygiene(secrets)
    hygiene = LogHygiene(secrets)
    try:
        return int(args.handler(settings, args) or 0)
    except (UnknownUser, EmailTaken, ValueError) as exc:
        print(f"almanac: {hygiene.redact(redact_url(_explain(exc)))}", file=sys.stderr)
        return 1
    except Exception as exc:  # boundary: a startup failure (say, an unreachable database) is one clear line
        log.debug("%s failed", args.handler.__name__, exc_info=True)  # the traceback, redacted, at DEBUG
        text = hygiene.redact(redact_url(f"{type(exc).__name__}: {exc}"))
        print(f"almanac: {text} (LOG_LEVEL=DEBUG shows the traceback)", file=sys.stderr)
        return 1


def _explain(exc: Exception) -> str:
    if isinstance(exc, UnknownUser):
        return f"no user with e-mail {exc}"
    if isinstance(exc, EmailTaken):
        return f"a user with e-mail {exc} already exists"
    return str(exc)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="almanac", description="Almanac chat service")
    commands = parser.add_subparsers(required=True, metavar="command")

    serve = commands.add_parser("serve", help="apply migrations and serve the API")
    serve.add_argument("--host", default=None, help="bind address (default: HOST or 127.0.0.1)")
    serve.add_argument("--port", type=int, default=None, help="port (default: PORT or 8000)")
    serve.add_argument(
        "--workers",
        type=_workers,
        default=1,
        help="worker processes on one socket (default 1; shared limits need REDIS_URL: docs/operations.md)",
    )
    serve.set_defaults(handler=_serve)

    db = commands.add_parser("db", help="database maintenance").add_subparsers(required=True, metavar="action")
    db.add_parser("upgrade", help="apply pending migrations").set_defaults(handler=_db_upgrade)

    users = commands.add_parser("users", help="manage users").add_subparsers(required=True, metavar="action")
    create = users.add_parser("create", help="create a user and print its API key")
    create.add_argument("--email", required=True)
    create.add_argument("--plan", choices=["free", "pro"], default="free")
    create.add_argument("--admin", action="store_true", help="give the user the admin role")
    create.set_defaults(handler=_users_create)
    promote = users.add_parser("promote", help="give a user the admin role (recorded in the audit log)")
    promote.add_argument("--email", required=True)
    promote.add_argument("--demote", action="store_true", help="take the admin role back instead")
    promote.set_defaults(handler=_users_promote)

    keys = commands.add_parser("keys", help="manage API keys").add_subparsers(required=True, metavar="action")
    key = keys.add_parser("create", help="create another API key for a user")
    key.add_argument("--email", required=True)
    key.add_argument("--name", default="")
    key.set_defaults(handler=_keys_create)
    listing = keys.add_parser("list", help="list a user's API keys")
    listing.add_argument("--email", required=True)
    listing.set_defaults(handler=_keys_list)
    revoke = keys.add_parser("revoke", help="revoke an API key (its browser sessions end too)")
    revoke.add_argument("--email", required=True)
    revoke.add_argument("--key", required=True, help="the key's ID or its prefix as listed")
    revoke.set_defaults(handler=_keys_revoke)

    docs = commands.add_parser("docs", help="documentation retrieval").add_subparsers(required=True, metavar="action")
    index = docs.add_parser("index", help="build or refresh the local documentation index")
    index.add_argument("--force", action="store_true", help="rebuild even if nothing changed")
    index.add_argument(
        "--no-embeddings", action="store_true", help="do not embed the passages (LOCAL_DENSE=both or fuse would)"
    )
    index.set_defaults(handler=_docs_index)

    credits = commands.add_parser("credits", help="manage credits").add_subparsers(required=True, metavar="action")
    grant = credits.add_parser("grant", help="add never-expiring credits")
    grant.add_argument("--email", required=True)
    grant.add_argument("--amount", type=int, required=True)
    grant.add_argument("--reason", required=True)
    grant.set_defaults(handler=_credits_grant)
    show = credits.add_parser("show", help="show balances and recent ledger entries")
    show.add_argument("--email", required=True)
    show.set_defaults(handler=_credits_show)
    return parser


def _with_database(settings: Settings, work: Callable[[Database], Awaitable[T]]) -> T:
    """Migrate, then run `work` against the database."""
    upgrade(settings.resolved_database_url)

    async def run() -> T:
        database = Database(settings.resolved_database_url)
        try:
            return await work(database)
        finally:
            await database.dispose()

    return asyncio.run(run())


def _workers(text: str) -> int:
    from almanac.ops.workers import worker_count

    try:
        return worker_count(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _serve(settings: Settings, args: argparse.Namespace) -> int:
    from almanac.ops.serve import graceful_timeout
    from almanac.ops.workers import STARTUP_FAILED, Workers, serve_one

    settings = settings.model_copy(update={"host": args.host or settings.host, "port": args.port or settings.port})
    upgrade(settings.resolved_database_url)
    proxies = settings.forwarded_allow_ips.strip()
    config: dict[str, object] = {
        "host": settings.host,
        "port": settings.port,
        "log_level": settings.log_level.lower(),
        # On SIGTERM: answers may finish for SHUTDOWN_GRACE_S, then are stopped (ops/shutdown.py).
        "timeout_graceful_shutdown": graceful_timeout(settings.shutdown_grace_s),
        # Trust X-Forwarded-For/-Proto only from the proxies named in FORWARDED_ALLOW_IPS.
        "proxy_headers": bool(proxies),
        "forwarded_allow_ips": proxies or None,
    }
    if args.workers > 1:
        return Workers(settings, config, args.workers).run()
    return 0 if serve_one(settings, config) else STARTUP_FAILED


def _docs_index(settings: Settings, args: argparse.Namespace) -> int:
    from almanac.main import doc_config
    from almanac.rag.documentation import build_embedder
    from almanac.rag.local_index import build_local_index

    config = doc_config(settings)
    started = time.monotonic()
    last = [0.0]

    def progress(stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= 1 or done == total:
            last[0] = now
            count = f" {done:,}/{total:,}" if total else ""
            print(f"[{now - started:6.1f} s] {stage}{count}", file=sys.stderr, flush=True)

    async def index(db: Database) -> tuple[bool, int]:
        # the passages are embedded only for a whole-index vector search (LOCAL_DENSE=both or fuse)
        embedder = None if args.no_embeddings or not config.embeds_index else build_embedder(config, db)
        return await build_local_index(db, config.inputs, embedder, force=args.force, progress=progress)

    rebuilt, chunks = _with_database(settings, index)
    if rebuilt:
        print(f"local documentation index built: {chunks:,} chunks in {time.monotonic() - started:.0f} s")
    else:
        print("local documentation index is up to date (use --force to rebuild)")
    return 0


def _db_upgrade(settings: Settings, _: argparse.Namespace) -> int:
    upgrade(settings.resolved_database_url)
    print("database is up to date")
    return 0


def _users_create(settings: Settings, args: argparse.Namespace) -> int:
    role = "admin" if args.admin else "user"

    async def create(db: Database) -> NewUser:
        created = await AccountService(db).create_user(email=args.email, plan=args.plan, role=role)
        if args.admin:
            await _admin_service(db).record(
                Actor(*CLI_ACTOR), action="create_admin", target=created.user, details={"plan": args.plan}
            )
        return created

    created = _with_database(settings, create)
    admin = ", admin" if args.admin else ""
    print(f"created user {created.user.email} (plan {created.user.plan}{admin}, id {created.user.id})")
    print("API key (shown once; store it now):")
    print(created.api_key)
    return 0


def _admin_service(db: Database) -> AdminService:
    credits = CreditService(db)
    return AdminService(db, credits, CreditAdjustments(credits))


def _users_promote(settings: Settings, args: argparse.Namespace) -> int:
    role: Literal["user", "admin"] = "user" if args.demote else "admin"

    async def promote(db: Database) -> str:
        user = await AccountService(db).by_email(args.email)
        try:
            updated = await _admin_service(db).set_role(Actor(*CLI_ACTOR), user_id=user.id, role=role)
        except AdminConflict as exc:
            raise ValueError(str(exc)) from None
        return updated.role

    now = _with_database(settings, promote)
    print(f"{args.email} is now {'an administrator' if now == 'admin' else 'an ordinary user'}")
    return 0


def _keys_create(settings: Settings, args: argparse.Namespace) -> int:
    key = _with_database(settings, lambda db: AccountService(db).create_key(email=args.email, name=args.name))
    print(f"new API key for {args.email} (shown once):")
    print(key)
    return 0


def _keys_list(settings: Settings, args: argparse.Namespace) -> int:
    async def listing(db: Database) -> list[str]:
        accounts = AccountService(db)
        user = await accounts.by_email(args.email)
        lines = []
        for key in await accounts.keys(user_id=user.id):
            line = f"{key.id}  {key.prefix}…  {key.name or '-':<20} created {key.created_at:%Y-%m-%d %H:%M}"
            if key.last_used_at is not None:
                line += f"  last used {key.last_used_at:%Y-%m-%d %H:%M}"
            if key.revoked_at is not None:
                line += f"  REVOKED {key.revoked_at:%Y-%m-%d %H:%M}"
            lines.append(line)
        return lines

    print("\n".join(_with_database(settings, listing)) or f"{args.email} has no API keys")
    return 0


def _keys_revoke(settings: Settings, args: argparse.Namespace) -> int:
    async def revoke(db: Database) -> str:
        accounts = AccountService(db)
        user = await accounts.by_email(args.email)
        wanted = args.key.strip().rstrip("…")
        matches = [
            key
            for key in await accounts.keys(user_id=user.id)
            if key.revoked_at is None and (key.id == wanted or key.prefix == wanted)
        ]
        if len(matches) != 1:
            raise ValueError(
                f"no active key {wanted!r} of {args.email}"
                if not matches
                else f"{len(matches)} active keys start with {wanted!r}; give the key's ID"
            )
        await accounts.revoke_key(user_id=user.id, key_id=matches[0].id)
        return matches[0].id

    key_id = _with_database(settings, revoke)
    print(f"revoked key {key_id} of {args.email}; its browser sessions have ended")
    return 0


def _credits_grant(settings: Settings, args: argparse.Namespace) -> int:
    async def grant(db: Database) -> int:
        user = await AccountService(db).by_email(args.email)
        return await CreditService(db).grant_pack(user_id=user.id, amount=args.amount, reason=args.reason)

    balance = _with_database(settings, grant)
    print(f"granted {args.amount} credits to {args.email}; balance is now {balance}")
    return 0


def _credits_show(settings: Settings, args: argparse.Namespace) -> int:
    async def show(db: Database) -> list[str]:
        user = await AccountService(db).by_email(args.email)
        snapshot = await CreditService(db).snapshot(user_id=user.id, recent=10)
        account = snapshot.account
        lines = [
            f"{user.email}  plan {account.plan}",
            f"balance {account.balance}  (today's allowance {account.daily_balance}, packs {account.pack_balance})",
            f"allowance used this month {account.month_used}"
            + (f", {snapshot.left_this_month} left this month" if snapshot.left_this_month is not None else ""),
            "recent ledger entries:",
        ]
        lines += [
            f"  {row.created_at:%Y-%m-%d %H:%M} {row.delta:+5d} {row.bucket:<5} {row.kind:<9} {row.reason}"
            for row in snapshot.recent
        ]
        return lines

    print("\n".join(_with_database(settings, show)))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
