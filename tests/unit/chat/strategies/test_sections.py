"""Parsing a boost planner's reply into SUMMARY / ANALYSIS / GUIDANCE (pure, table-driven), with
the seed's example replies; bodies that hold Markdown come back verbatim (tables and properties);
a streamed reply releases its summary as it arrives."""

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from almanac.chat.strategies.sections import Sections, SummaryStream, parse_sections

SALES = (
    "ANALYSIS:\nThe user requests sales data analysis. Initial context: We need to locate and process sales data "
    "from 2024.\n\nGUIDANCE:\n1. Call read_file with path: '/data/sales_2024.csv'\n2. Create a visualization using "
    "the data\n3. Call write_file with path: '/reports/sales_analysis.html' and content: Generate an HTML report"
)
DEBUG = (
    "ANALYSIS:\nUser wants to debug a failing API endpoint. Initial context: The endpoint returns 500 errors. First "
    "uncertainty: Is this a code issue or configuration problem? Potential path 1: Check logs first. The approach is "
    "sequential: logs → code review → database check."
)


@pytest.mark.parametrize(
    ("reply", "expected", "kind"),
    [
        (
            SALES,
            Sections(
                analysis="The user requests sales data analysis. Initial context: We need to locate and process sales "
                "data from 2024.",
                guidance="1. Call read_file with path: '/data/sales_2024.csv'\n"
                "2. Create a visualization using the data\n"
                "3. Call write_file with path: '/reports/sales_analysis.html' and content: Generate an HTML report",
            ),
            "guidance",
        ),
        (
            "GUIDANCE:\nCall search_web with query: 'latest Node.js performance optimizations'",
            Sections(guidance="Call search_web with query: 'latest Node.js performance optimizations'"),
            "guidance",
        ),
        (DEBUG, Sections(analysis=DEBUG.removeprefix("ANALYSIS:\n")), "unusable"),
        ("Instructions:\nCall bash with command: 'ls'", Sections(guidance="Call bash with command: 'ls'"), "guidance"),
        (
            "SUMMARY:\nThe answer to your question is 42.",
            Sections(summary="The answer to your question is 42."),
            "summary",
        ),
        (
            "ANALYSIS:\na\n\nGUIDANCE:\nb\n\nSUMMARY:\nc",
            Sections(summary="c", analysis="a", guidance="b"),
            "summary",
        ),
        ("**Analysis:** think\n**Guidance:** act", Sections(analysis="think", guidance="act"), "guidance"),
        ("## Reasoning\nwhy\n\n## Steps\n1. do", Sections(analysis="why", guidance="1. do"), "guidance"),
        ("**GUIDANCE**:\nstep one", Sections(guidance="step one"), "guidance"),
        ("guidance: lower case works", Sections(guidance="lower case works"), "guidance"),
        ("Plan:\n- call read_file", Sections(guidance="- call read_file"), "guidance"),
        ("Final answer: Paris", Sections(summary="Paris"), "summary"),
        ("SUMMARY:\n\nGUIDANCE:\nCall x", Sections(guidance="Call x"), "guidance"),
        ("I would read the file first.", Sections(), "unusable"),
        ("", Sections(), "unusable"),
        ("The plan is simple: read it.", Sections(), "unusable"),
    ],
    ids=[
        "analysis-and-guidance",
        "guidance-only",
        "sequential-analysis-without-guidance",
        "instructions-heading",
        "summary",
        "all-three-summary-wins",
        "bold-inline",
        "markdown-headings-synonyms",
        "bold-outside-colon",
        "lower-case",
        "plan-heading",
        "final-answer",
        "empty-summary-is-missing",
        "garbage",
        "empty",
        "word-mid-sentence-is-not-a-heading",
    ],
)
def test_sections(reply: str, expected: Sections, kind: str) -> None:
    sections = parse_sections(reply)
    assert sections == expected
    assert sections.kind == kind


# --- Markdown inside a section is content; a section ends only at another template marker ---------

VENV_STEPS = "To set this up you need a virtualenv.\n\n## Steps\n1. python -m venv .venv\n2. pip install -e ."
FENCED = "Run this:\n\n```bash\nSUMMARY: not a marker inside a fence\nGUIDANCE: nor this\n```\n\nThen you are done."
RUNNING_TEXT = (
    "The summary: keep it short. Read the plan: steps first, then analysis: what went wrong.\n"
    "- Instructions: follow the guidance below\n"
    "> Reasoning matters"
)
BODIES = {
    "heading-and-list": VENV_STEPS,
    "synonym-headings": (
        "Intro.\n\n## Plan\n- a\n\n### Instructions\n1. b\n\n**Reasoning:** c\n\nThoughts: d\nNext steps: e"
    ),
    "code-fence": FENCED,
    "tilde-fence": "~~~\n## Summary\nANALYSIS: fenced\n~~~\nafter",
    "marker-words-in-running-text": RUNNING_TEXT,
    "quotes-kept": "Call bash with command: \"git status\"\nthen 'git add .'",
    "bold-and-emphasis-kept": "**Paris** is the _capital_ of France.\n**Note:** it is big.",
    "table": "| step | command |\n|---|---|\n| 1 | `make` |",
}


@pytest.mark.parametrize("body", BODIES.values(), ids=BODIES.keys())
@pytest.mark.parametrize("marker", ["SUMMARY:", "**Summary:**", "## Summary", "summary:"])
def test_a_summary_body_is_passed_on_verbatim(marker: str, body: str) -> None:
    sections = parse_sections(f"{marker}\n{body}\n")
    assert sections == Sections(summary=body)


@pytest.mark.parametrize("body", BODIES.values(), ids=BODIES.keys())
def test_analysis_and_guidance_bodies_are_passed_on_verbatim(body: str) -> None:
    sections = parse_sections(f"ANALYSIS:\n{body}\n\nGUIDANCE:\n{body}")
    assert sections == Sections(analysis=body, guidance=body)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (
            'GUIDANCE:\n1. Call bash with command: "git status"',
            Sections(guidance='1. Call bash with command: "git status"'),
        ),
        ('SUMMARY: "Paris"', Sections(summary='"Paris"')),
        ("SUMMARY: **Paris** is it.", Sections(summary="**Paris** is it.")),
        (
            "SUMMARY:\nfirst\n\nGUIDANCE:\nsecond\n\nSUMMARY:\nthird",
            Sections(summary="first\n\nthird", guidance="second"),
        ),
        ("Final answer: Paris\n\n## Steps\n1. go", Sections(summary="Paris\n\n## Steps\n1. go")),
        ("Plan:\n1. read\n\nFinal answer:\n## Done\nok", Sections(guidance="1. read", summary="## Done\nok")),
    ],
    ids=[
        "closing-quote-kept",
        "quoted-answer-kept",
        "leading-bold-kept",
        "summary-twice",
        "synonym-summary-to-end",
        "synonym-plan-then-summary",
    ],
)
def test_edge_cases(reply: str, expected: Sections) -> None:
    assert parse_sections(reply) == expected


# --- Properties ----------------------------------------------------------------------------------

_MARKER_LINE = re.compile(
    r"^[ \t]*(?:>[ \t]*)?(?:#{1,6}[ \t]*)?(?:\*\*|__|\*|_)?[ \t]*(?:summary|analysis|guidance)\b", re.I | re.M
)
_lines = st.lists(
    st.one_of(
        st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\n"), max_size=40),
        st.sampled_from(
            [
                "## Steps",
                "### Plan",
                "- item",
                "1. first",
                "```",
                "```python",
                "~~~",
                "> quote",
                "**bold**",
                "Instructions: do it",
                "Reasoning: because",
                "the summary: x",
                "see GUIDANCE: below",
                "",
            ]
        ),
    ),
    max_size=12,
)


def _body(lines: list[str]) -> str:
    """A body whose lines never start with a template marker, its code fences closed."""
    kept = [line for line in lines if not _MARKER_LINE.match(line)]
    fence = ""
    for line in kept:
        run = re.match(r"[ \t]*(`{3,}|~{3,})", line)
        if run and not fence:
            fence = run.group(1)
        elif run and run.group(1)[0] == fence[0] and len(run.group(1)) >= len(fence) and not line[run.end() :].strip():
            fence = ""
    return "\n".join([*kept, fence] if fence else kept).strip()


@given(_lines, st.sampled_from(["SUMMARY:", "## Summary", "**SUMMARY:**"]))
def test_any_summary_body_without_marker_lines_comes_back_whole(lines: list[str], marker: str) -> None:
    body = _body(lines)
    assert parse_sections(f"{marker}\n{body}").summary == body


@given(_lines, _lines)
def test_any_analysis_and_guidance_bodies_come_back_whole(first: list[str], second: list[str]) -> None:
    analysis, guidance = _body(first), _body(second)
    sections = parse_sections(f"ANALYSIS:\n{analysis}\n\nGUIDANCE:\n{guidance}\n")
    assert (sections.analysis, sections.guidance) == (analysis, guidance)


# --- Streaming: the summary is released as it arrives, and is exactly what the parser finds ------


@pytest.mark.parametrize("step", [1, 2, 5, 1000])
def test_a_streamed_summary_is_released_before_the_reply_ends(step: int) -> None:
    reply = f"SUMMARY:\n{VENV_STEPS}\n\nmore text that follows"
    reader = SummaryStream()
    released = [reader.feed(reply[i : i + step]) for i in range(0, len(reply), step)]
    assert "".join(released).startswith("To set this up you need a virtualenv.")  # before finish()
    assert "".join(released) + reader.finish() == parse_sections(reply).summary
    assert reader.streaming and reader.sections.kind == "summary"


def test_a_guidance_reply_releases_nothing() -> None:
    reader = SummaryStream()
    assert reader.feed("ANALYSIS:\nthink\n\nGUIDANCE:\n1. Call read_file") == ""
    assert reader.finish() == "" and not reader.streaming and reader.sections.guidance == "1. Call read_file"


def test_a_marker_split_across_chunks_is_not_released_as_text() -> None:
    reader = SummaryStream()
    out = reader.feed("SUMMARY:\nParis.\nGUI") + reader.feed("DANCE:\nCall x") + reader.finish()
    assert out == "Paris." and reader.sections == Sections(summary="Paris.", guidance="Call x")


@given(
    st.lists(
        st.one_of(
            st.sampled_from(
                [
                    "SUMMARY:",
                    "ANALYSIS:",
                    "GUIDANCE:",
                    "## Summary",
                    "**Guidance:**",
                    "SUMMARY: inline",
                    "```",
                    "## Steps",
                    "Final answer: x",
                    "",
                    "  ",
                    "summary",
                    "**Summ",
                    "text",
                ]
            ),
            st.text(max_size=30),
        ),
        max_size=14,
    ),
    st.lists(st.integers(min_value=1, max_value=12), min_size=1, max_size=30),
)
def test_streamed_summary_equals_the_parsed_summary(lines: list[str], steps: list[int]) -> None:
    reply = "\n".join(lines)
    reader = SummaryStream()
    out, position, index = [], 0, 0
    while position < len(reply):
        size = steps[index % len(steps)]
        out.append(reader.feed(reply[position : position + size]))
        position, index = position + size, index + 1
    out.append(reader.finish())
    assert "".join(out) == parse_sections(reply).summary
    assert reader.sections == parse_sections(reply)
