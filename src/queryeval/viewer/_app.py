"""The viewer's web app (Starlette): the page (one HTML file with its script and style
inline: nothing is loaded from elsewhere) and the JSON API under /api/ that it uses.

Every answer of the API is JSON; bad input is a 400 with `{"error": "..."}` naming what
was wrong. What a run's index cannot answer (results.jsonl replaced while a page was read,
a part gone) is asked once more of the index brought up to date, then said in the page's
`problems` beside what could be read; anything else unexpected is a 500 with the error in
one line (never a stack trace).
"""

from __future__ import annotations

import difflib
import re
import secrets
import sys
from collections.abc import Awaitable, Callable, Mapping
from functools import cache
from importlib.resources import files
from typing import Any, TypeVar

import orjson

from queryeval.errors import InputError
from queryeval.viewer._catalog import Catalog, Run, headline, reviewed_headline, trends
from queryeval.viewer._compare import compare_indexed, side_by_side
from queryeval.viewer._gold import gold_text
from queryeval.viewer._query import CaseFilter, cases_page, facets, verdicts
from queryeval.viewer._review import add_gold, add_override, review_file

T = TypeVar("T")
LOOPBACK = ("127.0.0.1", "::1", "localhost")
_MAX_LISTED = 200  # flipped / only-in-one-run case ids listed per pair of systems


@cache
def page_html() -> str:
    """The page: viewer.html with viewer.css and viewer.js put inline."""
    folder = files("queryeval.viewer") / "static"
    html = (folder / "viewer.html").read_text(encoding="utf-8")
    css = (folder / "viewer.css").read_text(encoding="utf-8")
    js = (folder / "viewer.js").read_text(encoding="utf-8")
    return html.replace("/*CSS*/", css).replace("/*JS*/", js.replace("</script", "<\\/script"))


def _json(data: Any, status: int = 200) -> Any:
    from starlette.responses import Response

    body = orjson.dumps(data, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS)
    return Response(body, status_code=status, media_type="application/json")


def _float(value: str | None, where: str) -> float | None:
    if value in (None, ""):
        return None
    try:
        return float(value)
    except ValueError:
        raise InputError(f"expected a number, got {value!r}", where=where) from None


def _int(value: str | None, default: int, where: str) -> int:
    if value in (None, ""):
        return default
    try:
        return int(value)
    except ValueError:
        raise InputError(f"expected a whole number, got {value!r}", where=where) from None


def readable(
    runs: Run | tuple[Run, ...], what: str, work: Callable[[], T], problems: list[str]
) -> T | None:
    """`work()`, a question to the indexes of `runs`; when it fails (results.jsonl replaced
    while it was read: its index rebuilt by another request or process, a part gone), the
    indexes are brought up to date and asked once more; when that fails too, None and the
    reason in `problems`. A bad request (InputError) is raised as it is.

    >>> from pathlib import Path
    >>> from queryeval.viewer._index import RunIndex
    >>> run, problems = Run("r", Path("/nonexistent"), "r", RunIndex(Path("/nonexistent"))), []
    >>> readable(run, "the cases", lambda: 1 / 0, problems), problems
    (None, ['the cases could not be read (ZeroDivisionError: division by zero): reload the page'])
    """
    for fresh in (False, True):
        try:
            if fresh:
                for run in runs if isinstance(runs, tuple) else (runs,):
                    run.index.refresh()
            return work()
        except InputError:
            raise
        except Exception as exc:
            if fresh:
                first = str(exc).splitlines()[0] if str(exc) else ""
                problems.append(
                    f"{what} could not be read ({type(exc).__name__}: {first}): reload the page"
                )
    return None


def _run_entry(run: Run) -> dict[str, Any]:
    info = run.info or {}
    return {
        "id": run.id,
        "name": run.name,
        "path": str(run.path),
        "suite": run.suite,
        "when": run.when,
        "status": info.get("status") or ("complete" if run.summary else "unknown"),
        "config_hash": str(info.get("config_hash") or "")[:12],
        "n_cases": (run.summary or {}).get("n_cases"),
        "systems": [  # summary.json's figures: before a review's overrides
            {**s, "before_review": bool((run.review or {}).get("records"))} for s in headline(run)
        ],
        "gates": [
            {"gate": g.get("gate"), "system": g.get("system"), "passed": g.get("passed")}
            for g in (run.summary or {}).get("gates") or []
        ],
        "overrides": len((run.review or {}).get("records") or []),
        "problems": run.problems,
    }


def _tables(value: Any, path: str, out: list[dict[str, Any]], depth: int = 0) -> None:
    """Every result table in a score's details (a mapping with `columns` and `rows`)."""
    if depth > 6 or len(out) >= 8:
        return
    if isinstance(value, Mapping):
        cols, rows = value.get("columns"), value.get("rows")
        if isinstance(cols, list) and isinstance(rows, list):
            out.append({"where": path, "columns": cols, "rows": rows[:100], "n": len(rows)})
            return
        for key, item in value.items():
            _tables(item, f"{path}.{key}" if path else str(key), out, depth + 1)
    elif isinstance(value, list):
        for i, item in enumerate(value[:20]):
            _tables(item, f"{path}[{i}]", out, depth + 1)


def _find(value: Any, word: str, path: str = "", depth: int = 0) -> list[tuple[str, Any]]:
    """(path, value) of every key containing `word` (e.g. a counterexample)."""
    found: list[tuple[str, Any]] = []
    if depth > 6:
        return found
    if isinstance(value, Mapping):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if word in str(key).lower() and item not in (None, "", [], {}):
                found.append((where, item))
            else:
                found.extend(_find(item, word, where, depth + 1))
    elif isinstance(value, list):
        for i, item in enumerate(value[:20]):
            found.extend(_find(item, word, f"{path}[{i}]", depth + 1))
    return found


_TOKENS = re.compile(r"\s+|\w+|[^\w\s]")


def text_diff(gold: str, prediction: str) -> list[list[str]]:
    """A word-level diff of gold and prediction: [op, text] with op `=`, `-` (gold only) or
    `+` (prediction only).

    >>> text_diff("SELECT a FROM t", "SELECT b FROM t")
    [['=', 'SELECT '], ['-', 'a'], ['+', 'b'], ['=', ' FROM t']]
    """
    a, b = _TOKENS.findall(gold), _TOKENS.findall(prediction)
    out: list[list[str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(["=", "".join(a[i1:i2])])
        else:
            if i2 > i1:
                out.append(["-", "".join(a[i1:i2])])
            if j2 > j1:
                out.append(["+", "".join(b[j1:j2])])
    return out


def _attempt_text(attempt: Mapping[str, Any]) -> str:
    for key in ("query", "answer"):
        if attempt.get(key):
            return str(attempt[key])
    for key in ("weaviate_query", "indicator_selection"):
        if attempt.get(key) is not None:
            return orjson.dumps(attempt[key]).decode()
    return ""


def case_view(run: Run, system: str, case_id: str) -> dict[str, Any]:
    """Everything the case page shows of one (system, case)."""
    from queryeval.log import overlay_review

    problems: list[str] = []
    stored = readable(run, "the record", lambda: run.index.record(system, case_id), problems)
    if problems:
        return {"run": run.id, "system": system, "case_id": case_id, "problems": problems}
    if stored is None:
        raise InputError(f"no record of system {system!r} for case {case_id!r}", where="case")
    rec = overlay_review([stored], run.review)[0] if run.review else stored  # type: ignore[list-item]
    case = readable(run, "the case", lambda: run.index.case(case_id), problems)
    question = gold = ""
    expected: list[dict[str, Any]] = []
    case_problem = run.index.state.cases_problem
    if case is not None:
        from pydantic import ValidationError

        from queryeval.cases import Case

        try:
            model = Case.model_validate(case)
        except ValidationError as exc:
            case_problem = f"the case cannot be read ({exc.error_count()} error(s))"
            case = None
    if case is not None:
        question, gold = model.question, gold_text(model)
        for i, target in enumerate(model.targets):
            if target.result is not None:
                expected.append(
                    {"where": f"gold {i + 1}", "columns": list(target.result.columns),
                     "rows": [list(r) for r in target.result.rows[:100]],
                     "n": len(target.result.rows)}
                )  # fmt: skip
    output = rec.get("output") or {}
    attempts = [a for a in (output.get("attempts") or []) if isinstance(a, Mapping)]
    prediction = _attempt_text(attempts[-1]) if attempts else ""
    scores = rec.get("scores") or {}
    tables: list[dict[str, Any]] = []
    _tables({"output": output, "scores": scores}, "", tables)
    rationale = {
        label: (s.get("details") or {}).get("reasoning")
        for label, s in scores.items()
        if (s.get("details") or {}).get("reasoning")
    }
    counter = _find(scores, "counterexample")
    tokens_in = sum(int(a.get("tokens_in") or 0) for a in attempts)
    tokens_out = sum(int(a.get("tokens_out") or 0) for a in attempts)
    return {
        "run": run.id,
        "system": system,
        "case_id": case_id,
        "question": question,
        "gold": gold,
        "prediction": prediction,
        "diff": text_diff(gold, prediction) if gold and prediction else [],
        "passed": rec.get("passed"),
        "error": rec.get("error"),
        "latency_s": rec.get("latency_s"),
        "cost": rec.get("cost"),
        "tokens": {"in": tokens_in or None, "out": tokens_out or None},
        "attempts": attempts,
        "metadata": output.get("metadata") or {},  # e.g. the refinement loop's note
        "scores": scores,
        "rationale": rationale,
        "counterexamples": [{"where": w, "value": v} for w, v in counter[:5]],
        "expected": expected,
        "tables": tables,
        "case": case,
        "case_problem": case_problem,
        "golds": [g for g in (run.review or {}).get("golds") or [] if g.get("case_id") == case_id],
        "problems": problems,
    }


def run_view(run: Run) -> dict[str, Any]:
    """Everything the run page shows. A reviewed run's figures are counted from its
    records with the review's overrides (`counted`); where they cannot be, the page says
    so and `figures_reviewed` is false: summary.json's figures (`sections`, and each of
    `systems`, marked `before_review`) are never the reviewed run's figures."""
    from queryeval.reports import summary_sections

    problems = [*run.problems, *run.index_problems()]
    try:
        sections = summary_sections(run.summary, run.info) if run.summary else None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:  # an older summary
        sections = None
        problems.append(f"summary.json cannot be shown ({type(exc).__name__}: {exc})")
    reviewed = bool((run.review or {}).get("records"))
    wanted = bool(run.index.parts) and (reviewed or not run.summary)
    counted = None
    if wanted:
        found = readable(run, "the records' verdicts", lambda: verdicts(run.index, run.review),
                         problems)  # fmt: skip
        counted = reviewed_headline(run, found) if found is not None else None
    if reviewed and counted is None:  # never summary.json's figure as the reviewed run's
        n = len((run.review or {}).get("records") or [])
        problems.append(
            f"NOT REVIEWED: the review's {n} override(s) could not be applied (the records' "
            "verdicts could not be read); the figures shown are summary.json's, before the "
            "review, not the run's reviewed figures"
        )
    by_reason: list[Any] = []
    if run.index.parts:
        found = readable(run, "the failure reasons",
                         lambda: facets(run.index, run.review)["reasons"], problems)  # fmt: skip
        by_reason = found or []
    return {
        **_run_entry(run),
        "problems": problems,
        "sections": sections,
        "counted": counted,
        "reviewed": reviewed,
        "figures_reviewed": counted is not None if reviewed else None,
        "failures": by_reason,
        "golds": (run.review or {}).get("golds") or [],
        "indexed": {"rows": run.index.state.rows, "systems": run.index.state.systems},
    }


def _comparison(data: dict[str, Any]) -> dict[str, Any]:
    """The comparison's JSON with long case lists cut (the page pages through the rows)."""
    for pair in data.get("systems", []):
        for key in ("fixed", "broken", "only_a", "only_b"):
            items = pair.get(key) or []
            pair[f"n_{key}"] = len(items)
            pair[key] = items[:_MAX_LISTED]
    return data


def build_app(catalog: Catalog, *, token: str | None = None) -> Any:
    """The Starlette app over a catalog of runs; `token`: required by every request (as
    `?token=` once, then a cookie) when the server listens beyond loopback."""
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, Response
    from starlette.routing import Route

    def params(request: Request) -> Mapping[str, str]:
        return request.query_params

    async def page(request: Request) -> Response:
        response = HTMLResponse(page_html())
        if token and request.query_params.get("token") == token:
            response.set_cookie("qe_token", token, httponly=True, samesite="strict")
        return response

    @_off_loop
    def api_runs(request: Request) -> Response:
        runs = catalog.runs()
        groups: dict[str, list[str]] = {}
        for run in runs:
            groups.setdefault(run.suite, []).append(run.id)
        return _json(
            {
                "runs": [_run_entry(r) for r in runs],
                "groups": [{"suite": s, "runs": ids} for s, ids in groups.items()],
                "trends": trends(runs),
            }
        )

    @_off_loop
    def api_run(request: Request) -> Response:
        return _json(run_view(catalog.get(request.path_params["rid"])))

    @_off_loop
    def api_facets(request: Request) -> Response:
        run = catalog.get(request.path_params["rid"])
        if not run.index.parts:
            return _json({})
        problems: list[str] = []
        found = readable(run, "the filters' values", lambda: facets(run.index, run.review),
                         problems)  # fmt: skip
        return _json({**(found or {}), "problems": problems})

    @_off_loop
    def api_cases(request: Request) -> Response:
        run = catalog.get(request.path_params["rid"])
        q = params(request)
        reviewed = q.get("reviewed")
        f = CaseFilter(
            system=q.get("system") or None,
            status=q.get("status") or None,
            reason=q.get("reason") or None,
            tag=q.get("tag") or None,
            scorer=q.get("scorer") or None,
            min_score=_float(q.get("min"), "min"),
            max_score=_float(q.get("max"), "max"),
            text=q.get("q") or None,
            reviewed=None if reviewed in (None, "") else reviewed in ("1", "true"),
            sort=q.get("sort") or "row",
            desc=q.get("desc") in ("1", "true"),
            offset=_int(q.get("offset"), 0, "offset"),
            limit=_int(q.get("limit"), 50, "limit"),
        )
        empty = {"total": 0, "offset": f.offset, "limit": f.limit, "rows": []}
        if not run.index.parts:
            return _json({**empty, "problems": []})
        f.check(run.index)  # a bad filter is a 400, not something that could not be read
        problems: list[str] = []
        page = readable(run, "the cases", lambda: cases_page(run.index, run.review, f), problems)
        return _json({**(page or empty), "problems": problems})

    @_off_loop
    def api_case(request: Request) -> Response:
        run = catalog.get(request.path_params["rid"])
        q = params(request)
        return _json(case_view(run, q.get("system", ""), q.get("case_id", "")))

    @_off_loop
    def api_compare(request: Request) -> Response:
        q = params(request)
        a = catalog.get(q.get("a", ""))
        b = catalog.get(q.get("b") or q.get("a", ""))
        sa, sb = q.get("system_a") or "", q.get("system_b") or ""
        pairs = [(sa, sb)] if sa and sb else None
        systems_a, systems_b = a.index.state.systems, b.index.state.systems
        if pairs is None and a.id == b.id and len(systems_a) >= 2:
            pairs = [(systems_a[0], systems_a[1])]  # two systems of one run
        offset, limit = _int(q.get("offset"), 0, "offset"), _int(q.get("limit"), 50, "limit")
        problems: list[str] = []

        def compared() -> Any:
            return compare_indexed(
                a.index, b.index, review_a=a.review, review_b=b.review, systems=pairs,
                label_a=a.name, label_b=b.name,
            )  # fmt: skip

        result = readable((a, b), "the comparison", compared, problems)
        data = _comparison(result.as_dict()) if result is not None else None
        first = result.systems[0] if result is not None and result.systems else None
        rows = None
        if first is not None:
            rows = readable((a, b), "the cases side by side", lambda: side_by_side(
                a.index, b.index, first.system_a, first.system_b,
                review_a=a.review, review_b=b.review, offset=offset, limit=limit,
                only_flipped=q.get("flipped") in ("1", "true"),
            ), problems)  # fmt: skip
        return _json({"a": a.id, "b": b.id, "comparison": data, "rows": rows,
                      "suites": [a.suite, b.suite], "systems_a": systems_a,
                      "systems_b": systems_b, "problems": problems})  # fmt: skip

    async def api_review(request: Request) -> Response:
        run = await run_in_threadpool(catalog.get, request.path_params["rid"])
        if request.method == "GET":
            return _json({"review": run.review, "file": review_file(run.review)})
        body = await _body(request)
        return await run_in_threadpool(write_review, run, body)

    def write_review(run: Run, body: dict[str, Any]) -> Response:
        kind = body.get("kind", "override")
        if kind == "gold":
            entry = add_gold(
                run.path, str(body.get("case_id") or ""), str(body.get("gold") or ""),
                note=str(body.get("note") or ""), reviewer=str(body.get("reviewer") or ""),
            )  # fmt: skip
        else:
            system, case_id = str(body.get("system") or ""), str(body.get("case_id") or "")
            problems: list[str] = []
            record = readable(run, "the record", lambda: run.index.record(system, case_id),
                              problems)  # fmt: skip
            if problems:  # nothing is written over a record that could not be read
                raise InputError(f"{problems[0]}; nothing was written")
            if record is None:
                raise InputError(f"no record of system {system!r} for case {case_id!r}")
            verdict = str(body.get("verdict") or "").lower()
            if verdict not in ("pass", "fail"):
                raise InputError("verdict must be pass or fail", where="verdict")
            entry = add_override(
                run.path, record, scorer=str(body.get("scorer") or ""), verdict=verdict == "pass",
                note=str(body.get("note") or ""), reviewer=str(body.get("reviewer") or ""),
            )  # fmt: skip
        run.load()
        return _json({"ok": True, "entry": entry})

    async def api_docs(request: Request) -> Response:
        return _json({"endpoints": [r.path for r in routes]})

    routes = [
        Route("/", page),
        Route("/api/", api_docs),
        Route("/api/runs", api_runs),
        Route("/api/runs/{rid}", api_run),
        Route("/api/runs/{rid}/facets", api_facets),
        Route("/api/runs/{rid}/cases", api_cases),
        Route("/api/runs/{rid}/case", api_case),
        Route("/api/runs/{rid}/review", api_review, methods=["GET", "POST"]),
        Route("/api/compare", api_compare),
    ]

    async def errors(request: Request, exc: Exception) -> Response:
        if isinstance(exc, InputError):
            return _json({"error": exc.render()}, 400)
        first = str(exc).splitlines()[0] if str(exc) else ""
        print(f"queryeval view: {request.url.path}: {type(exc).__name__}: {first}", file=sys.stderr)
        return _json({"error": f"internal error: {type(exc).__name__}: {first}"}, 500)

    app = Starlette(routes=routes, exception_handlers={Exception: errors, InputError: errors})
    if token:
        return _TokenGate(app, token)
    return app


def _off_loop(work: Callable[[Any], Any]) -> Callable[[Any], Awaitable[Any]]:
    """An endpoint that runs `work` (DuckDB queries, an index refresh, file reads: all
    blocking) in Starlette's thread pool, so a long request never holds up the others.
    Each query takes its own DuckDB cursor (`_index.connect()`), as threads must."""

    async def endpoint(request: Any) -> Any:
        from starlette.concurrency import run_in_threadpool

        return await run_in_threadpool(work, request)

    endpoint.__name__ = getattr(work, "__name__", "endpoint")
    return endpoint


async def _body(request: Any) -> dict[str, Any]:
    try:
        data = orjson.loads(await request.body())
    except orjson.JSONDecodeError:
        raise InputError("the request body is not JSON") from None
    if not isinstance(data, dict):
        raise InputError("the request body must be a JSON object")
    return data


class _TokenGate:
    """ASGI middleware: a request without the token (query `token`, cookie `qe_token` or
    `Authorization: Bearer`) is refused with 403."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not self._allowed(scope):
            response = _json({"error": "forbidden: open the address printed at start "
                              "(it holds ?token=...)"}, 403)  # fmt: skip
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _allowed(self, scope: Any) -> bool:
        from starlette.requests import HTTPConnection

        conn = HTTPConnection(scope)
        given = [
            conn.query_params.get("token") or "",
            conn.cookies.get("qe_token") or "",
            conn.headers.get("authorization", "").removeprefix("Bearer ").strip(),
        ]
        return any(secrets.compare_digest(g, self.token) for g in given if g)


def new_token() -> str:
    """A token for a server that listens beyond loopback."""
    return secrets.token_urlsafe(24)


def needs_token(host: str) -> bool:
    """Whether a server on `host` needs a token (anything but loopback).

    >>> needs_token("127.0.0.1"), needs_token("0.0.0.0")
    (False, True)
    """
    return host not in LOOPBACK
