"""How the offline model picks the built-in tools (table-driven), and that its explicit commands
win over the documentation rule while repository questions still go to git."""

import pytest

from almanac.llm.providers.offline import OfflineModel, Situation
from almanac.llm.providers.offline_intents import PlannedCall
from almanac.tools.builtin.offline_rules import library_rule, plan_code, plan_files, plan_sql, plan_web, teach_tools


@pytest.mark.parametrize(
    ("message", "planned"),
    [
        ("run this Python: print(2**10)", ("python", "print(2**10)")),
        ("Run this python code: `print(1)`", ("python", "print(1)")),
        ("please execute the following JavaScript:\nconsole.log(6 * 7)", ("javascript", "console.log(6 * 7)")),
        ("run this in bash: ls -la /tmp", ("bash", "ls -la /tmp")),
        (
            "Can you run this?\n```python\nimport sys\nprint(sys.version)\n```",
            ("python", "import sys\nprint(sys.version)"),
        ),
        ("Try this node snippet:\n```\nconsole.log(1)\n```", ("javascript", "console.log(1)")),
        ("run this: ```sh\necho hi\n```", ("bash", "echo hi")),
        ("How do I run Python code from bash?", None),
        ("```python\nprint(1)\n```\nwhat does this print?", None),
        ("run this Cobol: DISPLAY 'HI'", None),
    ],
)
def test_code(message: str, planned: tuple[str, str] | None) -> None:
    assert plan_code(message) == planned


@pytest.mark.parametrize(
    ("message", "planned"),
    [
        ("list my workspace files", PlannedCall("list_files", {})),
        ("What files are in my workspace?", PlannedCall("list_files", {})),
        ("list all files matching *.txt in a folder", None),  # files in any folder: a question about code
        ("read notes.txt", PlannedCall("read_file", {"path": "notes.txt"})),
        ("show me data/out.csv please", PlannedCall("read_file", {"path": "data/out.csv"})),
        ("what's in notes.txt?", PlannedCall("read_file", {"path": "notes.txt"})),
        (
            "write 'hello world' to notes.txt",
            PlannedCall("write_file", {"path": "notes.txt", "content": "hello world"}),
        ),
        ('save "a, b" into the file data/x.csv', PlannedCall("write_file", {"path": "data/x.csv", "content": "a, b"})),
        ("How do I read a JSON file in Python?", None),
        ("what is a monad?", None),
    ],
)
def test_files(message: str, planned: PlannedCall | None) -> None:
    assert plan_files(message) == planned


def test_sql_and_web() -> None:
    assert plan_sql("run this SQL: SELECT count(*) FROM orders") == "SELECT count(*) FROM orders"
    assert plan_sql("Query the database: select 1") == "select 1"
    assert plan_sql("execute this query:\n```sql\nSELECT 2\n```") == "SELECT 2"
    assert plan_sql("what is SQL?") is None
    assert plan_web("search the web for python 3.13 release notes") == "python 3.13 release notes"
    assert plan_web("Web search: 'htmx 2'") == "htmx 2"
    assert plan_web("search GitHub for repositories about htmx") is None


def situation(query: str, *tools: str) -> Situation:
    return Situation(query=query, query_number=1, items=(), tool_names=frozenset(tools))


def test_taught_rules_run_code_before_documentation_and_files_after_everything() -> None:
    model = OfflineModel()
    teach_tools(model)
    first, *_, last = model.rules
    tools = ("retrieve_documentation", "code_execution", "read_file", "list_files")
    code = "run this Python: print('how to install numpy')"  # would also match the documentation rule
    assert first(situation(code, *tools)) == [
        PlannedCall("code_execution", {"language": "python", "code": "print('how to install numpy')"})
    ]
    assert last(situation("read notes.txt", *tools)) == [PlannedCall("read_file", {"path": "notes.txt"})]
    assert last(situation("read notes.txt", "retrieve_documentation")) == []  # only tools that exist
    assert first(situation(code, "retrieve_documentation")) == []


def plan(model: OfflineModel, message: str, *tools: str) -> list[PlannedCall]:
    return next((calls for rule in [*model.rules, *model.last] if (calls := rule(situation(message, *tools)))), [])


def test_a_request_naming_a_library_the_documentation_knows_looks_it_up_after_every_other_rule() -> None:
    model = OfflineModel()
    teach_tools(model, lambda: ["tenacity", "time", "notes", "sqlalchemy"])
    tools = ("retrieve_documentation", "read_file")
    for question in (
        "stop retrying after three attempts with tenacity",
        "roll back the current transaction of a sqlalchemy session",
    ):
        assert plan(model, question, *tools) == [PlannedCall("retrieve_documentation", {"query": question})]
    assert plan(model, "read notes.txt", *tools) == [PlannedCall("read_file", {"path": "notes.txt"})]  # files first
    assert plan(model, "what time is it", *tools) == []  # a library named by an everyday word alone is no sign
    # … unless the request writes it as a library: after "with", before "module", or as a dotted name's first part
    rule = library_rule(lambda: ["time", "click"])
    for question in ("a progress bar with click", "what does the time module offer", "is time.monotonic safe"):
        assert rule(situation(question, *tools)) == [PlannedCall("retrieve_documentation", {"query": question})]
    for chatter in ("click the button", "visit time.example now"):  # a web address is no library's dotted name
        assert rule(situation(chatter, *tools)) == []
    listing = "list all files in a folder recursively with pathlib"
    model = OfflineModel()
    teach_tools(model, lambda: ["pathlib"])
    assert plan(model, listing, "retrieve_documentation", "list_files")[0].name == "retrieve_documentation"
    assert plan(model, "list my workspace files", "retrieve_documentation", "list_files")[0].name == "list_files"
    assert plan(model, "stop retrying with tenacity", "read_file") == []  # only tools that exist
