"""The offline model's MCP intents: repository questions → git tools with valid arguments; GitHub
searches → the GitHub search tools."""

from typing import Any

import pytest

from almanac.mcp_client.offline_rules import plan_git, plan_github


@pytest.mark.parametrize(
    ("query", "plan"),
    [
        ("What changed in the last commits?", ("git_log", {"max_count": 10})),
        ("Show the last 3 commits of the repo", ("git_log", {"max_count": 3})),
        ("list 5 recent commits", ("git_log", {"max_count": 5})),
        ("Show me the git history", ("git_log", {"max_count": 10})),
        ("show git status", ("git_status", {})),
        ("Are there uncommitted changes in the repository?", ("git_status", {})),
        ("What's in README.md at HEAD?", ("git_show", {"revision": "HEAD:README.md"})),
        ("show backend/almanac/main.py at HEAD~2", ("git_show", {"revision": "HEAD~2:backend/almanac/main.py"})),
        ("What did the last commit change?", ("git_show", {"revision": "HEAD"})),
        ("show commit 1a91339", ("git_show", {"revision": "1a91339"})),
        ("show the unstaged diff in the repo", ("git_diff_unstaged", {})),
        ("what is staged in git?", ("git_diff_staged", {})),
        ("git diff against main", ("git_diff", {"target": "main"})),
        ("which branches does the repo have?", ("git_branch", {"branch_type": "local"})),
        ("list all git branches", ("git_branch", {"branch_type": "all"})),
    ],
)
def test_repository_questions_plan_git_calls(query: str, plan: tuple[str, dict[str, Any]]) -> None:
    assert plan_git(query) == plan


@pytest.mark.parametrize(
    "query",
    ["How do I cancel an asyncio task?", "Show me the full answer from earlier", "what is the history of Python?"],
)
def test_other_questions_do_not_call_git(query: str) -> None:
    assert plan_git(query) is None


@pytest.mark.parametrize(
    ("query", "plan"),
    [
        (
            "Search GitHub for repositories about vector databases",
            ("search_repositories", {"query": "vector databases"}),
        ),
        ("find rust web frameworks repos on GitHub", ("search_repositories", {"query": "rust web frameworks"})),
        ("search GitHub code for asyncio.TaskGroup", ("search_code", {"query": "asyncio.TaskGroup"})),
        ("find GitHub issues about memory leak in uvicorn", ("search_issues", {"query": "memory leak uvicorn"})),
    ],
)
def test_github_searches_plan_search_calls(query: str, plan: tuple[str, dict[str, Any]]) -> None:
    assert plan_github(query) == plan


@pytest.mark.parametrize("query", ["What is GitHub?", "search the docs for retries", "find repositories about x"])
def test_non_searches_or_non_github_questions_are_left_alone(query: str) -> None:
    assert plan_github(query) is None
