"""Code in documentation text: which language a snippet is in, and Markdown fences that say so.

Docstrings carry examples as doctest sessions (`>>> `) or bare fences; a reader (and the web UI's
highlighter) needs them fenced and labelled. Pure functions, no I/O.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^\n`]*)$")
_UNLABELLED = {"", "text", "none", "plain", "plaintext", "code"}

_SHELL = re.compile(r"^\s*(\$ |# )?(pip3?|python3?|uv|npm|npx|yarn|pnpm|curl|git|docker|make|cd|export|apt(-get)?)\b")
_JS = re.compile(
    r"\b(const|let|var)\s+\w+\s*=|=>|\bfunction\s*\w*\s*\(|\bconsole\.\w+\(|\brequire\(|^\s*import .* from ['\"]", re.M
)
_PYTHON = re.compile(
    r"^\s*(>>> |\.\.\. |def |class |import \w|from [\w.]+ import |async def |await |with "
    r"|for .* in .*:|if .*:|@\w|print\()"
    r"|\b(None|True|False|self)\b|^\s*\w+(\.\w+)*\s*=\s*\S",
    re.M,
)


def guess_language(code: str) -> str:
    """'python', 'javascript', 'bash' or '' (unknown) for a snippet, by its most telling lines."""
    lines = [line for line in code.splitlines() if line.strip()]
    if not lines:
        return ""
    if any(line.lstrip().startswith((">>> ", "... ")) for line in lines):
        return "python"
    if sum(bool(_SHELL.match(line)) for line in lines) * 2 >= len(lines):
        return "bash"
    if _JS.search(code) and not re.search(r"^\s*(def |from \w|import \w+$)", code, re.M):
        return "javascript"
    if _PYTHON.search(code):
        return "python"
    return ""


def label_code(markdown: str, *, default: str = "") -> str:
    """`markdown` with every fence that names no language labelled with the guessed one (or
    `default`), and doctest sessions outside fences wrapped in ```python fences."""
    out: list[str] = []
    lines = markdown.split("\n")
    index = 0
    while index < len(lines):
        line = lines[index]
        opening = _FENCE.match(line)
        if opening:
            fence, info = opening["fence"], opening["info"].strip()
            end = index + 1
            while end < len(lines) and not lines[end].strip().startswith(fence[0] * len(fence)):
                end += 1
            body = "\n".join(lines[index + 1 : end])
            if info.lower() in _UNLABELLED:
                info = guess_language(body) or default or info
            out.append(f"{opening['indent']}{fence}{info}")
            out.extend(lines[index + 1 : end + 1])
            index = end + 1
            continue
        if line.lstrip().startswith(">>> "):
            end = index
            while end < len(lines) and lines[end].strip():
                end += 1
            session = [text.strip() for text in lines[index:end]]
            out.extend(["```python", *session, "```"])
            index = end
            continue
        out.append(line)
        index += 1
    return "\n".join(out)
