"""Finding a cgroup hierarchy for per-run groups, and what a run's group is given — on folders laid
out like the kernel's cgroup file systems (the real ones are exercised by
tests/integration/test_sandbox_resource_escapes.py)."""

import os
import subprocess
from pathlib import Path

from almanac.tools.sandbox.cgroups import RunGroup, detect, own_cgroups

V1 = "12:pids:/user.slice\n4:memory:/process_api/abc\n3:cpu,cpuacct:/\n0::/\n"


def v1_tree(root: Path) -> None:
    (root / "memory" / "process_api" / "abc").mkdir(parents=True)
    (root / "pids" / "user.slice").mkdir(parents=True)


def test_own_cgroups_reads_each_controller_and_the_v2_path() -> None:
    assert own_cgroups(V1) == {"pids": "/user.slice", "memory": "/process_api/abc", "cpu": "/", "cpuacct": "/", "": "/"}


def test_v1_groups_go_under_our_own_memory_and_pids_cgroups(tmp_path: Path) -> None:
    v1_tree(tmp_path)
    (tmp_path / "self").write_text(V1)
    found = detect(root=tmp_path, proc=tmp_path / "self")
    assert found.problem is None and found.hierarchy is not None
    assert found.hierarchy.version == 1
    assert found.hierarchy.memory.parent == tmp_path / "memory" / "process_api" / "abc"
    assert found.hierarchy.pids.parent == tmp_path / "pids" / "user.slice"
    assert found.hierarchy.memory.name.startswith(f"almanac-sandbox-{os.getpid()}-")
    group = RunGroup(found.hierarchy, memory_bytes=300 << 20, processes=16)
    memory, pids = group.folders
    assert (memory / "memory.limit_in_bytes").read_text() == str(300 << 20)
    assert (pids / "pids.max").read_text() == "16"
    group.add(4242)
    assert (memory / "cgroup.procs").read_text() == (pids / "cgroup.procs").read_text() == "4242"
    (memory / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 0\n")
    (memory / "memory.failcnt").write_text("0\n")
    assert not group.memory_exhausted()
    (memory / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n")
    assert group.memory_exhausted()


def test_v2_needs_a_folder_that_delegates_memory_and_pids(tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("cpu memory pids")
    ours = tmp_path / "app.slice" / "almanac.service"
    ours.mkdir(parents=True)
    (ours / "cgroup.subtree_control").write_text("")
    (tmp_path / "self").write_text("0::/app.slice/almanac.service\n")
    found = detect(root=tmp_path, proc=tmp_path / "self")
    assert found.hierarchy is None and "does not delegate the memory and pids controllers" in (found.problem or "")
    delegated = tmp_path / "delegated"
    delegated.mkdir()
    (delegated / "cgroup.subtree_control").write_text("memory pids")
    found = detect(delegated, root=tmp_path, proc=tmp_path / "self")
    assert found.hierarchy is not None and found.hierarchy.version == 2
    assert found.hierarchy.memory == found.hierarchy.pids and found.hierarchy.memory.parent == delegated
    assert (found.hierarchy.memory / "cgroup.subtree_control").read_text() == "+memory +pids"
    group = RunGroup(found.hierarchy, memory_bytes=1 << 30, processes=8)
    (folder,) = group.folders
    assert (folder / "memory.max").read_text() == str(1 << 30) and (folder / "pids.max").read_text() == "8"
    (folder / "memory.events").write_text("low 0\nhigh 0\nmax 0\noom 0\noom_kill 1\noom_group_kill 0\n")
    assert group.memory_exhausted()


def test_without_a_writable_hierarchy_detect_says_why(tmp_path: Path) -> None:
    (tmp_path / "self").write_text("0::/\n")
    found = detect(root=tmp_path, proc=tmp_path / "self")
    assert found.hierarchy is None and found.problem == "no memory cgroup hierarchy is mounted"


def test_groups_of_processes_that_are_gone_are_swept(tmp_path: Path) -> None:
    v1_tree(tmp_path)
    (tmp_path / "self").write_text(V1)
    dead = subprocess.Popen(["true"])
    dead.wait()
    parent = tmp_path / "memory" / "process_api" / "abc"
    (parent / f"almanac-sandbox-{dead.pid}-aa" / "run-1").mkdir(parents=True)
    (parent / f"almanac-sandbox-{os.getpid()}-bb").mkdir()  # alive: kept
    found = detect(root=tmp_path, proc=tmp_path / "self")
    assert found.hierarchy is not None
    names = sorted(p.name for p in parent.iterdir())
    assert names == sorted([f"almanac-sandbox-{os.getpid()}-bb", found.hierarchy.memory.name])
    found.hierarchy.remove()
    assert not found.hierarchy.memory.exists()
