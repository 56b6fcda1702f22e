"""web_search against a local server speaking the Brave Search API's wire format: the key travels
in X-Subscription-Token, results become title/URL/snippet with citations, Brave's highlighting is
stripped; a refused key, rate limits, outages and an unreachable host make the call unavailable
(not charged); no results cost nothing."""

from collections.abc import Iterator

import pytest
from tests.fakes.search_server import KEY, PATH, FakeSearch, result
from tests.fakes.server import ServerThread

from almanac.tools.base import ToolContext, ToolError, ToolUnavailable
from almanac.tools.builtin.web_search import BraveSearch, WebSearchTool

CONTEXT = ToolContext("u1", "c1", 1, "q1", "q1-t1", "toolu_1")
RESULTS = [
    result(
        "What's new in <strong>Python</strong> 3.13",
        "https://docs.python.org/3/whatsnew/3.13.html",
        "Summary of the <strong>release</strong> &amp; highlights:\n a new REPL",
    ),
    result("Python 3.13.0 release [final]", "https://www.python.org/downloads/release/python-3130/", ""),
    {"type": "search_result", "title": "no url"},  # malformed entries are skipped
    result("ftp mirror", "https://example.com/x", "fine"),
]


@pytest.fixture
def fake() -> Iterator[tuple[FakeSearch, str]]:
    search = FakeSearch(results={"python 3.13 release": RESULTS})
    with ServerThread(search.app()) as server:
        yield search, server.url + PATH


def tool(url: str, key: str = KEY, count: int = 5) -> WebSearchTool:
    return WebSearchTool(BraveSearch(key, url=url, timeout_s=5), count=count)


async def test_results_are_listed_and_cited(fake: tuple[FakeSearch, str]) -> None:
    search, url = fake
    output = await tool(url).run({"query": "python 3.13 release"}, CONTEXT)
    assert not output.is_error and not output.free
    assert output.content == (
        "Web results for 'python 3.13 release' (Brave Search):\n"
        "\n1. [What's new in Python 3.13](https://docs.python.org/3/whatsnew/3.13.html)\n"
        "   Summary of the release & highlights: a new REPL\n"
        "\n2. [Python 3.13.0 release \\[final\\]](https://www.python.org/downloads/release/python-3130/)\n"
        "\n3. [ftp mirror](https://example.com/x)\n   fine"
    )
    assert output.data is not None
    assert output.data["citations"] == [
        {"title": "What's new in Python 3.13", "url": "https://docs.python.org/3/whatsnew/3.13.html"},
        {"title": "Python 3.13.0 release [final]", "url": "https://www.python.org/downloads/release/python-3130/"},
        {"title": "ftp mirror", "url": "https://example.com/x"},
    ]
    [request] = search.requests
    assert request["params"] == {"q": "python 3.13 release", "count": "5"}
    assert request["headers"]["x-subscription-token"] == KEY
    assert request["headers"]["accept"] == "application/json"


async def test_the_model_may_ask_for_fewer_results(fake: tuple[FakeSearch, str]) -> None:
    search, url = fake
    output = await tool(url).run({"query": "python 3.13 release", "count": 1}, CONTEXT)
    assert output.data is not None and len(output.data["citations"]) == 1
    assert search.requests[-1]["params"]["count"] == "1"


async def test_no_results_cost_nothing(fake: tuple[FakeSearch, str]) -> None:
    _, url = fake
    output = await tool(url).run({"query": "zxqv nothing"}, CONTEXT)
    assert (output.content, output.free) == ("No web results for 'zxqv nothing'.", True)


@pytest.mark.parametrize(
    ("status", "code", "message"),
    [
        (429, "RATE_LIMITED", "rate limit"),
        (500, "INTERNAL", "failed (HTTP 500)"),
        (403, "SUBSCRIPTION_INACTIVE", "refused the API key (HTTP 403)"),
    ],
)
async def test_provider_failures_make_the_call_unavailable(
    fake: tuple[FakeSearch, str], status: int, code: str, message: str
) -> None:
    search, url = fake
    search.failures.append((status, code))
    with pytest.raises(ToolUnavailable) as raised:
        await tool(url).run({"query": "python 3.13 release"}, CONTEXT)
    assert message in str(raised.value)


async def test_a_wrong_key_is_unavailable_and_a_rejected_query_is_an_error(fake: tuple[FakeSearch, str]) -> None:
    _, url = fake
    with pytest.raises(ToolUnavailable, match="refused the API key \\(HTTP 401\\)"):
        await tool(url, key="wrong").run({"query": "python"}, CONTEXT)
    with pytest.raises(ToolError, match="Unable to validate request parameter"):
        await tool(url).run({"query": "x" * 401}, CONTEXT)


async def test_an_unreachable_provider_is_unavailable() -> None:
    with pytest.raises(ToolUnavailable, match="could not be reached"):
        await tool("http://127.0.0.1:9/res/v1/web/search").run({"query": "python"}, CONTEXT)
