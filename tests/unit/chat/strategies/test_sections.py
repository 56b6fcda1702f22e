"""Parsing a boost planner's reply into SUMMARY / ANALYSIS / GUIDANCE (pure, table-driven), with
the seed's example replies."""

import pytest

from almanac.chat.strategies.sections import Sections, parse_sections

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
