"""Gates: absolute and baseline-relative bounds, missing values and missing baselines."""

from __future__ import annotations

import pytest

from queryeval.errors import InputError
from queryeval.stats import check_gates, parse_gate


def _summary(**systems: dict) -> dict:
    return {
        "systems": {
            name: {
                "pass_rate": s.get("pass_rate"),
                "scorers": {
                    "execution_match": {
                        "mean": s.get("match"),
                        "metrics": {"f1": {"mean": s.get("f1")}},
                    }
                },
            }
            for name, s in systems.items()
        }
    }


@pytest.mark.parametrize(
    ("text", "metric", "op", "bound", "relative"),
    [
        ("pass_rate >= 0.8", "pass_rate", ">=", 0.8, None),
        ("x.y < .5", "x.y", "<", 0.5, None),
        ("execution_match >= baseline - 0.02", "execution_match", ">=", 0.02, "-"),
        ("pass_rate>=baseline*0.95", "pass_rate", ">=", 0.95, "*"),
        ("pass_rate >= baseline", "pass_rate", ">=", 0.0, "+"),
        ("cost <= baseline + 1.5", "cost", "<=", 1.5, "+"),
    ],
)
def test_parse(text: str, metric: str, op: str, bound: float, relative: str | None) -> None:
    gate = parse_gate(text)
    assert (gate.metric, gate.op, gate.bound, gate.relative) == (metric, op, bound, relative)


@pytest.mark.parametrize("text", ["pass_rate >= high", "pass_rate => 0.8", "baseline - 1 <= x"])
def test_bad_gate_names_the_expected_form(text: str) -> None:
    with pytest.raises(InputError, match="METRIC OP baseline"):
        parse_gate(text)


def test_absolute_gates_per_system() -> None:
    summary = _summary(a={"pass_rate": 0.9, "match": 0.5}, b={"pass_rate": 0.7, "match": None})
    results = check_gates(["pass_rate >= 0.8", "execution_match > 0.4"], summary)
    by = {(r["gate"], r["system"]): r["passed"] for r in results}
    assert by == {
        ("pass_rate >= 0.8", "a"): True,
        ("pass_rate >= 0.8", "b"): False,
        ("execution_match > 0.4", "a"): True,
        ("execution_match > 0.4", "b"): False,  # a missing value fails
    }


def test_relative_gate_allows_the_stated_drop_and_no_more() -> None:
    baseline = _summary(a={"match": 0.80}, b={"match": 0.80})
    current = _summary(a={"match": 0.78}, b={"match": 0.77})
    results = check_gates(["execution_match >= baseline - 0.02"], current, baseline)
    by = {r["system"]: r for r in results}
    assert by["a"]["passed"] is True  # exactly the allowed drop (float rounding tolerated)
    assert by["b"]["passed"] is False
    assert by["b"]["baseline_value"] == 0.80
    assert by["b"]["bound"] == pytest.approx(0.78)


def test_relative_gate_multiplicative_and_sub_metric() -> None:
    baseline = _summary(a={"pass_rate": 0.8, "f1": 0.5})
    current = _summary(a={"pass_rate": 0.75, "f1": 0.51})
    results = check_gates(
        ["pass_rate >= baseline * 0.95", "execution_match.f1 >= baseline"], current, baseline
    )
    assert [r["passed"] for r in results] == [False, True]  # 0.75 < 0.76


def test_relative_gate_uses_the_only_baseline_system_when_names_differ() -> None:
    baseline = _summary(old={"pass_rate": 0.5})
    current = _summary(new={"pass_rate": 0.6})
    (result,) = check_gates(["pass_rate >= baseline"], current, baseline)
    assert result["passed"] is True and result["baseline_value"] == 0.5


def test_relative_gate_fails_when_the_baseline_lacks_the_system() -> None:
    baseline = _summary(x={"pass_rate": 0.5}, y={"pass_rate": 0.5})
    current = _summary(z={"pass_rate": 0.9})
    (result,) = check_gates(["pass_rate >= baseline"], current, baseline)
    assert result["passed"] is False and "no system 'z'" in result["note"]


def test_relative_gate_without_baseline_is_bad_input() -> None:
    with pytest.raises(InputError, match="--baseline"):
        check_gates(["pass_rate >= baseline - 0.1"], _summary(a={"pass_rate": 1.0}))


def test_a_bound_in_e_notation_is_read() -> None:
    """`1e-1` is a number in a gate as in the suite's options (YAML 1.2 floats)."""
    from queryeval.stats import parse_gate

    assert parse_gate("execution_match >= 1e-1").bound == pytest.approx(0.1)
    assert parse_gate("pass_rate >= baseline - 2E-2").bound == pytest.approx(0.02)


def test_a_gate_on_a_flagged_figure_fails_with_a_note() -> None:
    """A flagged scorer has no mean; every gate on it, or on its sub-metrics, fails."""
    from queryeval.stats import check_gates

    summary = {"systems": {"s": {"pass_rate": 0.9, "scorers": {"em": {
        "mean": None, "mean_scored": 1.0, "flagged": True, "pass_rate": None,
        "metrics": {"exact": {"mean": None, "mean_scored": 1.0}}}}}}}  # fmt: skip
    results = check_gates(["em >= 0.1", "em.exact >= 0.1", "exact >= 0.1", "pass_rate >= 0.5"],
                          summary)  # fmt: skip
    assert [r["passed"] for r in results] == [False, False, False, True]
    assert all(r["note"].startswith("flagged") for r in results[:3])
