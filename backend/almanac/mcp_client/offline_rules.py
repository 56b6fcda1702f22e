"""Teaching the offline model to use MCP tools: questions about a repository's history or files
call the git server's tools (with a `repo_path` inside its configured repository), and, when the
GitHub server is up, repository / code / issue searches call its search tools.

The planning functions are pure (`plan_git`, `plan_github`); the rules wrap them with what the
running client knows (which registry names exist, which repository the git server serves).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from almanac.llm.providers.offline import IntentRule, Situation, names_library
from almanac.llm.providers.offline_intents import PlannedCall
from almanac.mcp_client.client import McpClient

Plan = tuple[str, dict[str, Any]]  # (the server's tool name, arguments)

_GITISH = re.compile(
    r"\b(git|commits?|committed|branch(es)?|HEAD|repo|repository|working tree|staged|unstaged|diff)\b", re.I
)
_PATH = re.compile(r"(?<![\w/.-])(?P<path>(?:[\w.-]+/)*[\w-]+\.[A-Za-z0-9]{1,10}|(?:[\w.-]+/)+[\w.-]+)(?![\w/])")
_REVISION = re.compile(r"\b(?:at|in|from|on)\s+(?P<rev>HEAD(?:[~^]\d*)*|[0-9a-f]{7,40}\b|v?\d+(?:\.\d+)+)", re.I)
_SHA = re.compile(r"\b(?P<sha>[0-9a-f]{7,40})\b")
_FILE_WORDS = re.compile(r"\b(what'?s in|contents?|show|cat|read|print|open|file)\b", re.I)
_LAST_COMMIT = re.compile(r"\b(last|latest|most recent|newest)\s+commit\b(?!s)", re.I)
_COUNT = re.compile(r"\b(?:last|latest|recent|past)\s+(?P<a>\d{1,3})\b|\b(?P<b>\d{1,3})\s+(?:\w+\s+)?commits\b", re.I)
_LOG = re.compile(r"\b(commits|history|git log|log|changed|changes|recently|who committed|changelog)\b", re.I)
_STATUS = re.compile(r"\b(status|uncommitted|working tree|modified files|untracked)\b", re.I)
_BRANCHES = re.compile(r"\bbranch(es)?\b", re.I)
_DIFF_TARGET = re.compile(
    r"\bdiff(?:erence)?\s+(?:between\s+\S+\s+and|against|with|to|from)\s+(?P<target>[\w./~^-]+)", re.I
)

_GITHUB = re.compile(r"\bgithub\b", re.I)
_SEARCH = re.compile(r"\b(search|find|look\s*up|lookup|looking for|which|list|discover|recommend)\b", re.I)
_KINDS = (
    ("search_code", re.compile(r"\b(code|snippets?|usages?|implementations?)\b", re.I)),
    ("search_issues", re.compile(r"\b(issues?|bugs?|pull requests?|PRs?)\b", re.I)),
    ("search_repositories", re.compile(r"\b(repos?|repositories|projects?|librar(y|ies)|packages?)\b", re.I)),
)
_FILLER = re.compile(
    r"\b(please|can you|could you|search|find|look\s*up|lookup|looking for|which|list|discover|recommend|"
    r"on|in|at|from|github|for|me|some|the|a|an|any|all|repos?|repositories|projects?|librar(y|ies)|packages?|"
    r"code|snippets?|issues?|about|related to|that|are|is|there|with|of|what|good|popular|best)\b",
    re.I,
)


def plan_git(query: str) -> Plan | None:
    """The git tool and arguments (without `repo_path`) a question calls for, or None."""
    if not _GITISH.search(query):
        return None
    path = _PATH.search(query)
    if path and _FILE_WORDS.search(query):
        revision = _REVISION.search(query)
        return "git_show", {"revision": f"{revision['rev'] if revision else 'HEAD'}:{path['path']}"}
    sha = _SHA.search(query)
    if sha and re.search(r"\bcommit\b", query, re.I):
        return "git_show", {"revision": sha["sha"]}
    if _LAST_COMMIT.search(query):
        return "git_show", {"revision": "HEAD"}
    if target := _DIFF_TARGET.search(query):
        return "git_diff", {"target": target["target"]}
    if re.search(r"\bunstaged\b", query, re.I):
        return "git_diff_unstaged", {}
    if re.search(r"\bstaged\b", query, re.I):
        return "git_diff_staged", {}
    if _STATUS.search(query):
        return "git_status", {}
    if _BRANCHES.search(query) and not _LOG.search(query):
        kind = "local"
        if re.search(r"\ball\b", query, re.I):
            kind = "all"
        elif re.search(r"\bremote", query, re.I):
            kind = "remote"
        return "git_branch", {"branch_type": kind}
    if _LOG.search(query):
        count = _COUNT.search(query)
        number = int(count["a"] or count["b"]) if count else 10
        return "git_log", {"max_count": max(1, min(number, 50))}
    return None


def plan_github(query: str) -> Plan | None:
    """The GitHub search tool and query a question calls for, or None."""
    if not (_GITHUB.search(query) and _SEARCH.search(query)):
        return None
    tool = next((name for name, words in _KINDS if words.search(query)), None)
    if tool is None:
        return None
    terms = " ".join(_FILLER.sub(" ", re.sub(r"[?!,;:\"“”]|\.(?=\s|$)", " ", query)).split())
    return (tool, {"query": terms}) if terms else None


# what only a repository has: a library's question may commit a session or log changes, not list commits or branches
_REPOSITORY = re.compile(
    r"\b(git|repo|repository|working tree|commits|history|changelog|branch(es)?|diff|(un)?staged|uncommitted|HEAD)\b"
    r"|\b(last|latest|most recent|newest)\s+commit\b",
    re.I,
)


def git_rule(client: McpClient, libraries: Callable[[], Iterable[str]] = lambda: ()) -> IntentRule:
    """The rule for servers that serve git tools over a configured repository. A request naming one of
    `libraries` (the documentation's) and not the repository is about that library's API, whatever git words it
    uses ("open a sqlalchemy session and commit changes"): not this rule's."""

    def rule(situation: Situation) -> list[PlannedCall]:
        plan = plan_git(situation.query)
        if plan is None:
            return []
        if names_library(situation.query, libraries()) and not _REPOSITORY.search(situation.query):
            return []
        tool, arguments = plan
        for server, names in _servers_with(client, tool):
            repository = client.servers[server].config.repository
            name = _registry_name(names, tool)
            if repository and name in situation.tool_names:
                return [PlannedCall(name, {"repo_path": repository, **arguments})]
        return []

    return rule


def github_rule(client: McpClient) -> IntentRule:
    """The rule for a server that offers GitHub's search tools."""

    def rule(situation: Situation) -> list[PlannedCall]:
        plan = plan_github(situation.query)
        if plan is None:
            return []
        tool, arguments = plan
        for _, names in _servers_with(client, tool):
            name = _registry_name(names, tool)
            if name in situation.tool_names:
                return [PlannedCall(name, arguments)]
        return []

    return rule


def teach(model: object, client: McpClient, libraries: Callable[[], Iterable[str]] = lambda: ()) -> None:
    """Add the MCP rules to `model` if it is the offline model (it has `add_rule`); `libraries` names the
    libraries the documentation tool knows."""
    add_rule = getattr(model, "add_rule", None)
    if callable(add_rule):
        add_rule(github_rule(client))  # first: "search GitHub for git tools" is a search
        add_rule(git_rule(client, libraries))


def _servers_with(client: McpClient, tool: str) -> list[tuple[str, Mapping[str, str]]]:
    return [(server, names) for server in client.servers if tool in (names := client.tool_names(server)).values()]


def _registry_name(names: Mapping[str, str], tool: str) -> str:
    return next((registered for registered, remote in names.items() if remote == tool), "")
