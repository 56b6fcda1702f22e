"""The offline model: deterministic, honest that it is offline, picks tools by intent, quotes results."""

from almanac.llm.base import complete
from almanac.llm.events import StreamEnd
from almanac.llm.messages import Message, ModelRequest, ToolResultBlock, ToolSpec, ToolUseBlock
from almanac.llm.providers.offline import OfflineModel
from almanac.tools.builtin.full_context import FullContextTool

FULL = ToolSpec(FullContextTool.name, FullContextTool.description, FullContextTool.input_schema)
HISTORY = (
    Message.user("[ID:q1] Write a retry decorator in Python"),
    Message.assistant(
        '[ID:q1-t1-sum, ref:q1-t1] Tool call search_code({"q":"retry"}): found three retry helpers\n\n'
        "[ID:q1-r-sum, ref:q1-r] Showed a retry decorator with exponential backoff (+ 1 code block: python)"
    ),
)


def ask(text: str, number: int = 2, tools: tuple[ToolSpec, ...] = (FULL,)) -> ModelRequest:
    return ModelRequest("sys", (*HISTORY, Message.user(f"[ID:q{number}] {text}")), tools)


async def test_without_a_matching_intent_it_says_it_is_offline_and_quotes_the_question() -> None:
    response = await complete(OfflineModel(), ask("What is the capital of France?"))
    assert response.tool_calls == ()
    assert "offline model" in response.text and "> What is the capital of France?" in response.text
    assert "ANTHROPIC_API_KEY" in response.text


async def test_saying_it_cannot_answer_is_declared_as_declining() -> None:
    events = [e async for e in OfflineModel().stream(ask("What is the capital of France?"))]
    assert events[-1] == StreamEnd("end_turn", declined=True)


async def test_an_applications_prompt_is_declined_without_being_echoed() -> None:
    prompt = "You are the planner. Reply in this format:\nSUMMARY:\n<the complete final answer for the user>"
    request = ModelRequest("", (Message.user(prompt),), (), purpose="utility")
    events = [e async for e in OfflineModel().stream(request)]
    text = "".join(getattr(e, "text", "") for e in events)
    assert events[-1] == StreamEnd("end_turn", declined=True) and "offline model" in text
    assert "SUMMARY" not in text and "planner" not in text  # its markers would read as an answer in its format


async def test_answers_it_does_give_are_not_declined() -> None:
    tour = [e async for e in OfflineModel().stream(ask("Give me a detailed tour of how Almanac works"))]
    assert tour[-1] == StreamEnd("end_turn", declined=False)
    call = ToolUseBlock("toolu_1", "retrieve_full_context", {"id": "q1-r"})
    quoted = ModelRequest(
        "sys",
        (
            Message.user("[ID:q2] Show me the full code from earlier"),
            Message("assistant", (call,)),
            Message("user", (ToolResultBlock("toolu_1", "[ID:q2-t1] [ID:q1-r] Full text:\ndef retry(): ..."),)),
        ),
        (FULL,),
    )
    assert [e async for e in OfflineModel().stream(quoted)][-1] == StreamEnd("end_turn", declined=False)


async def test_quoting_only_errors_is_declining_too() -> None:
    call = ToolUseBlock("toolu_1", "retrieve_full_context", {"id": "q9-r"})
    failed = ModelRequest(
        "sys",
        (
            Message.user("[ID:q2] Show me the full answer of q9"),
            Message("assistant", (call,)),
            Message("user", (ToolResultBlock("toolu_1", "[ID:q2-t1] There is no item q9-r.", is_error=True),)),
        ),
        (FULL,),
    )
    events = [e async for e in OfflineModel().stream(failed)]
    assert events[-1] == StreamEnd("end_turn", declined=True)
    assert "reported a problem" in "".join(getattr(e, "text", "") for e in events)


async def test_asking_for_the_full_answer_from_earlier_fetches_it_by_id() -> None:
    response = await complete(OfflineModel(), ask("Show me the full code from earlier"))
    assert [(c.name, dict(c.input)) for c in response.tool_calls] == [("retrieve_full_context", {"id": "q1-r"})]


async def test_asking_for_an_earlier_tool_result_picks_the_tool_item() -> None:
    response = await complete(OfflineModel(), ask("give me the complete search result from before"))
    assert [dict(c.input) for c in response.tool_calls] == [{"id": "q1-t1"}]


async def test_ids_named_in_the_question_are_fetched_in_parallel() -> None:
    response = await complete(OfflineModel(), ask("compare q1-t1 and q1-r-sum please"))
    assert [dict(c.input) for c in response.tool_calls] == [{"id": "q1-t1"}, {"id": "q1-r"}]


async def test_without_the_tool_it_does_not_call_it() -> None:
    response = await complete(OfflineModel(), ask("Show me the full code from earlier", tools=()))
    assert response.tool_calls == ()


async def test_after_the_tool_answered_it_quotes_the_result_and_cites_ids() -> None:
    call = ToolUseBlock("toolu_1", "retrieve_full_context", {"id": "q1-r"})
    request = ModelRequest(
        "sys",
        (
            *HISTORY,
            Message.user("[ID:q2] Show me the full code from earlier"),
            Message("assistant", (call,)),
            Message(
                "user",
                (
                    ToolResultBlock(
                        "toolu_1",
                        "[ID:q2-t1] [ID:q1-r] Full text of the answer to q1:\n```python\ndef retry(): ...\n```",
                    ),
                ),
            ),
        ),
        (FULL,),
    )
    response = await complete(OfflineModel(), request)
    assert response.tool_calls == ()
    assert "Here is the full text of q1-r [q2-t1]" in response.text
    assert "```python\ndef retry(): ...\n```" in response.text


async def test_it_is_deterministic_and_streams_word_by_word() -> None:
    model = OfflineModel()
    first = [e async for e in model.stream(ask("anything at all"))]
    second = [e async for e in model.stream(ask("anything at all"))]
    assert first == second
    assert sum(type(e).__name__ == "TextDelta" for e in first) > 20


async def test_asking_for_something_long_streams_a_long_markdown_answer() -> None:
    response = await complete(OfflineModel(), ask("Give me a long explanation of how this works"))
    assert len(response.text) > 3000 and "```python" in response.text and "| `q1-r` | its answer |" in response.text


def documentation_request(text: str) -> ModelRequest:
    doc = ToolSpec("retrieve_documentation", "docs", {"type": "object", "properties": {"query": {"type": "string"}}})
    return ModelRequest("sys", (Message.user(f"[ID:q1] {text}"),), (FULL, doc))


async def test_documentation_questions_call_retrieve_documentation() -> None:
    for question in (
        "How do I use asyncio.TaskGroup?",
        "Show me an example of FastAPI dependencies",
        "what does httpx.Timeout do",
        "FastAPI docs for CORS",
        "parameters of json.dumps",
    ):
        response = await complete(OfflineModel(), documentation_request(question))
        assert [(c.name, dict(c.input)) for c in response.tool_calls] == [
            ("retrieve_documentation", {"query": question})
        ], question
    for chatter in ("hello there", "visit evil.example now", "tell me a joke"):
        assert (await complete(OfflineModel(), documentation_request(chatter))).tool_calls == (), chatter


async def test_a_loosely_phrased_request_about_code_looks_up_the_documentation_too() -> None:
    # no "how do I", no "docs": a word of programming, or a name written as code, says it is about code
    for question in (
        "validate a json schema",
        "python regex finditer example",
        "set default headers on an httpx AsyncClient",
        "what does model_dump return",
        "merge two dictionaries",
        "difference in days between two dates",  # a computation on a type of data
    ):
        response = await complete(OfflineModel(), documentation_request(question))
        assert [c.name for c in response.tool_calls] == ["retrieve_documentation"], question
    for chatter in (
        "What is the capital of France?",
        "thanks, that was helpful",
        "Render this: [click me](javascript:alert(1)) <img src=x onerror=alert(1)>",  # markup says nothing
    ):
        assert (await complete(OfflineModel(), documentation_request(chatter))).tool_calls == (), chatter
    long = await complete(OfflineModel(), documentation_request("Explain retries and timeouts in depth"))
    assert long.tool_calls == () and len(long.text) > 3000  # a long answer asked for: given, as before


async def test_a_task_for_code_asked_plainly_looks_up_the_documentation() -> None:
    # no "how do I", no word of programming: a request that opens with a task code does, done to something named
    for question in (
        "sleep without blocking the event loop",
        "wrap a long paragraph to 70 columns",
        "Checking if a website is up",
        "please compress a folder before sending",
        "I want to get the date 7 days before today",
        "Replace non-ASCII characters with a space",
        "Regular expression to remove line breaks",
    ):
        response = await complete(OfflineModel(), documentation_request(question))
        assert [c.name for c in response.tool_calls] == ["retrieve_documentation"], question
    for chatter in (
        "make me a sandwich",  # a task for a person
        "find a good restaurant near me",
        "write a poem about cats",  # a piece of writing
        "stop it",  # nothing named
        "What is the best time to visit Norway?",
        "tell me a joke",
    ):
        assert (await complete(OfflineModel(), documentation_request(chatter))).tool_calls == (), chatter


async def test_its_usage_is_counted_with_the_shared_estimate_and_marked_estimated() -> None:
    answer = await complete(OfflineModel(), ask("What is the capital of France?"))
    assert answer.usage.estimated and answer.usage.input_tokens > 0 and answer.usage.output_tokens > 0
    calling = await complete(OfflineModel(), ask("Show me the full code from earlier"))
    assert calling.tool_calls and calling.usage.estimated and calling.usage.output_tokens > 0


async def test_a_documentation_result_is_answered_with_the_best_passage_first_and_compactly() -> None:
    call = ToolUseBlock("toolu_1", "retrieve_documentation", {"query": "split a string with a regex"})
    passages = "\n\n".join(
        f"### {n}. {name}\nLibrary: /python/re · Source: https://docs.python.org/3.11/library/re.html#{name}\n\n"
        f"### `{name}(pattern, string)`\n\n{summary}\n\nA second paragraph that stays out of the short list."
        for n, (name, summary) in enumerate(
            [
                ("re.split", "Split the source string by the occurrences of the pattern."),
                ("re.sub", "Return the string obtained by replacing."),
            ],
            start=1,
        )
    )
    body = f"[ID:q1-t1] Documentation for **re** (`/python/re`) from local: 2 passages.\n\n{passages}"
    request = ModelRequest(
        "sys",
        (
            Message.user("[ID:q1] How do I split a string with a regular expression?"),
            Message("assistant", (call,)),
            Message("user", (ToolResultBlock("toolu_1", body),)),
        ),
        (FULL,),
    )
    response = await complete(OfflineModel(), request)
    assert (
        response.text.split("\n\n")[1]
        == "**`re.split`** — [source](https://docs.python.org/3.11/library/re.html#re.split)"
    )
    assert "```python\nre.split(pattern, string)\n```" in response.text
    assert (
        "- [`re.sub`](https://docs.python.org/3.11/library/re.html#re.sub) — Return the string obtained by replacing."
        in response.text
    )
    assert "I quote what the tools returned" not in response.text and "### 2." not in response.text  # no raw dump
