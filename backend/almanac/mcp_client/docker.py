"""Whether Docker can run containers here (the `docker` command exists and its daemon answers)."""

from __future__ import annotations

import asyncio
import shutil


async def docker_problem(*, timeout_s: float = 5.0) -> str | None:
    """None if `docker info` succeeds, else why Docker cannot be used (one line)."""
    command = shutil.which("docker")
    if command is None:
        return "the docker command is not installed"
    try:
        process = await asyncio.create_subprocess_exec(
            command,
            "info",
            "--format",
            "{{.ServerVersion}}",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except OSError as exc:
        return f"cannot run docker: {exc.strerror or exc}"
    try:
        async with asyncio.timeout(timeout_s):
            _, stderr = await process.communicate()
    except TimeoutError:
        process.kill()
        await process.wait()
        return f"`docker info` did not answer within {timeout_s:g} s"
    if process.returncode != 0:
        lines = [line.strip() for line in stderr.decode("utf-8", "replace").splitlines() if line.strip()]
        return lines[-1] if lines else f"`docker info` exited with status {process.returncode}"
    return None
