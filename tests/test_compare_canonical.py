"""Canonical value forms: numbers, NaN, temporal values, neo4j values, nested structures."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal
from zoneinfo import ZoneInfo

import neo4j.time as ntime
import numpy as np
import pytest
from neo4j.graph import Graph, Node, Path

from queryeval.metrics import compare_results
from queryeval.metrics.results import NAN, ValuePolicy, canonical

UTC = dt.UTC


DEFAULT = ValuePolicy()


def same(a: object, b: object, policy: ValuePolicy = DEFAULT) -> bool:
    return bool(canonical(a, policy) == canonical(b, policy))


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (1, 1.0),
        (1, Decimal("1.00")),
        (Decimal("0.1"), 0.1),
        (Decimal("2.50"), 2.5),
        (0.0, -0.0),
        (float("nan"), float("nan")),
        (float("nan"), Decimal("NaN")),
        (np.int64(7), 7),
        (np.float32(0.5), 0.5),
        (uuid.UUID(int=5), str(uuid.UUID(int=5))),
        (bytearray(b"ab"), b"ab"),
    ],
)
def test_numbers_and_scalars_equal_by_meaning(a: object, b: object) -> None:
    assert same(a, b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (True, 1),
        (False, 0),
        ("1", 1),
        (0.1 + 0.2, 0.3),
        (None, "None"),
        (None, float("nan")),
    ],
)
def test_values_that_differ(a: object, b: object) -> None:
    assert not same(a, b)


def test_every_nan_is_one_token() -> None:
    assert canonical(float("nan")) is NAN


def test_aware_datetimes_compare_as_instants() -> None:
    paris = dt.datetime(2024, 6, 1, 14, 0, tzinfo=ZoneInfo("Europe/Paris"))
    assert same(paris, dt.datetime(2024, 6, 1, 12, 0, tzinfo=UTC))


def test_naive_datetimes_are_read_in_the_policy_zone() -> None:
    naive = dt.datetime(2024, 6, 1, 12, 0)
    assert same(naive, dt.datetime(2024, 6, 1, 12, 0, tzinfo=UTC))
    paris = ValuePolicy(naive_timezone="Europe/Paris")
    assert same(naive, dt.datetime(2024, 6, 1, 10, 0, tzinfo=UTC), paris)
    strict = ValuePolicy(naive_timezone=None)
    assert not same(naive, dt.datetime(2024, 6, 1, 12, 0, tzinfo=UTC), strict)
    assert same(naive, dt.datetime(2024, 6, 1, 12, 0), strict)


def test_date_equals_its_midnight_unless_told_otherwise() -> None:
    assert same(dt.date(2024, 1, 1), dt.datetime(2024, 1, 1))
    assert not same(dt.date(2024, 1, 1), dt.datetime(2024, 1, 1, 0, 0, 1))
    separate = ValuePolicy(date_equals_midnight=False)
    assert not same(dt.date(2024, 1, 1), dt.datetime(2024, 1, 1), separate)


def test_timespans() -> None:
    assert same(dt.timedelta(hours=1), dt.timedelta(minutes=60))
    assert same(dt.timedelta(days=1), ntime.Duration(days=1))
    assert same(np.timedelta64(90, "s"), dt.timedelta(seconds=90))
    assert not same(dt.timedelta(days=30), ntime.Duration(months=1))


def test_neo4j_temporal_values_keep_nanoseconds() -> None:
    with_ns = ntime.DateTime(2024, 1, 2, 3, 4, 5, 123456789, tzinfo=UTC)
    assert same(with_ns, ntime.DateTime(2024, 1, 2, 3, 4, 5, 123456789, tzinfo=UTC))
    assert not same(with_ns, ntime.DateTime(2024, 1, 2, 3, 4, 5, 123456788, tzinfo=UTC))
    whole = ntime.DateTime(2024, 1, 2, 3, 4, 5, 0, tzinfo=UTC)
    assert same(whole, dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC))
    assert same(ntime.Date(2024, 1, 2), dt.date(2024, 1, 2))
    assert same(ntime.Time(3, 4, 5, 0), dt.time(3, 4, 5))


def test_numpy_datetime64_is_a_naive_instant() -> None:
    assert same(np.datetime64("2024-01-01T00:00:00"), dt.datetime(2024, 1, 1))


def _graph() -> tuple[Node, Node, Path]:
    graph = Graph()
    alice = Node(graph, "db1:1", 1, ["Person"], {"name": "Alice"})
    film = Node(graph, "db1:2", 2, ["Movie"], {"title": "Heat", "year": 1995})
    acted = graph.relationship_type("ACTED_IN")(graph, "db1:3", 3, {"role": "x"})
    acted._start_node, acted._end_node = alice, film
    return alice, film, Path(alice, acted)


def test_graph_values_ignore_database_ids() -> None:
    alice, film, path = _graph()
    other = Node(Graph(), "db2:99", 99, ["Person"], {"name": "Alice"})
    assert same(alice, other)
    assert not same(alice, film)
    assert canonical(path)[0] == "path"
    assert canonical(path) == canonical(_graph()[2])
    assert canonical(alice) == ("node", frozenset({"Person"}), canonical({"name": "Alice"}))


def test_a_relationship_keeps_its_type() -> None:
    # the driver makes one Relationship class per type at run time (module "abc")
    graph = Graph()
    acted = graph.relationship_type("ACTED_IN")(graph, "db1:3", 3, {"role": "x"})
    directed = graph.relationship_type("DIRECTED")(graph, "db1:4", 4, {"role": "x"})
    assert canonical(acted) == ("rel", "ACTED_IN", canonical({"role": "x"}))
    assert not same(acted, directed)
    assert not same(acted, {"role": "x"})


def test_maps_ignore_key_order_lists_do_not() -> None:
    assert same({"a": 1, "b": [1, 2]}, {"b": [1.0, 2], "a": Decimal(1)})
    assert not same([1, 2], [2, 1])
    assert same({1, 2}, {2, 1})


def test_canonical_values_are_hashable() -> None:
    alice, _, path = _graph()
    for value in (alice, path, {"a": [1, {"b": None}]}, [dt.timedelta(1)], {1, 2}):
        hash(canonical(value))


def test_comparison_uses_canonical_forms() -> None:
    pred = (["n", "when", "span"], [(Decimal("1.00"), dt.date(2024, 1, 1), dt.timedelta(hours=1))])
    gold = (["n", "when", "span"], [(1, dt.datetime(2024, 1, 1), ntime.Duration(hours=1))])
    assert compare_results(pred, gold).exact
