"""The collaboration loop with scripted models: when the primary is judged stuck the helper is asked,
the primary retries with its plan, `escalation` events say so, stuck text is never shown, and each
model's usage is kept apart."""

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from almanac.billing.pricing import BillingCategory
from almanac.chat.events import ChatEvent, EscalationEvent, TextDeltaEvent, ToolResultEvent, UsageEvent
from almanac.chat.strategies.collaborate import HELP_HEADER, NO_HELP, CollaborateLoop
from almanac.chat.strategies.helper import Helper
from almanac.chat.strategies.relevance import LexicalRelevance
from almanac.chat.strategies.stuck import StuckDetector
from almanac.chat.turn import Admission, LoopLimits, TurnLoop
from almanac.llm.base import Model, ModelUnavailable
from almanac.llm.fake import ScriptedModel, call, calls, reply
from almanac.llm.messages import ToolUseBlock, Usage
from almanac.memory.context import QueryPrompt, Turn
from almanac.tools.base import Tool, ToolContext, ToolError, ToolOutput
from almanac.tools.registry import ToolRegistry
from almanac.tools.runner import ToolOutcome

TASK = "How do I read a CSV file and average a column in Python?"
GOOD = (
    "Use the `csv` module:\n\n```python\nimport csv, statistics\nwith open('data.csv') as f:\n"
    "    print(statistics.mean(float(r['x']) for r in csv.DictReader(f)))\n```\nThis reads the CSV file and "
    "averages the column `x`."
)
STUCK = "I'm not sure how to read a CSV file and average a column in Python."
PLAN = "1. Open the file with csv.DictReader.\n2. Average the column with statistics.mean."


class Lookup:
    name = "lookup"
    description = "Look something up."
    input_schema: Mapping[str, Any] = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    output_schema = None
    billing = BillingCategory.TOOL
    source = "test"

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutput:
        if arguments["q"] == "fail":
            raise ToolError("lookup failed")
        return ToolOutput(f"result for {arguments['q']}")


class Hooks:
    """IDs in call order; every call admitted and recorded with its status."""

    def __init__(self) -> None:
        self.count = 0

    def allocate(self, call: ToolUseBlock) -> tuple[str, ToolContext]:
        self.count += 1
        item_id = f"q1-t{self.count}"
        return item_id, ToolContext("u", "c", 1, "q1", item_id, call.id)

    async def admit(self, calls: Sequence[tuple[ToolUseBlock, Tool, str]]) -> list[Admission]:
        return [Admission(True, 2) for _ in calls]

    def turn_note(self) -> str | None:
        return None

    async def record(
        self, call: ToolUseBlock, item_id: str, outcome: ToolOutcome, admission: Admission
    ) -> ToolResultEvent:
        return ToolResultEvent(
            call.id, call.name, item_id, f"{item_id}-sum", outcome.is_error, outcome.status.value, outcome.content, 1, 2
        )


def collaborate(
    primary: ScriptedModel, helper: ScriptedModel | None = None, *, max_retries: int = 1, max_turns: int = 15
) -> tuple[CollaborateLoop, list[TurnLoop]]:
    hooks, registry, attempts = Hooks(), ToolRegistry([Lookup()]), []

    def new_attempt(system: str, model: Model, done: Sequence[Turn]) -> TurnLoop:
        loop = TurnLoop(
            model=model,
            system=system,
            prompt=QueryPrompt.single(TASK),
            registry=registry,
            hooks=hooks,
            limits=LoopLimits(max(1, max_turns - len(done)), 5, 1000),
        )
        loop.history = list(done)
        attempts.append(loop)
        return loop

    loop = CollaborateLoop(
        primary=primary,
        helper=Helper(helper or primary),
        new_attempt=new_attempt,
        system="SYSTEM",
        task=TASK,
        detector=StuckDetector(),
        relevance=LexicalRelevance(),
        max_retries=max_retries,
        has_tools=True,
        where="c/q1",
    )
    return loop, attempts


async def run(loop: CollaborateLoop) -> list[ChatEvent]:
    return [event async for event in loop.run()]


def text(events: list[ChatEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDeltaEvent))


def escalations(events: list[ChatEvent]) -> list[EscalationEvent]:
    return [e for e in events if isinstance(e, EscalationEvent)]


async def test_a_good_answer_stands_and_the_helper_is_never_asked() -> None:
    primary, helper = ScriptedModel([reply(GOOD)], name="small"), ScriptedModel([], name="big")
    loop, _ = collaborate(primary, helper)
    events = await run(loop)
    assert text(events) == GOOD and escalations(events) == []
    assert helper.requests == [] and loop.turns == 1 and loop.stop_reason == "end_turn"


async def test_a_stuck_answer_is_escalated_and_the_retry_follows_the_plan() -> None:
    primary = ScriptedModel([reply(STUCK), reply(GOOD)], name="small")
    helper = ScriptedModel([reply(f"Here is a plan.\n{PLAN}\nGood luck!")], name="big")
    loop, attempts = collaborate(primary, helper)
    events = await run(loop)
    [escalation] = escalations(events)
    assert escalation == EscalationEvent("explicit_phrase", "small", "big", 1)
    assert text(events) == GOOD  # the stuck answer was held back and never shown
    meta = helper.requests[0].messages[0].text
    assert TASK in meta and STUCK in meta and "explicit_phrase" in meta
    retry_system = primary.requests[1].system
    assert retry_system.startswith("SYSTEM\n\n" + HELP_HEADER.format(reasons="explicit_phrase"))
    assert retry_system.endswith("PLAN:\n" + PLAN)  # distilled: the chatter around the steps is gone
    assert primary.requests[0].system == "SYSTEM" and len(attempts) == 2 and loop.turns == 2


async def test_the_last_attempt_stands_even_when_stuck() -> None:
    stuck = reply(STUCK)
    primary = ScriptedModel([stuck, stuck, stuck], name="small")
    helper = ScriptedModel([reply(PLAN), reply(PLAN)], name="big")
    loop, _ = collaborate(primary, helper, max_retries=2)
    events = await run(loop)
    assert [e.attempt for e in escalations(events)] == [1, 2]
    assert text(events) == STUCK  # shown once: the last attempt's
    assert len(helper.requests) == 2 and len(loop.escalations) == 2


async def test_a_repeating_tool_loop_is_stopped_before_the_next_model_call() -> None:
    again = calls(call("lookup", {"q": "csv"}))
    primary = ScriptedModel([again, again, again, reply(GOOD)], name="small")
    helper = ScriptedModel([reply(PLAN)], name="big")
    loop, attempts = collaborate(primary, helper)
    events = await run(loop)
    [escalation] = escalations(events)
    assert escalation.reason == "repeated_tool_call"
    assert len(primary.requests) == 4  # three calls, then no fourth call in that attempt: the retry answered
    assert sum(isinstance(e, ToolResultEvent) for e in events) == 3 and text(events) == GOOD
    assert 'lookup({"q": "csv"}) → ok: result for csv' in helper.requests[0].messages[0].text
    assert len(attempts[1].history) == 3  # the retry starts with the tool turns already done
    retry_messages = primary.requests[3].messages
    assert sum(1 for m in retry_messages if m.role == "assistant") == 3  # ... and the model sees them
    assert loop.turns == 4


async def test_failing_calls_without_progress_are_escalated() -> None:
    fail, other = calls(call("lookup", {"q": "fail"})), calls(call("lookup", {"q": "x"}))
    primary = ScriptedModel([fail, fail, other, reply(GOOD)], name="small")
    loop, _ = collaborate(primary, ScriptedModel([reply(PLAN)], name="big"))
    events = await run(loop)
    assert [e.reason for e in escalations(events)] == []  # progress on the third turn: not stuck
    primary = ScriptedModel([calls(call("lookup", {"q": "fail"}))] * 3 + [reply(GOOD)], name="small")
    loop, _ = collaborate(primary, ScriptedModel([reply(PLAN)], name="big"))
    events = await run(loop)
    assert [e.reason for e in escalations(events)] == ["repeated_tool_call, no_progress"]


async def test_malformed_tool_calls_are_escalated() -> None:
    broken = ToolUseBlock("toolu_bad", "lookup", {}, parse_error="Expecting value")
    primary = ScriptedModel([calls(broken, call("nope")), reply(GOOD)], name="small")
    loop, _ = collaborate(primary, ScriptedModel([reply(PLAN)], name="big"))
    events = await run(loop)
    assert [e.reason for e in escalations(events)] == ["malformed_tool_calls"]
    assert [e.status for e in events if isinstance(e, ToolResultEvent)] == ["invalid_input", "unknown_tool"]


async def test_an_announced_action_without_a_tool_call_is_escalated() -> None:
    primary = ScriptedModel([reply("Let me check the csv documentation for that."), reply(GOOD)], name="small")
    loop, _ = collaborate(primary, ScriptedModel([reply(PLAN)], name="big"))
    events = await run(loop)
    assert [e.reason for e in escalations(events)] == ["announced_action"]
    assert text(events) == GOOD


async def test_text_before_a_tool_call_is_shown_in_order_and_held_text_is_released_when_good() -> None:
    primary = ScriptedModel([calls(call("lookup", {"q": "csv"}), text="Looking it up."), reply(GOOD)], name="small")
    loop, _ = collaborate(primary)
    events = await run(loop)
    kinds = [type(e).__name__ for e in events if not isinstance(e, UsageEvent)]
    assert kinds == ["TextDeltaEvent", "ToolCallEvent", "ToolResultEvent", "TextDeltaEvent"]
    assert text(events) == "Looking it up." + GOOD


async def test_a_helper_that_fails_leaves_the_primary_to_change_course() -> None:
    primary = ScriptedModel([reply(STUCK), reply(GOOD)], name="small")
    loop, _ = collaborate(primary, ScriptedModel([ModelUnavailable("down")], name="big"))
    events = await run(loop)
    assert len(escalations(events)) == 1 and text(events) == GOOD
    assert primary.requests[1].system == "SYSTEM\n\n" + NO_HELP.format(reasons="explicit_phrase")


async def test_without_a_helper_the_primary_helps_itself() -> None:
    primary = ScriptedModel([reply(STUCK), reply(PLAN), reply(GOOD)], name="small")
    loop, _ = collaborate(primary)
    events = await run(loop)
    [escalation] = escalations(events)
    assert escalation.from_model == escalation.to_model == "small"
    assert primary.requests[1].tools == () and "A smaller model is struggling" in primary.requests[1].messages[0].text
    assert text(events) == GOOD


async def test_each_models_usage_is_kept_apart() -> None:
    primary = ScriptedModel([reply(STUCK), reply(GOOD)], name="small")
    helper = ScriptedModel([replace(reply(PLAN), usage=Usage(300, 40))], name="big")
    loop, _ = collaborate(primary, helper)
    events = await run(loop)
    assert [(e.input_tokens, e.output_tokens) for e in events if isinstance(e, UsageEvent)] == [(10, 5), (10, 5)]
    assert loop.primary_usage == Usage(20, 10) and loop.helper_usage == Usage(300, 40)
    uses = {(use.role, use.model): (use.input_tokens, use.output_tokens, use.calls) for use in loop.model_uses()}
    assert uses == {("chat", "small"): (20, 10, 2), ("helper", "big"): (300, 40, 1)}


async def test_no_retries_means_the_first_answer_stands() -> None:
    primary = ScriptedModel([reply(STUCK)], name="small")
    loop, _ = collaborate(primary, max_retries=0)
    events = await run(loop)
    assert escalations(events) == [] and text(events) == STUCK


async def test_tool_calls_stream_live_while_an_attempt_is_still_being_judged() -> None:
    primary = ScriptedModel([calls(call("lookup", {"q": "a"})), reply(STUCK), reply(GOOD)])
    loop, _ = collaborate(primary, ScriptedModel([reply(PLAN)], name="big"))
    seen: list[str] = []
    async for event in loop.run():
        seen.append(type(event).__name__)
        if isinstance(event, ToolResultEvent):
            assert len(primary.requests) == 1  # shown before the model was called again
    assert seen.index("ToolCallEvent") < seen.index("EscalationEvent")
