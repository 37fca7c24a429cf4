"""series_fit_2lines and series_fit_line: Kusto's two-segment and one-line linear regressions,
as rows of duckdb-kql's function table (`_kql_functions`), one per output; the rewrite that
spreads their tuples over the rows is `_kql_functions_rules`.

Kusto's docs ("series_fit_2lines()", "series_fit_line()"): the function tries every split of
the series into two parts, fits a least-squares line to each part (series_fit_line, x = 1, 2,
... along the part) and keeps the split of the highest total r-square (one minus the residual
sum of squares of both lines over the total sum of squares). series_fit_line's docs example
(`y = [2, 5, 6, 8, 11, 15, 17, 18, 25, 26, 30, 30]`: variance 98.628, rvariance 1.686) fixes
the variances as sample variances (n - 1): `variance` of the input, `rvariance` of the
residuals (input less `line_fit`), `right_/left_variance`, `right_/left_rvariance` of each
part. `line_fit` is each part's line at its own points; the docs' chart of their example shows
these values.

Refused at run time (a DuckDB error starting with `REFUSED_MARKER`), because the docs leave
them open: `split_idx` (the last index of the left part or the first of the right one),
`right_interception` (x counted from the part's start or the series'; the left part starts
at x = 1 either way, as series_fit_line's example counts), a best split that another
split equals (to 1e-9 of the total sum of squares) or that a one-point part would beat
(whether a one-point part is fitted is not documented), a constant series or part (r-square
0/0), a series of fewer than 4 values, and values that are null or not numbers.

series_fit_line: rsquare, slope, variance, rvariance, interception, line_fit of the one line
at x = 1..n (its docs' example); a constant series' rsquare (0/0), fewer than 2 values and
values that are null or not numbers are refused.
"""

from __future__ import annotations

from typing import Any

from queryeval.engines._kql_functions import REFUSED_MARKER

# the outputs in the order of Kusto's docs (and Kusto.Language's tuple)
OUTPUTS = (
    "rsquare", "split_idx", "variance", "rvariance", "line_fit",
    "right_rsquare", "right_slope", "right_interception", "right_variance", "right_rvariance",
    "left_rsquare", "left_slope", "left_interception", "left_variance", "left_rvariance",
)  # fmt: skip
_UNDOCUMENTED = {
    "split_idx": "series_fit_2lines split_idx (which part holds the index is not documented)",
    "right_interception": "series_fit_2lines right_interception (its x origin is not documented)",
}
_TIE = "1e-9"


def _refuse(why: str) -> str:
    return f"error('{REFUSED_MARKER} {why}')"


def _part(values: str, first: str, last: str) -> str:
    """`values[first..last]` (1-based, inclusive) as a DuckDB list."""
    return f"list_slice({values}, {first}, {last})"


def _centered(part: str, v: str) -> str:
    """(m, Cxy, Cyy, mean) of a part with x = 1..m: the centred sums of series_fit_line."""
    mean = f"list_avg({part})"
    m = f"len({part})"
    cxy = (
        f"list_sum(list_transform({part}, lambda {v}, {v}i: "
        f"({v}i - ({m} + 1) / 2.0) * ({v} - {mean})))"
    )
    cyy = f"list_sum(list_transform({part}, lambda {v}: ({v} - {mean}) ** 2))"
    return f"struct_pack(m := {m}, cxy := {cxy}, cyy := {cyy}, mean := {mean})"


def _ssr(s: str) -> str:
    """Residual sum of squares of a part's line, from its `_centered` struct (0 for m < 2)."""
    return f"(CASE WHEN {s}.m < 2 THEN 0.0 ELSE {s}.cyy - {s}.cxy ** 2 / ({s}.m * ({s}.m ** 2 - 1) / 12.0) END)"  # noqa: E501


def _slope(s: str) -> str:
    return f"({s}.cxy / ({s}.m * ({s}.m ** 2 - 1) / 12.0))"


def _fit(s: str, v: str) -> str:
    """A part's fitted line at x = 1..m (its values replaced by the line)."""
    return (
        f"list_transform(range(1, {s}.m + 1), lambda {v}: "
        f"{s}.mean + {_slope(s)} * ({v} - ({s}.m + 1) / 2.0))"
    )


# `_qe_y`: the series as DOUBLE[]; `_SPLITS`: the residual sum of squares of each split k
# (left = 1..k, right = k+1..n) for k = 1..n-1; `_TOTAL`: the series' own sums.
_Y = "_qe_y"
_LEFT = _centered(_part(_Y, "1", "_qe_k"), "_qe_a")
_RIGHT = _centered(_part(_Y, "_qe_k + 1", f"len({_Y})"), "_qe_c")
_SPLITS = (
    f"list_transform(range(1, len({_Y})), lambda _qe_k: "
    f"list_transform([[{_LEFT}, {_RIGHT}]], lambda _qe_s: "
    f"{_ssr('_qe_s[1]')} + {_ssr('_qe_s[2]')})[1])"
)
_TOTAL = _centered(_Y, "_qe_t")


def _best(output: str) -> str:
    """SQL of one output, `{0}` the series."""
    values = "TRY_CAST(to_json({0}) AS DOUBLE[])"
    result = {
        "rsquare": "1 - _qe_r[_qe_k] / _qe_tot.cyy",
        "variance": "_qe_tot.cyy / (len(_qe_y) - 1)",
        "rvariance": "_qe_r[_qe_k] / (len(_qe_y) - 1)",
        "line_fit": f"to_json(list_concat({_fit('_qe_p[1]', '_qe_d')}, "
        f"{_fit('_qe_p[2]', '_qe_e')}))",
    }
    for side, index in (("left", 1), ("right", 2)):
        s = f"_qe_p[{index}]"
        result[f"{side}_rsquare"] = (
            f"CASE WHEN {s}.cyy = 0 THEN "
            f"{_refuse(f'series_fit_2lines {side}_rsquare of a constant part (0/0)')} "
            f"ELSE 1 - {_ssr(s)} / {s}.cyy END"
        )
        result[f"{side}_slope"] = _slope(s)
        result[f"{side}_interception"] = f"({s}.mean - {_slope(s)} * ({s}.m + 1) / 2.0)"
        result[f"{side}_variance"] = f"{s}.cyy / ({s}.m - 1)"
        result[f"{side}_rvariance"] = f"{_ssr(s)} / ({s}.m - 1)"
    chosen = _refuse(_UNDOCUMENTED[output]) if output in _UNDOCUMENTED else result[output]
    at_best = (
        f"list_transform([[{_LEFT}, {_RIGHT}]], lambda _qe_p: {chosen})[1]"
        if "_qe_p" in chosen
        else chosen
    )
    n = "len(_qe_y)"
    return (
        f"(CASE WHEN {values} IS NULL OR len(list_filter({values}, lambda _qe_x: _qe_x IS NULL "
        f"OR isnan(_qe_x) OR isinf(_qe_x))) > 0 "
        f"THEN {_refuse('series_fit_2lines of a value that is null or not a number')} "
        f"ELSE list_transform([{values}], lambda {_Y}: CASE WHEN {n} < 4 "
        f"THEN {_refuse('series_fit_2lines of fewer than 4 values')} "
        f"ELSE list_transform([struct_pack(r := {_SPLITS}, tot := {_TOTAL})], lambda _qe_z: "
        "list_transform([struct_pack(r := _qe_z.r, tot := _qe_z.tot, "
        f"best := list_min(list_slice(_qe_z.r, 2, {n} - 2)))], lambda _qe_w: "
        # _qe_w: the SSR per split, the series' sums, the least SSR among parts of 2 or more
        "CASE WHEN _qe_w.tot.cyy = 0 "
        f"THEN {_refuse('series_fit_2lines of a constant series (r-square 0/0)')} "
        f"WHEN len(list_filter(list_slice(_qe_w.r, 2, {n} - 2), lambda _qe_o: "
        f"_qe_o <= _qe_w.best + {_TIE} * _qe_w.tot.cyy)) > 1 "
        f"THEN {_refuse('series_fit_2lines of a series two splits fit equally well')} "
        f"WHEN least(_qe_w.r[1], _qe_w.r[{n} - 1]) <= _qe_w.best + {_TIE} * _qe_w.tot.cyy "
        f"THEN {_refuse('series_fit_2lines of a series best split off one value')} "
        "ELSE list_transform([list_position(_qe_w.r, _qe_w.best)], lambda _qe_k: "
        "list_transform([struct_pack(cyy := _qe_w.tot.cyy)], lambda _qe_tot: "
        "list_transform([_qe_w.r], lambda _qe_r: "
        f"{at_best})[1])[1])[1] END)[1])[1] END)[1] END)"
    )


# series_fit_line's outputs in the order of Kusto.Language's tuple
LINE_OUTPUTS = ("rsquare", "slope", "variance", "rvariance", "interception", "line_fit")


def _line(output: str) -> str:
    """SQL of one output of series_fit_line, `{0}` the series: the least-squares line at
    x = 1..n (its docs' example: interception -1.666 for line_fit 1.064 at the first value)."""
    values = "TRY_CAST(to_json({0}) AS DOUBLE[])"
    s = "_qe_l"
    result = {
        "rsquare": f"CASE WHEN {s}.cyy = 0 "
        f"THEN {_refuse('series_fit_line rsquare of a constant series (0/0)')} "
        f"ELSE 1 - {_ssr(s)} / {s}.cyy END",
        "slope": _slope(s),
        "variance": f"{s}.cyy / ({s}.m - 1)",
        "rvariance": f"{_ssr(s)} / ({s}.m - 1)",
        "interception": f"({s}.mean - {_slope(s)} * ({s}.m + 1) / 2.0)",
        "line_fit": f"to_json({_fit(s, '_qe_d')})",
    }
    return (
        f"(CASE WHEN {values} IS NULL OR len(list_filter({values}, lambda _qe_x: _qe_x IS NULL "
        f"OR isnan(_qe_x) OR isinf(_qe_x))) > 0 "
        f"THEN {_refuse('series_fit_line of a value that is null or not a number')} "
        f"ELSE list_transform([{values}], lambda {_Y}: CASE WHEN len({_Y}) < 2 "
        f"THEN {_refuse('series_fit_line of fewer than 2 values')} "
        f"ELSE list_transform([{_centered(_Y, '_qe_t')}], lambda {s}: {result[output]})[1] "
        "END)[1] END)"
    )


def rows(functions: Any) -> list[Any]:
    """duckdb-kql scalar rows `queryeval_fit2_<output>(series)` (series_fit_2lines) and
    `queryeval_fit1_<output>(series)` (series_fit_line), one per output."""
    return [
        *(functions.FunctionSpec(f"queryeval_fit2_{name}", "template", _best(name), (1,),
                                 ("R9",) if name == "line_fit" else (),
                                 "queryeval: series_fit_2lines, Kusto's docs")
          for name in OUTPUTS),
        *(functions.FunctionSpec(f"queryeval_fit1_{name}", "template", _line(name), (1,),
                                 ("R9",) if name == "line_fit" else (),
                                 "queryeval: series_fit_line, Kusto's docs")
          for name in LINE_OUTPUTS),
    ]  # fmt: skip
