"""A library's centre, as its own documentation shows it: how many of its other APIs call each API."""

from dataclasses import replace

from tests.rag_support import api_passage, small_index

from almanac.rag.mentions import SATURATION, Mentions


def test_an_api_counts_the_other_apis_whose_passages_call_it() -> None:
    chunks = [
        api_passage("/pypi/orm", "orm.engine.create_engine", "Create an engine. `create_engine(url)`."),
        api_passage("/pypi/orm", "orm.session.Session", "Bind it: `Session(create_engine('sqlite://'))`."),
        api_passage("/pypi/orm", "orm.schema.MetaData", "metadata.create_all(create_engine(url))"),
        api_passage("/pypi/orm", "orm.schema.MetaData", "Again: `create_engine(url)` in a second piece."),
        api_passage("/pypi/orm", "orm.pool.Pool", "Used by orm.create_engine (url) and by `engine.dispose()`."),
    ]
    mentions = Mentions.count(chunks)
    # Session, MetaData (once, though two of its pieces call it) and Pool; not its own passage
    assert mentions.callers["orm.create_engine"] == 3
    # a call through a variable counts for the package whose passage makes it
    assert mentions.callers["orm.dispose"] == 1
    assert mentions.score("orm.engine.create_engine") > mentions.score("orm.engine.Engine.dispose") > 0
    assert mentions.score("orm.session.Session") == 0.0


def test_a_call_qualified_by_another_package_counts_for_that_package() -> None:
    chunks = [
        api_passage("/pypi/web", "web.app.App", "Serve it with `server.run(app)`; see `web.route()`."),
        api_passage("/pypi/server", "server.main.run", "Run an app."),
    ]
    mentions = Mentions.count(chunks)
    assert mentions.callers.get("server.run") == 1
    assert "web.run" not in mentions.callers


def test_private_helpers_short_names_and_one_part_names_do_not_count() -> None:
    chunks = [api_passage("/pypi/orm", "orm.Session", "_helper(x) f(x) ok(x)")]
    assert Mentions.count(chunks).callers == {}
    assert Mentions({"isinstance": 5}).score("isinstance") == 0.0


def test_the_score_saturates() -> None:
    mentions = Mentions({"orm.select": SATURATION, "orm.where": 1000})
    assert mentions.score("orm.sql.select") == 1.0
    assert mentions.score("orm.sql.Select.where") == 1.0


def test_the_index_counts_once_and_keeps_the_counts_while_vectors_are_added() -> None:
    chunks = [
        api_passage("/pypi/orm", "orm.create_engine", "Create an engine."),
        api_passage("/pypi/orm", "orm.Session", "`Session(bind=create_engine(url))`"),
    ]
    index = small_index({"/pypi/orm": "orm"}, chunks)
    counted = index.mentions()
    assert counted.callers == {"orm.create_engine": 1}
    # the embedding publishes the index again and again with more vectors: the same chunks, the same counts
    assert replace(index, hybrid=frozenset({"/pypi/orm"})).mentions() is counted
    assert replace(index, chunks=chunks[:1]).mentions().callers == {}  # other chunks: counted again
