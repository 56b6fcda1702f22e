"""A small mutation check: apply one-line mutations to the code that guards money, identity and
safety, and show that each makes some test fail.

Each mutation replaces one exact line fragment in one file (it must occur exactly once) in a copy
of the package that goes first on PYTHONPATH, and runs the tests named for it against that copy;
the working tree is never changed, so `--jobs` mutants run side by side. A mutation that no test notices is a
hole in the suite: the script prints it and exits with status 1. CI runs it after the test suite
(`.ci/run`); run it by hand with

    .venv/bin/python tests/mutation_check.py [--only NAME …] [--list]
"""

from __future__ import annotations

import argparse
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "backend" / "almanac"


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str  # relative to backend/almanac
    old: str
    new: str
    tests: tuple[str, ...]  # pytest arguments (paths, node IDs, -k expressions)


MUTATIONS: tuple[Mutation, ...] = (
    Mutation(
        "pricing: the base price",
        "billing/pricing.py",
        "BASE_COST = 5",
        "BASE_COST = 4",
        ("tests/unit/billing/test_pricing.py",),
    ),
    Mutation(
        "debit: the balance check of the conditional UPDATE",
        "storage/credits.py",
        "CreditAccount.daily_balance + CreditAccount.pack_balance >= amount,",
        "CreditAccount.daily_balance + CreditAccount.pack_balance >= 0,",
        ("tests/unit/billing/test_ledger.py",),
    ),
    Mutation(
        "refunds: credits of an ended day go back to today",
        "billing/ledger.py",
        "to_daily=charge.from_daily if same_day else 0,",
        "to_daily=charge.from_daily,",
        ("tests/unit/billing/test_ledger.py",),
    ),
    Mutation(
        "refunds: the idempotency key is dropped",
        "billing/ledger.py",
        "entries = [replace(marker, idem_key=key), *entries[1:]]",
        "entries = [marker, *entries[1:]]",
        ("tests/unit/billing/test_ledger.py",),
    ),
    Mutation(
        "IDs: tool results numbered from zero",
        "chat/hooks.py",
        "item_id = tool_result_id(self.query.query_number, self.tools.count)",
        "item_id = tool_result_id(self.query.query_number, self.tools.count - 1)",
        ("tests/unit/chat/test_service.py",),
    ),
    Mutation(
        "documentation: a second documentation call keeps its +10 too",
        "chat/hooks.py",
        'keep, why = False, f"documentation already paid by {self._documentation_held_by}"',
        'why = f"documentation already paid by {self._documentation_held_by}"',
        ("tests/unit/chat/test_fair_billing.py", "-k", "documentation"),
    ),
    Mutation(
        "documentation: a lookup that found nothing is charged",
        "tools/runner.py",
        "return self.status.billable and not self.free",
        "return self.status.billable",
        ("tests/unit/chat/test_fair_billing.py",),
    ),
    Mutation(
        "free output: a tool call does not count as output",
        "chat/run.py",
        "produced = bool(state.text) or tools.count > 0",
        "produced = bool(state.text) or tools.completed > 0",
        ("tests/unit/chat/test_fair_billing.py", "-k", "tool_call"),
    ),
    Mutation(
        "turn limit: hard-coded instead of MAX_TURNS",
        "main.py",
        "loop=LoopLimits(settings.max_turns,",
        "loop=LoopLimits(15,",
        ("tests/api/test_turn_limit_api.py",),
    ),
    Mutation(
        "turn limit: the forced final request drops the tools",
        "chat/turn.py",
        'async for event in self._model_turn(tools, "none", self.turns, [], None, final_note=note):',
        'async for event in self._model_turn((), "none", self.turns, [], None, final_note=note):',
        ("tests/api/test_turn_limit_api.py", "tests/unit/chat/test_turn.py"),
    ),
    Mutation(
        "leases: a lease never expires",
        "storage/conversations.py",
        "                Conversation.locked_until < now,\n                *((",
        "                *((",
        ("tests/unit/chat/test_run_lifecycle.py", "-k", "dead_process"),
    ),
    Mutation(
        "leases: the lease is not renewed while the run lives",
        "chat/run.py",
        "            held = await context.leases.extend(",
        "            held = True or await context.leases.extend(",
        ("tests/unit/chat/test_run_lifecycle.py", "-k", "renewed"),
    ),
    Mutation(
        "context: history never gives way",
        "memory/context.py",
        "        if size > room:\n            left_out",
        "        if False:\n            left_out",
        ("tests/unit/memory/test_context.py",),
    ),
    Mutation(
        "data boundary: tool output can close the data element",
        "text/marking.py",
        'return _MARKER.sub(lambda match: f"<\\\\{match.group(1)}{match.group(2)}", content)',
        "return content",
        ("tests/unit/text/test_marking.py", "tests/unit/memory/test_context.py"),
    ),
    Mutation(
        "cookie: the session cookie loses Secure over HTTPS",
        "api/routes/auth.py",
        'secure=settings.session_cookie_secure or request.url.scheme == "https",',
        "secure=settings.session_cookie_secure,",
        ("tests/api/test_auth_api.py",),
    ),
    Mutation(
        "cookie: the session cookie loses Max-Age",
        "api/routes/auth.py",
        "max_age=int(settings.session_ttl_s),",
        "max_age=None,",
        ("tests/api/test_auth_api.py",),
    ),
    Mutation(
        "sessions: expired sessions stay valid",
        "storage/users.py",
        "                WebSession.expires_at > now,\n",
        "                WebSession.expires_at > WebSession.created_at,\n",
        ("tests/api/test_auth_api.py",),
    ),
    Mutation(
        "hosts: requests naming any host are served (DNS rebinding)",
        "api/guards.py",
        "        if not self.hosts.allows(hostname):",
        "        if False:",
        ("tests/api/test_auth_api.py",),
    ),
    Mutation(
        "web UI: the path guard is gone",
        "api/web.py",
        "candidate.is_relative_to(folder)",
        "True",
        ("tests/api/test_web.py",),
    ),
    Mutation(
        "headers: X-Frame-Options is not sent",
        "api/web.py",
        '(b"x-frame-options", b"DENY"),',
        "",
        ("tests/api/test_web.py",),
    ),
    Mutation(
        "busy: a busy conversation answers 400 instead of 409",
        "api/errors.py",
        'return ApiError(409, exc.code, str(exc), field="conversation_id")',
        'return ApiError(400, exc.code, str(exc), field="conversation_id")',
        ("tests/api",),
    ),
    Mutation(
        "providers: the OpenAI provider does not retry (so ignores Retry-After)",
        "llm/providers/openai_compat.py",
        "timeout=timeout_s, max_retries=max_retries",
        "timeout=timeout_s, max_retries=0",
        ("tests/unit/llm/providers/test_openai_compat.py",),
    ),
    Mutation(
        "sandbox: processes outlive their sandbox (no --die-with-parent)",
        "tools/sandbox/command.py",
        '"--unshare-user", "--die-with-parent", "--new-session"]',
        '"--unshare-user", "--new-session"]',
        ("tests/integration/test_sandbox_escapes.py",),
    ),
    Mutation(
        "sandbox: the program shares the server's session (no --new-session)",
        "tools/sandbox/command.py",
        '"--die-with-parent", "--new-session"]',
        '"--die-with-parent"]',
        (
            "tests/integration/test_sandbox_flags.py::test_the_program_has_a_session_of_its_own_and_cannot_push_terminal_input",
        ),
    ),
    Mutation(
        "sandbox: bubblewrap's own environment reaches the program (no --clearenv)",
        "tools/sandbox/command.py",
        'argv += ["--cap-drop", "ALL", "--clearenv"]',
        'argv += ["--cap-drop", "ALL"]',
        ("tests/integration/test_sandbox_flags.py::test_what_bubblewrap_was_started_with_does_not_reach_the_program",),
    ),
    Mutation(
        "sandbox: the program in /code is writable",
        "tools/sandbox/command.py",
        '"--ro-bind-data", str(paths.program_fd)',
        '"--bind-data", str(paths.program_fd)',
        ("tests/integration/test_sandbox_flags.py::test_the_program_in_code_cannot_be_changed",),
    ),
    Mutation(
        "sandbox: /tmp and /workspace have no size (the disk limit is not the kernel's)",
        "tools/sandbox/command.py",
        'argv += [*(["--size", str(size)] if fs_bytes is not None else []), "--tmpfs", mount]',
        'argv += ["--tmpfs", mount]',
        (
            "tests/integration/test_sandbox_resource_escapes.py::test_fallocate_keep_size_cannot_reserve_more_than_the_disk_limit",
        ),
    ),
    Mutation(
        "sandbox: no file-size limit",
        "tools/sandbox/limits.py",
        'f"--fsize={limits.file_size_mb * MIB}",',
        "",
        ("tests/integration/test_sandbox_resource_escapes.py::test_a_file_past_the_file_size_limit_is_refused",),
    ),
    Mutation(
        "sandbox: no system-call filter",
        "tools/sandbox/sandbox.py",
        "            seccomp_fd=filter_fd,",
        "            seccomp_fd=None,",
        ("tests/integration/test_sandbox_resource_escapes.py::test_memfd_cannot_hold_memory",),
    ),
    Mutation(
        "sandbox: the filter lets memfd_create through",
        "tools/sandbox/seccomp.py",
        '    "memfd_create",\n',
        "",
        ("tests/integration/test_sandbox_resource_escapes.py::test_memfd_cannot_hold_memory",),
    ),
    Mutation(
        "sandbox: nested user namespaces stay possible (no --disable-userns)",
        "tools/sandbox/sandbox.py",
        "            disable_userns=self.features.disable_userns,",
        "            disable_userns=False,",
        (
            "tests/integration/test_sandbox_resource_escapes.py::test_nested_user_namespaces_are_off_even_without_the_filter",
        ),
    ),
    Mutation(
        "sandbox: the run is not moved into its memory cgroup",
        "tools/sandbox/sandbox.py",
        "                group.add(pid)",
        "                pass",
        (
            "tests/integration/test_sandbox_resource_escapes.py::test_many_processes_together_stay_within_the_runs_memory",
        ),
    ),
    Mutation(
        "sandbox: /tmp and /workspace together are not watched",
        "tools/sandbox/sandbox.py",
        'return "disk" if written > limits.disk_mb * MIB or made > limits.disk_files else None',
        "return None",
        (
            "tests/integration/test_sandbox_resource_escapes.py::test_a_flood_of_small_files_stops_the_program",
            "tests/integration/test_sandbox_runs.py::test_writing_too_much_to_tmp_and_workspace_together_stops_the_program",
        ),
    ),
    Mutation(
        "sandbox: output past the limit is kept when chunks straddle it",
        "tools/sandbox/process.py",
        "                self.kept += chunk[:room]",
        "                self.kept += chunk",
        ("tests/integration/test_sandbox_flags.py::test_output_written_in_odd_chunks_is_cut_exactly_at_the_limit",),
    ),
    Mutation(
        "workspace: a file name that is not UTF-8 reaches the save-back",
        "tools/builtin/confined.py",
        'if entry.kind != "file" or shown_name(entry.path) != entry.path:',
        'if entry.kind != "file":',
        (
            "tests/integration/test_sandbox_runs.py::test_a_file_name_that_is_not_utf8_is_skipped_with_a_note_and_the_rest_saved",
        ),
    ),
    Mutation(
        "sandbox: the root file system stays writable",
        "tools/sandbox/command.py",
        'argv += ["--chdir", "/tmp", "--remount-ro", "/dev", "--remount-ro", "/"]',
        'argv += ["--chdir", "/tmp", "--remount-ro", "/dev"]',
        ("tests/integration/test_sandbox_escapes.py",),
    ),
    Mutation(
        "sandbox: no process limit (fork bombs run free)",
        "tools/sandbox/limits.py",
        'f"--nproc={limits.processes}",',
        "",
        ("tests/integration/test_sandbox_escapes.py",),
    ),
    Mutation(
        "sandbox: the wall-clock limit kills nothing",
        "tools/sandbox/process.py",
        '            stop("timeout")',
        "            pass",
        ("tests/integration/test_sandbox_escapes.py",),
    ),
    Mutation(
        "sandbox: output past the limit does not stop the program",
        "tools/sandbox/process.py",
        "                self._on_overflow()",
        "                pass",
        ("tests/integration/test_sandbox_escapes.py",),
    ),
    Mutation(
        "sandbox: a cancelled call leaves its processes running",
        "tools/sandbox/process.py",
        "        if process.returncode is None:  # cancelled, or it never ended: nothing may outlive the call\n"
        "            _kill_group(process.pid)",
        "        if False:\n            pass",
        ("tests/integration/test_sandbox_escapes.py",),
    ),
    Mutation(
        "workspace: a symbolic link as the file is followed",
        "tools/builtin/confined.py",
        "fd = os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)",
        "fd = os.open(name, flags | os.O_CLOEXEC, dir_fd=dir_fd)",
        ("tests/unit/tools/builtin/test_workspace.py", "tests/unit/tools/builtin/test_files.py"),
    ),
    Mutation(
        "workspace: a linked folder on the way is entered",
        "tools/builtin/confined.py",
        "_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC",
        "_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC",
        ("tests/unit/tools/builtin/test_workspace.py",),
    ),
    Mutation(
        "workspace: '..' leaves the workspace",
        "tools/builtin/confined.py",
        '    if ".." in parts:',
        "    if False:",
        ("tests/unit/tools/builtin/test_workspace.py", "tests/unit/tools/builtin/test_files.py"),
    ),
    Mutation(
        "sql_query: SQLite opened without mode=ro",
        "tools/builtin/sql_engines.py",
        'uri = f"file:{quote(self.path)}?mode=ro"',
        'uri = f"file:{quote(self.path)}"',
        ("tests/unit/tools/builtin/test_sql.py",),
    ),
    Mutation(
        "sql_query: a superuser connection is used",
        "tools/builtin/sql_engines.py",
        'if row["rolsuper"]:',
        "if False:",
        ("tests/integration/test_tools_sql.py::test_a_superuser_connection_is_refused",),
    ),
    Mutation(
        "discussions: the price of a turn",
        "billing/pricing.py",
        "DISCUSSION_TURN_COST = 5",
        "DISCUSSION_TURN_COST = 4",
        # (two offline participants decline, and declined turns are free: the charged turns are the touring ones)
        ("tests/api/test_discussions_api.py", "-k", "sqlite and running_out_of_credits"),
    ),
    Mutation(
        "discussions: later turns are paid before they run",
        "discussions/run.py",
        "charge = self._first_charge if number == 1 else await self._pay(number)",
        "charge = self._first_charge",
        ("tests/api/test_discussions_api.py", "-k", "sqlite and running_out"),
    ),
    Mutation(
        "discussions: a turn that produced nothing is refunded",
        "discussions/run.py",
        "if note and not turn.text and tools.count == 0:",
        "if False:",
        ("tests/unit/discussions/test_discussion_service.py", "-k", "sqlite"),
    ),
    Mutation(
        "discussions: a turn paid for whose speaker was never asked is refunded",
        "discussions/run.py",
        "                await self._refund_unspent()",
        "                pass",
        ("tests/unit/discussions/test_discussion_service.py", "-k", "sqlite and never_asked"),
    ),
    Mutation(
        "discussions: reading one is scoped to its owner",
        "storage/discussions.py",
        "select(Discussion).where(Discussion.id == discussion_id, Discussion.user_id == user_id)",
        "select(Discussion).where(Discussion.id == discussion_id)",
        ("tests/api/test_discussions_api.py", "-k", "sqlite and others"),
    ),
    Mutation(
        "collaboration: explicit phrases make the model stuck",
        "chat/strategies/stuck.py",
        "        if explicit_phrase(answer):",
        "        if False:",
        ("tests/unit/chat/strategies/test_stuck.py",),
    ),
    Mutation(
        "collaboration: the same call repeated stops the tool loop",
        "chat/strategies/stuck.py",
        "if repeats >= rules.repeat_limit:",
        "if repeats > rules.repeat_limit:",
        ("tests/unit/chat/strategies/test_stuck.py",),
    ),
    Mutation(
        "collaboration: the text of an attempt still being judged is held back",
        "chat/strategies/collaborate.py",
        "if held or isinstance(event, TextDeltaEvent):",
        "if False:",
        ("tests/unit/chat/strategies/test_collaborate.py",),
    ),
    Mutation(
        "collaboration: a retry starts with the tool turns already done",
        "chat/strategies/collaborate.py",
        "        loop.history = list(done)",
        "        loop.history = []",
        ("tests/unit/chat/strategies/test_collaborate_chat.py", "-k", "sqlite"),
    ),
    Mutation(
        "collaboration: relevance is the embedding cosine",
        "chat/strategies/relevance.py",
        "return Relevance(self.scale(float(question[0] @ reply[0])), self.method)",
        "return Relevance(1.0, self.method)",
        ("tests/unit/chat/strategies/test_relevance.py",),
    ),
    Mutation(
        "gateway billing: planner tokens are not billed",
        "gateway/usage.py",
        "return row.input_tokens + row.output_tokens + row.planner_input_tokens + row.planner_output_tokens",
        "return row.input_tokens + row.output_tokens",
        ("tests/api/test_gateway_boost.py", "-k", "planner_tokens_are_billed"),
    ),
    Mutation(
        "gateway stream: tool calls whose finish reason is stop (or none) end in end_turn",
        "gateway/openai_stream.py",
        '        if self.tool_calls:\n            self.stop_reason = "tool_use"',
        '        if False:\n            self.stop_reason = "tool_use"',
        ("tests/unit/gateway/test_openai_stream.py",),
    ),
    Mutation(
        "gateway errors: an upstream 503 is not overloaded_error",
        "gateway/errors.py",
        "    if status in (503, 529):",
        "    if status in (529,):",
        ("tests/api/test_gateway_upstreams.py", "-k", "failures_become"),
    ),
    Mutation(
        "gateway errors: an upstream 408 is not a timeout",
        "gateway/errors.py",
        "    if status in (408, 504):",
        "    if status in (504,):",
        ("tests/api/test_gateway_upstreams.py", "-k", "failures_become"),
    ),
    Mutation(
        "gateway errors: 504 is api_error instead of timeout_error",
        "gateway/errors.py",
        '504: "timeout_error",',
        '504: "api_error",',
        ("tests/api/test_gateway_upstreams.py", "-k", "failures_become"),
    ),
    Mutation(
        "gateway errors: 529 is api_error instead of overloaded_error",
        "gateway/errors.py",
        '529: "overloaded_error",',
        '529: "api_error",',
        ("tests/api/test_gateway_upstreams.py", "-k", "failures_become"),
    ),
    Mutation(
        "boost: tool_choice none still runs the planner",
        "gateway/service.py",
        "if boost is None or not boost.applies(route) or not request.tools_allowed or request.structured:",
        "if boost is None or not boost.applies(route) or request.structured:",
        ("tests/api/test_gateway_boost.py", "-k", "tool_choice_none"),
    ),
    Mutation(
        "gateway: tool_choice none lets a native tool call out",
        "gateway/openai_stream.py",
        'for fragment in delta.get("tool_calls") or () if self.tools else ():',
        'for fragment in delta.get("tool_calls") or ():',
        ("tests/unit/gateway/test_openai_stream.py",),
    ),
    Mutation(
        "text protocol: tool_choice none lets a written tool call out",
        "llm/text_tools.py",
        'for parsed in reply.calls if request.tool_choice != "none" else ():',
        "for parsed in reply.calls:",
        ("tests/unit/llm/test_text_tools.py",),
    ),
    Mutation(
        "gateway: tool_choice none lets a model's tool call out",
        "gateway/llm_bridge.py",
        "elif isinstance(event, ToolCallReady) and tools:",
        "elif isinstance(event, ToolCallReady):",
        ("tests/unit/gateway/test_llm_bridge.py",),
    ),
    Mutation(
        "boost sections: a heading such as '## Steps' inside a SUMMARY ends it",
        "chat/strategies/sections.py",
        "parts = _split(text, _CANONICAL) or _split(text, _FALLBACK, summary_to_end=True)",
        "parts = _split(text, _FALLBACK) or _split(text, _CANONICAL)",
        ("tests/unit/chat/strategies/test_sections.py",),
    ),
    Mutation(
        "plan reuse: a tool error does not stop the plan",
        "gateway/plans.py",
        'return "a tool reported an error"',
        "return None",
        ("tests/unit/gateway/test_plans.py",),
    ),
    Mutation(
        "plan reuse: plans are shared between users",
        "gateway/plans.py",
        "orjson.dumps([user_id, model, tools, prefix])",
        "orjson.dumps([model, tools, prefix])",
        ("tests/unit/gateway/test_plans.py",),
    ),
    Mutation(
        "boosted streams: the response head goes out before a refusal",
        "gateway/keepalive.py",
        "done, _ = await asyncio.wait({pending}, timeout=hold_s)",
        "done, _ = await asyncio.wait({pending}, timeout=0)",
        ("tests/api/test_gateway_boost.py", "-k", "refused_before"),
    ),
    Mutation(
        "gateway: stop sequences are not applied",
        "gateway/openai_upstream.py",
        'self._stream(request, model), request.body.get("stop_sequences") or (), on_cut=',
        "self._stream(request, model), (), on_cut=",
        ("tests/api/test_gateway_stops.py",),
    ),
    Mutation(
        "gateway: max_tokens is capped at 4,096 for every model",
        "gateway/service.py",
        "request = replace(request, output_cap=self.output_cap(route))",
        "request = replace(request, output_cap=4096)",
        ("tests/api/test_gateway_claude_code.py", "-k", "max_tokens_stands"),
    ),
    Mutation(
        "limits: Retry-After rounded down (35.4 s says 35)",
        "ops/limits.py",
        "return max(1, math.ceil(wait_s))",
        "return max(1, math.floor(wait_s))",
        ("tests/unit/ops/test_limits.py",),
    ),
    Mutation(
        "gateway: an upstream's fractional Retry-After rounded down",
        "gateway/errors.py",
        "return str(max(0, math.ceil(seconds))) if math.isfinite(seconds) else None",
        "return str(max(0, math.floor(seconds))) if math.isfinite(seconds) else None",
        ("tests/api/test_gateway_upstreams.py", "-k", "fractional"),
    ),
)


def mutant_env(scratch: Path) -> dict[str, str]:
    path = os.pathsep.join(filter(None, [str(scratch), os.environ.get("PYTHONPATH", "")]))
    return {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": path}


def check_the_copy_is_imported(scratch: Path) -> None:
    """Fail at once if a copy first on PYTHONPATH is not what `import almanac` finds (every mutant
    would then survive, for the wrong reason)."""
    shutil.copytree(PACKAGE, scratch / "almanac", ignore=shutil.ignore_patterns("__pycache__"))
    found = subprocess.run(
        [sys.executable, "-c", "import almanac; print(almanac.__file__)"],
        cwd=ROOT,
        env=mutant_env(scratch),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    shutil.rmtree(scratch / "almanac")
    if not Path(found).is_relative_to(scratch):
        raise SystemExit(f"`import almanac` finds {found}, not the mutated copy in {scratch}")


def run(mutation: Mutation, scratch: Path) -> tuple[bool, float]:
    """Run the mutation's tests against a mutated copy of the package (in `scratch`, first on
    PYTHONPATH, so the working tree is never touched and mutants can run side by side); True if some
    test failed (the mutant was caught)."""
    original = (PACKAGE / mutation.path).read_text()
    found = original.count(mutation.old)
    if found != 1:
        raise SystemExit(f"{mutation.name}: expected the fragment once in {mutation.path}, found it {found} times")
    started = time.monotonic()
    copy = scratch / "almanac"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / mutation.path).write_text(original.replace(mutation.old, mutation.new))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *mutation.tests],
        cwd=ROOT,
        env=mutant_env(scratch),
        capture_output=True,
        text=True,
        timeout=900,
    )
    return done.returncode != 0, time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="*", help="run only mutations whose name contains one of these words")
    parser.add_argument("--list", action="store_true", help="list the mutations and the tests that must catch them")
    parser.add_argument("--jobs", type=int, default=2, help="mutants tested side by side (default 2)")
    args = parser.parse_args()
    chosen = [m for m in MUTATIONS if not args.only or any(word in m.name for word in args.only)]
    if args.list:
        for mutation in chosen:
            print(f"{mutation.name}\n    {mutation.path}: {mutation.old!r} -> {mutation.new!r}")
            print(f"    caught by: {' '.join(mutation.tests)}")
        return 0
    for mutation in chosen:  # every fragment is checked before any mutant runs
        found = (PACKAGE / mutation.path).read_text().count(mutation.old)
        if found != 1:
            raise SystemExit(f"{mutation.name}: expected the fragment once in {mutation.path}, found it {found} times")
    survivors = []
    with tempfile.TemporaryDirectory(prefix="almanac-mutants-") as folder:
        free: queue.SimpleQueue[Path] = queue.SimpleQueue()
        for job in range(max(1, args.jobs)):
            (Path(folder) / str(job)).mkdir()
            free.put(Path(folder) / str(job))
        check_the_copy_is_imported(Path(folder) / "0")

        def one(mutation: Mutation) -> tuple[Mutation, bool, float]:
            scratch = free.get()
            try:
                return (mutation, *run(mutation, scratch))
            finally:
                free.put(scratch)

        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            for mutation, caught, seconds in pool.map(one, chosen):
                print(f"{'caught ' if caught else 'SURVIVED'}  {mutation.name}  ({seconds:.0f} s)", flush=True)
                if not caught:
                    survivors.append(mutation.name)
    print(f"\n{len(chosen) - len(survivors)} of {len(chosen)} mutations caught")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
