"""Which protections the sandbox runs with, as the startup table shows them, and the refusal to
offer code_execution where the kernel cannot enforce the disk limit — unless the operator said so
(CODE_EXECUTION_REQUIRE_LIMITS=false). Real bubblewrap; skipped where it cannot run, unless
ALMANAC_REQUIRE_SANDBOX=1."""

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest

from almanac.services import Services
from almanac.startup import tool_rows
from almanac.tools.assembly import BuiltinTools
from almanac.tools.base import ToolContext
from almanac.tools.builtin.code_execution import CodeExecutionTool
from almanac.tools.config import CodeExecutionConfig, ToolsConfig
from almanac.tools.registry import ToolRegistry
from almanac.tools.sandbox import Limits, Sandbox, SandboxConfig

REQUIRE = os.environ.get("ALMANAC_REQUIRE_SANDBOX", "") == "1"
LIMITS = Limits(timeout_s=5, memory_mb=256, disk_mb=30)
CONTEXT = ToolContext("user-1", "c1", 1, "q1", "q1-t1", "toolu_1")
BWRAP = shutil.which("bwrap", path="/usr/bin:/bin")
V1_MEMORY = Path("/sys/fs/cgroup/memory").is_dir()


class Started:
    """What `startup.tool_rows` reads of the services: the built-in tools."""

    def __init__(self, tools: BuiltinTools) -> None:
        self.tools = tools


async def started(sandbox: Sandbox) -> tuple[BuiltinTools, ToolRegistry]:
    tools = BuiltinTools(ToolsConfig(code=CodeExecutionConfig(limits=LIMITS)))
    tools.sandbox = sandbox
    tools.tools = [CodeExecutionTool(sandbox, languages=("bash",))]
    registry = ToolRegistry(tools.tools)
    await tools.start(registry)
    return tools, registry


@pytest.fixture
def old_bwrap() -> Iterator[str]:
    """bubblewrap as an older release shows it: no --size (the rest is the real one)."""
    if BWRAP is None:
        pytest.skip("bubblewrap is not installed")
    folder = Path(tempfile.mkdtemp(prefix="almanac-test-"))
    folder.chmod(0o755)
    path = folder / "bwrap"
    path.write_text(
        f'#!/bin/sh\n[ "$1" = --help ] && {{ {BWRAP} --help | grep -v -- --size; exit 0; }}\nexec {BWRAP} "$@"\n'
    )
    path.chmod(0o755)
    yield str(path)
    shutil.rmtree(folder)


async def test_the_startup_table_lists_the_protections_in_force() -> None:
    tools, registry = await started(Sandbox(SandboxConfig(LIMITS)))
    if "code_execution" not in registry:
        if REQUIRE:
            pytest.fail(f"the sandbox is required but {tools.off()}")
        pytest.skip(f"no sandbox here: {tools.off()}")
    rows = tool_rows(cast(Services, Started(tools)))
    lines = [value for name, value in rows if name == "sandbox limits"]
    assert rows[0][0] == "code sandbox" and rows[0][1].startswith("bubblewrap: ")
    assert (
        "/tmp and /workspace: tmpfs of 30 MiB each, /workspace plus its copied-in files (kernel-enforced), "
        "stopped past 30 MiB or 2,000 files together"
    ) in lines
    assert any(line.startswith("system-call filter (") for line in lines)
    assert "no nested user namespaces" in lines
    cgroup = [line for line in lines if line.startswith("cgroup v")]
    if os.geteuid() == 0 and V1_MEMORY:  # cgroup v1, writable as root
        assert cgroup and cgroup[0].endswith("per run") and "/sys/fs/cgroup/memory/" in cgroup[0]
    elif not cgroup:
        assert any(line.startswith("not active: cgroups: ") for line in lines)
    tools.close()


async def test_without_a_kernel_enforced_disk_limit_code_execution_is_off(old_bwrap: str) -> None:
    tools, registry = await started(Sandbox(SandboxConfig(LIMITS, bwrap=old_bwrap)))
    assert "code_execution" not in registry
    assert any("the disk limit cannot be enforced" in reason for reason in tools.off())
    assert any("CODE_EXECUTION_REQUIRE_LIMITS=false" in reason for reason in tools.off())


async def test_the_operator_may_run_without_it_and_the_table_says_so(old_bwrap: str) -> None:
    sandbox = Sandbox(SandboxConfig(LIMITS, bwrap=old_bwrap, require_limits=False))
    tools, registry = await started(sandbox)
    if "code_execution" not in registry:
        if REQUIRE:
            pytest.fail(f"the sandbox is required but {tools.off()}")
        pytest.skip(f"no sandbox here: {tools.off()}")
    lines = tools.describe_protections()
    assert "/tmp and /workspace: unbounded tmpfs, stopped past 30 MiB (watched)" in lines
    assert any(line.startswith("not active: disk: bubblewrap has no --size") for line in lines)
    result = await tools.tools[0].run({"language": "bash", "code": "df -k /tmp | tail -1; echo ran"}, CONTEXT)
    assert "ran" in result.content and not result.is_error
    tools.close()


async def test_a_cgroup_folder_that_does_not_hold_the_run_is_noticed_and_not_used(tmp_path: Path) -> None:
    """CODE_EXECUTION_CGROUP naming an ordinary folder: the probe finds its process outside the
    group, so the sandbox runs without a cgroup and the startup table says why."""
    fake = tmp_path / "not-a-cgroup"
    fake.mkdir()
    (fake / "cgroup.subtree_control").write_text("memory pids")
    sandbox = Sandbox(SandboxConfig(LIMITS, cgroup=fake))
    tools, registry = await started(sandbox)
    if "code_execution" not in registry:
        if REQUIRE:
            pytest.fail(f"the sandbox is required but {tools.off()}")
        pytest.skip(f"no sandbox here: {tools.off()}")
    lines = tools.describe_protections()
    assert not any(line.startswith("cgroup v") for line in lines)
    assert any(
        line.startswith("not active: cgroups: cgroup v2") and "did not run in its cgroup" in line for line in lines
    )
    tools.close()
