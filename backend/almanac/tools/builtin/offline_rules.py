"""Teaching the offline model to use the built-in tools (the planning functions are pure).

- "run this Python: print(2**10)", "execute in bash: ls", or a fenced ```python block with "run"
  → `code_execution`;
- "run this SQL: SELECT …", "query the database: …" → `sql_query`;
- "search the web for …" → `web_search`;
- "list my workspace files" → `list_files`; "read notes.txt" → `read_file`;
  "write 'hello' to notes.txt" → `write_file`;
- a request naming a library the documentation knows ("stop retrying after three attempts with tenacity",
  and a listing asked for with one: "list all files in a folder with pathlib"; a name that is an everyday word
  too only where written as a library: "a progress bar with rich") → `retrieve_documentation` (`library_rule`).

The explicit commands (code, SQL, web) are tried before every other rule; the file rules after all
others, so a question about a repository's files still goes to the git tools; the library rule last of all.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from almanac.llm.providers.offline import IntentRule, Situation, names_library
from almanac.llm.providers.offline_intents import PlannedCall

_LANGUAGES = {
    "python": "python",
    "python3": "python",
    "py": "python",
    "javascript": "javascript",
    "js": "javascript",
    "node": "javascript",
    "node.js": "javascript",
    "nodejs": "javascript",
    "bash": "bash",
    "sh": "bash",
    "shell": "bash",
}
_LANGUAGE = r"python3?|py|javascript|js|node(?:\.?js)?|bash|sh|shell"
_RUN = r"(?:please\s+)?(?:can you\s+|could you\s+)?(?:run|execute|evaluate|eval|try)"
_INLINE_CODE = re.compile(
    rf"^\s*{_RUN}\s+(?:this|the following|that|some)?\s*(?:(?P<a>{_LANGUAGE})\s*)?(?:code|program|script|snippet)?"
    rf"\s*(?:(?:in|with|using)\s+(?P<b>{_LANGUAGE}))?\s*:\s*(?P<code>.+?)\s*$",
    re.I | re.S,
)
_FENCE = re.compile(r"```(?P<lang>[\w.+-]*)[^\n]*\n(?P<code>.*?)```", re.S)
_RUN_WORD = re.compile(rf"\b{_RUN}\b", re.I)
_MENTIONED_LANGUAGE = re.compile(rf"\b(?P<lang>{_LANGUAGE})\b", re.I)
_SQL = re.compile(
    r"^\s*(?:please\s+)?(?:(?:run|execute)\s+(?:this\s+|the following\s+)?(?:sql|query)(?:\s+query)?|"
    r"query\s+the\s+database|sql)\s*:\s*(?P<sql>.+?)\s*$",
    re.I | re.S,
)
_WEB = re.compile(
    r"^\s*(?:please\s+)?(?:(?:search|look\s*up|google)\s+(?:the\s+)?(?:web|internet|online)(?:\s+for)?|web\s+search"
    r"(?:\s+for)?)\s*:?\s*(?P<query>.+?)\s*[?.!]?\s*$",
    re.I | re.S,
)
_PATH = r"(?P<path>(?:[\w.-]+/)*[\w-][\w.-]*\.[A-Za-z0-9]{1,10})"
_LIST = re.compile(
    r"\b(?:list|show|what(?:'s| is| are)?|which)\b.*\b(?:files|workspace)\b|\bls\b\s+(?:my\s+)?workspace", re.I
)
# "in a folder": files anywhere, a question about code ("list all files matching *.txt in a folder"), not the workspace
_ANY_FOLDER = re.compile(
    r"\b(?:in|of|from|under|inside)\s+(?:a|an|any|some|each|every|given)\s+(?:\w+\s+)?(?:folder|"
    r"directory|dir|path)\b",
    re.I,
)
_READ = re.compile(
    rf"\b(?:read|open|show(?:\s+me)?|cat|print|display|what'?s in|contents? of)\s+(?:the\s+|my\s+)?(?:file\s+)?"
    rf"{_PATH}(?![\w/])",
    re.I,
)
_WRITE = re.compile(
    r"\b(?:write|save|put|store)\s+(?P<content>\"[^\"]*\"|'[^']*'|“[^”]*”|.+?)\s+(?:in|into|to)\s+"
    rf"(?:(?:the|my)\s+)?(?:workspace\s+)?(?:file\s+)?{_PATH}\s*[.!]?\s*$",
    re.I | re.S,
)


def plan_code(query: str) -> tuple[str, str] | None:
    """(language, code) when the message asks to run a program, else None."""
    fence = _FENCE.search(query)
    if fence and _RUN_WORD.search(query[: fence.start()]):
        language = _LANGUAGES.get(fence["lang"].lower()) or _mentioned(query[: fence.start()])
        return (language, fence["code"].strip("\n")) if language and fence["code"].strip() else None
    inline = _INLINE_CODE.match(query)
    if inline:
        language = _LANGUAGES.get((inline["a"] or inline["b"] or "").lower())
        if language and inline["code"].strip():
            return language, inline["code"].strip().strip("`").strip()
    return None


def _mentioned(text: str) -> str | None:
    found = _MENTIONED_LANGUAGE.search(text)
    return _LANGUAGES.get(found["lang"].lower()) if found else None


def plan_sql(query: str) -> str | None:
    """The statement of "run this SQL: …", else None."""
    fence = _FENCE.search(query)
    if fence and fence["lang"].lower() == "sql" and _RUN_WORD.search(query[: fence.start()]):
        return fence["code"].strip() or None
    match = _SQL.match(query)
    return match["sql"].strip().strip("`").strip() if match else None


def plan_web(query: str) -> str | None:
    """The search terms of "search the web for …", else None."""
    match = _WEB.match(query)
    return match["query"].strip("\"'“” ") or None if match else None


def plan_files(query: str) -> PlannedCall | None:
    """`write_file`, `read_file` or `list_files` for a message about the workspace, else None."""
    if write := _WRITE.search(query):
        content = write["content"].strip()
        if content[:1] in "\"'“" and len(content) >= 2:
            content = content[1:-1]
        return PlannedCall("write_file", {"path": write["path"], "content": content})
    if read := _READ.search(query):
        return PlannedCall("read_file", {"path": read["path"]})
    if _LIST.search(query) and not _ANY_FOLDER.search(query):
        return PlannedCall("list_files", {})
    return None


def command_rule(situation: Situation) -> list[PlannedCall]:
    """Explicit commands: run code, run SQL, search the web."""
    tools = situation.tool_names
    if "code_execution" in tools and (code := plan_code(situation.query)):
        return [PlannedCall("code_execution", {"language": code[0], "code": code[1]})]
    if "sql_query" in tools and (sql := plan_sql(situation.query)):
        return [PlannedCall("sql_query", {"query": sql})]
    if "web_search" in tools and (terms := plan_web(situation.query)):
        return [PlannedCall("web_search", {"query": terms})]
    return []


def files_rule(situation: Situation) -> list[PlannedCall]:
    """Messages about the workspace's files."""
    planned = plan_files(situation.query)
    return [planned] if planned is not None and planned.name in situation.tool_names else []


def library_rule(libraries: Callable[[], Iterable[str]]) -> IntentRule:
    """A request naming one of `libraries` (read when asked: the documentation index may still be building;
    `names_library`) → `retrieve_documentation` with it."""

    def rule(situation: Situation) -> list[PlannedCall]:
        if "retrieve_documentation" not in situation.tool_names or not names_library(situation.query, libraries()):
            return []
        return [PlannedCall("retrieve_documentation", {"query": situation.query})]

    return rule


def files_rule_for(libraries: Callable[[], Iterable[str]]) -> IntentRule:
    """`files_rule`, except that a listing asked for with a library ("list all files in a directory recursively
    with pathlib") is a question about code, left to the documentation (`library_rule`)."""
    names_a_library = library_rule(libraries)

    def rule(situation: Situation) -> list[PlannedCall]:
        planned = files_rule(situation)
        if planned and planned[0].name == "list_files" and names_a_library(situation):
            return []
        return planned

    return rule


def teach_tools(model: object, libraries: Callable[[], Iterable[str]] = lambda: ()) -> None:
    """Add these rules to `model` if it is the offline model (it has `add_rule`); `libraries` names the
    libraries the documentation tool knows."""
    add_rule = getattr(model, "add_rule", None)
    if callable(add_rule):
        add_rule(command_rule, first=True)
        add_rule(files_rule_for(libraries))
        add_rule(library_rule(libraries), last=True)
