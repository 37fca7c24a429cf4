"""How much real-world KQL runs on the embedded KQL engine (duckdb-kql plus queryeval's
extensions), measured on the development corpus in ../shared/data/kql (NL2KQL's Sentinel and
Defender evaluation sets, Microsoft's Defender hunting queries, the Kusto docs' examples) and
on community repositories as cloned (`--repo PATH`, see `_kql_repos.py`: corpora the engine
was never tuned on).

A query counts as valid when Microsoft's Kusto.Language (npm @kusto/language-service-next,
under Node) reports no error or warning against the corpus's documented table schemas;
"runs" means the engine executed it on empty fixture tables built from those schemas (a 60 s
limit per query: the figure is about what runs, not how fast, on a shared machine); with
`--rows N` also on the same tables holding N synthetic rows each (strings such as "0", text,
an IP address, JSON; numbers; recent datetimes), where queries that fail only on data show.
Prints, per source, queries / syntax-valid / valid / runs (and the share of valid queries
that run), then which construct stopped each valid query that did not run. An `externaldata`
(rows from a URL at query time) reads, whatever its URL, its declared columns holding the
same synthetic rows as the tables (a suite maps its URLs to local files); saved runs of
before that count it as "needs the network". Let-only snippets (no tabular expression
statement, which Kusto's docs require of a query) are counted apart, and so are queries
naming a column that only a `bag_unpack`/`pivot` of the rows could give and the fixture's
rows do not (Kusto stops them on these rows too); "runs / runnable" leaves those three
classes out of the denominator.

    python bench/bench_kql_coverage.py                     # every source (a few minutes)
    python bench/bench_kql_coverage.py nl2kql_sentinel m365d --json out.json
    python bench/bench_kql_coverage.py m365d --repo ~/src/Sentinel-Queries --rows 8
    python bench/bench_kql_coverage.py --from-json out.json   # the tables of a saved run
    python bench/bench_kql_coverage.py --from-json a.json --from-json b.json   # of several
    python bench/bench_kql_coverage.py --community /work/.mirror --rows 6 --only-valid \
        --validity-from out.json                # _kql_repos.COMMUNITY, verdicts reused
    python bench/bench_kql_coverage.py --redo-from a.json --redo-from b.json --rows 6 \
        --rows-only --json after.json           # only the valid queries that did not run

Skips (exit 0) when the corpus is not there, and under --quick (bench/run_all.py --quick:
a coverage measurement of several minutes, not a hot-path timing).
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "bench")]

import _harness as h  # noqa: E402
from queryeval.engines import KqlSchema, KqlValidator, KqlValidatorError  # noqa: E402
from queryeval.engines._base import Limits  # noqa: E402
from queryeval.engines._kql import KqlEngine  # noqa: E402
from queryeval.engines._kql_externaldata import (  # noqa: E402
    ExternalData,
    physical_columns,
    synthetic_rows,
)
from queryeval.engines._kql_functions import REFUSED_MARKER  # noqa: E402

SOURCES = ("nl2kql_sentinel", "nl2kql_defender", "m365d", "docs_all")
_DUCKDB_TYPES = {"string": "VARCHAR", "datetime": "TIMESTAMP", "real": "DOUBLE",
                 "int": "INTEGER", "long": "BIGINT", "dynamic": "JSON", "bool": "BOOLEAN",
                 "guid": "UUID", "timespan": "INTERVAL", "decimal": "DECIMAL(38, 18)"}  # fmt: skip
_CONSTRUCT = re.compile(r"unsupported KQL construct (?:'([^']*)'|\"([^\"]*)\")")
_SPECIFIC = re.compile(r"^(source|expression|function|aggregate):")


def corpus_dir() -> Path | None:
    for candidate in (os.environ.get("QUERYEVAL_KQL_CORPUS"), "/work/shared/data/kql",
                      ROOT.parent / "shared" / "data" / "kql",
                      ROOT.parents[1] / "shared" / "data" / "kql"):  # fmt: skip
        if candidate and (Path(candidate) / "table_schemas.json").is_file():
            return Path(candidate)
    return None


_STRINGS = ("0", "Sign-in activity", "10.1.2.3", '{"Name": "x", "Count": 2}', "")
_DYNAMICS = ('{"Name": "x", "Count": 2, "Ip": "10.1.2.3"}', '["a", "b"]', "null")
_NOW = dt.datetime(2024, 6, 1, tzinfo=dt.UTC)


def synthetic(kind: str, i: int) -> Any:
    """Row i's value of a column of KQL type `kind` (deterministic, varied)."""
    if kind in ("int", "long"):
        return i
    if kind in ("real", "decimal"):
        return i * 1.5
    if kind == "bool":
        return i % 2 == 0
    if kind == "datetime":
        return (_NOW - dt.timedelta(hours=5 * i + 1)).replace(tzinfo=None)
    if kind == "timespan":
        return dt.timedelta(minutes=i)
    if kind == "guid":
        return f"00000000-0000-0000-0000-{i:012d}"
    if kind == "dynamic":
        return _DYNAMICS[i % len(_DYNAMICS)]
    return _STRINGS[i % len(_STRINGS)]


def build_fixture(schemas: dict[str, dict[str, str]], path: Path, rows: int = 0) -> None:
    """Tables with the documented columns (KQL types as DuckDB types), empty or holding
    `rows` synthetic rows each. Columns whose names differ only in case (IdentityInfo's
    AccountUPN and AccountUpn: two to Kusto, one name to DuckDB) store the later spellings
    under the KQL engine's encoded names (`AccountUpn__qe1`), which it reads as those."""
    import duckdb

    con = duckdb.connect(str(path))
    con.execute("BEGIN TRANSACTION")  # one commit: a commit per table took minutes under load
    for table, columns in schemas.items():
        defs, kinds = [], []
        for column, kind in physical_columns(tuple(columns.items())):
            quoted = column.replace('"', '""')
            defs.append(f'"{quoted}" {_DUCKDB_TYPES.get(kind, "VARCHAR")}')
            kinds.append(kind)
        if defs:
            con.execute(f'CREATE TABLE "{table}" ({", ".join(defs)})')
            if rows:  # one statement per table (executemany runs one per row)
                marks = ", ".join(["(" + ", ".join("?" for _ in kinds) + ")"] * rows)
                data = [synthetic(k, i) for i in range(rows) for k in kinds]
                con.execute(f'INSERT INTO "{table}" VALUES {marks}', data)
    con.execute("COMMIT")
    con.close()


def fixture(schemas: dict[str, dict[str, str]], rows: int) -> Path:
    """The fixture database of `schemas` with `rows` rows a table, built once and kept under
    the temporary folder (keyed by the schemas, the row count and the synthetic values):
    later passes and runs open it read-only instead of building it again."""
    import hashlib
    import inspect

    key = hashlib.sha256(json.dumps([schemas, rows, _STRINGS, _DYNAMICS, str(_NOW),
                                     _DUCKDB_TYPES, inspect.getsource(synthetic),
                                     inspect.getsource(build_fixture)],
                                    sort_keys=True).encode()).hexdigest()[:16]  # fmt: skip
    folder = Path(tempfile.gettempdir()) / "qe-kql-coverage-fixtures"
    folder.mkdir(exist_ok=True)
    path = folder / f"{key}-{rows}.duckdb"
    if not path.is_file():
        partial = folder / f"{key}-{rows}.{os.getpid()}.partial"
        partial.unlink(missing_ok=True)
        build_fixture(schemas, partial, rows)
        partial.replace(path)
    return path


_NETWORK = "externaldata (needs the network: the evaluator runs offline)"


def needs_network(message: str) -> bool:
    """Whether the engine refused a query because it reads rows from a URL (`externaldata`):
    the evaluator's inability, reported as its own class."""
    return "externaldata reads" in message or "ExternalDataExpression" in message


_LET_ONLY = "no tabular expression statement (a let-only snippet: Kusto's docs require one)"


def let_only(message: str) -> bool:
    """Whether the query has only `let` statements: Kusto's docs ("Query statements"): "At
    least one of these query statements must be a tabular expression statement"."""
    return "no query statement found" in message


_DATA_COLUMN = (
    "a column only bag_unpack/pivot give, absent from these rows (Kusto fails on them too)"
)


def data_column(message: str) -> bool:
    """Whether the engine found the query naming a column that only a `bag_unpack` / `pivot`
    of its rows could give and these rows do not: Kusto stops the query on them too (the
    plugins' columns come from the data), so it is not runnable on this fixture."""
    return "give on these rows" in message


def construct_of(kind: str, message: str) -> str:
    """The construct that stopped a query, from the engine's message."""
    if needs_network(message):
        return _NETWORK
    if let_only(message):
        return _LET_ONLY
    if data_column(message):
        return _DATA_COLUMN
    if REFUSED_MARKER in message:  # a run-time or translation refusal (maybe nested): its subject
        rest = message[message.index(REFUSED_MARKER) + len(REFUSED_MARKER) :]
        return "refused: " + re.split(r"\(\)|:", rest)[0].strip()[:60]
    match = _CONSTRUCT.search(message)
    if match:
        name = match.group(1) or match.group(2)
        if name.startswith(("let function:", "extend:", "summarize:")):
            return name.split(":")[0] + ":" + ("..." if ":" in name else "")
        return name
    if kind == "unsupported":
        return message.split(":")[0][:70]
    return f"{kind}: {message.splitlines()[0][:60]}"


EXTERNAL_NOTE = (
    "externaldata: every URL read as the fixture's tables are, {rows} synthetic "
    "rows of its declared schema (a suite maps URLs to files: docs/kql.md)"
)


def external(rows: int) -> ExternalData:
    """Each `externaldata` of the corpus as the fixture's tables: its declared columns
    holding `rows` synthetic rows, whatever its URL."""
    return ExternalData(rows=synthetic_rows(synthetic, rows))


def run_queries(schemas: dict[str, dict[str, str]], rows: list[dict[str, Any]],
                data_rows: int = 0, only_valid: bool = False, rows_only: bool = False,
                checkpoint: Path | None = None) -> tuple[float, float]:  # fmt: skip
    """Run each row's query on the fixture(s) of `schemas` (empty tables, and with
    `data_rows` rows a table; `rows_only`: only the latter) and store its outcome in the row
    (`kind`, `message`, and `kind_rows`, `message_rows` for the second pass); (wall s, CPU s)."""
    passes = (("", 0), ("_rows", data_rows)) if data_rows else (("", 0),)
    if rows_only:  # one pass, on tables holding data_rows rows: its outcomes are the figures
        passes = (("", data_rows),)
    engines = [(suffix, KqlEngine("corpus", fixture(schemas, count), Limits(timeout_s=60),
                                  "corpus", _NOW, external(count)))
               for suffix, count in passes]  # fmt: skip
    print(EXTERNAL_NOTE.format(rows=" / ".join(str(count) for _, count in passes)))
    start, cpu = time.perf_counter(), time.process_time()
    for done, row in enumerate(rows):  # a query on each fixture in turn: its trees are kept
        if checkpoint is not None and done % 25 == 0:  # what a run cut short leaves
            checkpoint.write_text(json.dumps(rows[:done], indent=1))
            print(f"{done} of {len(rows)} queries, {time.process_time() - cpu:.0f} s CPU",
                  file=sys.stderr, flush=True)  # fmt: skip
        for suffix, engine in engines:
            if not row["valid"] and (suffix or only_valid):
                row["kind" + suffix] = row["message" + suffix] = ""
                continue  # only valid queries are measured on rows
            executed = engine.execute(row["query"])
            outcome = executed.outcome
            row["kind" + suffix], row["message" + suffix] = outcome.kind, outcome.message
            row["digest" + suffix] = result_digest(executed.result) if outcome.kind == "ok" else ""
    execute_s, execute_cpu = time.perf_counter() - start, time.process_time() - cpu
    for _, engine in engines:
        engine.close()
    return execute_s, execute_cpu


def result_digest(result: Any) -> str:
    """A short hash of a result's column names and its rows as a multiset (each row's JSON
    text, sorted): two runs of a query give the same digest when they answer the same rows,
    in whatever order (to show that a code change left an answer as it was)."""
    import hashlib

    if result is None:
        return ""
    rows = sorted(json.dumps(list(r), default=str, sort_keys=True) for r in result.rows)
    text = json.dumps([list(result.columns), rows])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def did_not_run(row: dict[str, Any]) -> bool:
    """Whether a saved row is a valid query that did not run (on either pass)."""
    return bool(row.get("valid")) and (
        row.get("kind") != "ok" or row.get("kind_rows", "ok") != "ok"
    )


def redo(corpus: Path, saved: list[dict[str, Any]], data_rows: int, rows_only: bool,
         checkpoint: Path | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """The saved rows of earlier `--json` runs with every valid query that did not run
    (`did_not_run`) run again on this engine (the saved Kusto.Language verdicts are kept: no
    validator starts); the others keep their saved outcome. `data_rows`/`rows_only` must be
    the earlier run's `--rows`/`--rows-only`. Prints what moved."""
    schemas = json.loads((corpus / "table_schemas.json").read_text())
    rows = [dict(row) for row in saved]
    todo = [row for row in rows if did_not_run(row)]
    keys = ("kind", "message", "kind_rows", "message_rows")
    before = {id(row): [row.get(key) for key in keys] for row in todo}
    execute_s, execute_cpu = run_queries(schemas, todo, data_rows, True, rows_only, checkpoint)
    now_run = sum(not did_not_run(row) for row in todo)
    changed = sum([row.get(key) for key in keys] != before[id(row)] for row in todo)
    print(f"redone {len(todo)} of {len(rows)} queries (valid, did not run): {now_run} now run, "
          f"{changed} now run or stopped otherwise; {execute_s:.1f} s wall, "
          f"{execute_cpu:.1f} s CPU (load {os.getloadavg()[0]:.2f})")  # fmt: skip
    return rows


def measure(corpus: Path, sources: list[str], repos: list[Path] | None = None,
            data_rows: int = 0, verdicts: dict[str, tuple[bool, bool]] | None = None,
            only_valid: bool = False, rows_only: bool = False,
            checkpoint: Path | None = None,
            shard: tuple[int, int] = (0, 1),
            skip: set[tuple[str, str]] | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """Every query's validity and outcomes (see the module); `checkpoint`: the queries
    measured so far are written there every 25 queries; `shard` (i, n): only every n-th
    query from the i-th (several processes share a corpus; `--from-json` joins them);
    `skip`: (source, id) of queries a saved run measured, left out before sharding."""
    schemas = json.loads((corpus / "table_schemas.json").read_text())
    rows: list[dict[str, Any]] = []
    for source in sources:
        with (corpus / f"{source}.jsonl").open() as handle:
            for line in handle:
                record = json.loads(line)
                rows.append({"id": record["id"], "source": source, "query": record["query"]})
    for repo in repos or []:
        from _kql_repos import repo_queries

        # a clone's folder name; a mirror's `owner+name/repo` its parent's
        name = repo.parent.name if repo.name in ("repo", ".git") else repo.name
        for record in repo_queries(repo, name.split("+")[-1].removesuffix(".git")):
            rows.append({**record, "source": record["repo"]})
    if skip:
        rows = [row for row in rows if (row["source"], str(row["id"])) not in skip]
    rows = rows[shard[0] :: shard[1]]
    schema = KqlSchema.from_tables(schemas)
    start = time.perf_counter()
    with KqlValidator() as validator:
        missing = validator.missing()
        if missing:
            raise SystemExit(f"bench_kql_coverage: {missing}")
        for row in rows:
            if verdicts and row["query"] in verdicts:  # Kusto.Language's verdict, saved
                row["syntax_ok"], row["valid"] = verdicts[row["query"]]
                continue
            try:
                verdict = validator.check(row["query"], schema)
                row["syntax_ok"], row["valid"] = verdict.syntax_ok, verdict.semantic_ok
            except KqlValidatorError as exc:
                row["syntax_ok"] = row["valid"] = False
                row["validity_error"] = str(exc)
    validate_s = time.perf_counter() - start
    execute_s, execute_cpu = run_queries(schemas, rows, data_rows, only_valid, rows_only,
                                         checkpoint)  # fmt: skip
    print(f"validated {len(rows)} queries in {validate_s:.1f} s, executed in {execute_s:.1f} s "
          f"wall, {execute_cpu:.1f} s CPU (load {os.getloadavg()[0]:.2f})")  # fmt: skip
    return rows


def report(rows: list[dict[str, Any]], top: int | None = None) -> None:
    by_source: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    stops: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    on_rows: collections.Counter[str] = collections.Counter()
    for row in rows:
        counts = by_source[row["source"]]
        counts["queries"] += 1
        counts["syntax valid"] += bool(row["syntax_ok"])
        if not row["valid"]:
            continue
        counts["valid"] += 1
        if row["kind"] == "ok":
            counts["runs"] += 1
        elif needs_network(row["message"]):
            counts["network"] += 1
            stops[_NETWORK][row["source"]] += 1
        elif let_only(row["message"]):
            counts["let only"] += 1
            stops[_LET_ONLY][row["source"]] += 1
        elif data_column(row["message"]):
            counts["data column"] += 1
            stops[_DATA_COLUMN][row["source"]] += 1
        else:
            counts[row["kind"]] += 1
            stops[construct_of(row["kind"], row["message"])][row["source"]] += 1
        if "kind_rows" in row:
            counts["rows measured"] += 1
            counts["runs on rows"] += row["kind_rows"] == "ok"
            if row["kind_rows"] != "ok" and row["kind"] == "ok":
                on_rows[construct_of(row["kind_rows"], row["message_rows"])] += 1
    sources = list(by_source)
    with_rows = any(by_source[s]["rows measured"] for s in sources)
    print("\n| source | queries | syntax-valid | valid | needs the network | let only "
          "| a column the rows lack | runs "
          "| runs / valid | runs / runnable | unsupported | other failures |"
          + (" runs on rows / runnable |" if with_rows else ""))  # fmt: skip
    print(
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        + ("---:|" if with_rows else "")
    )
    for source in sources:
        c = by_source[source]
        offline = c["valid"] - c["network"] - c["let only"] - c["data column"]
        other = offline - c["runs"] - c["unsupported"]
        share = 100 * c["runs"] / c["valid"] if c["valid"] else 0.0
        offline_share = 100 * c["runs"] / offline if offline else 0.0
        line = (f"| {source} | {c['queries']} | {c['syntax valid']} | {c['valid']} "
                f"| {c['network']} | {c['let only']} | {c['data column']} | {c['runs']} "
                f"| {share:.1f} % "
                f"| {offline_share:.1f} % | {c['unsupported']} | {other} |")  # fmt: skip
        if with_rows and not c["rows measured"]:  # one pass only (--rows-only: on rows)
            line += " — |"
        elif with_rows:
            rows_share = 100 * c["runs on rows"] / offline if offline else 0.0
            line += f" {rows_share:.1f} % ({c['runs on rows']}) |"
        print(line)
    if on_rows:
        print("\n| what stopped a valid query on rows that ran on empty tables | queries |")
        print("|---|---:|")
        for construct, n in on_rows.most_common(top or 25):
            print(f"| `{construct}` | {n} |")
    print("\n| what stopped a valid query | " + " | ".join(sources) + " | all |")
    print("|---|" + "---:|" * (len(sources) + 1))
    ranked = sorted(stops.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))
    left = 0
    for rank, (construct, per) in enumerate(ranked):
        if top is not None and rank >= top and set(per) <= {"docs_all"}:
            left += sum(per.values())
            continue
        cells = " | ".join(str(per.get(s, "")) for s in sources)
        print(f"| `{construct}` | {cells} | {sum(per.values())} |")
    if left:
        print(f"\n(and {left} docs examples stopped by constructs outside the top {top})")


def record(rows: list[dict[str, Any]]) -> None:
    """The headline figures for bench/run_all.py's summary: the share of valid queries that
    run, NL2KQL (both sets) and the Defender hunting queries."""
    for name, sources in (
        ("NL2KQL", {"nl2kql_sentinel", "nl2kql_defender"}),
        ("hunting", {"m365d"}),
    ):
        valid = [r for r in rows if r["source"] in sources and r["valid"]]
        if valid:
            runs = sum(r["kind"] == "ok" for r in valid)
            share = f"{runs / len(valid):.1%} ({runs} of {len(valid)})"
            h.record("kql", f"KQL coverage, {name}: valid queries that run", share,
                     note="target >= 95 %")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sources", nargs="*", help="corpus sources (default: every one, "
                        "or none when --repo is given)")  # fmt: skip
    parser.add_argument("--json", type=Path, help="write every query's outcome here")
    parser.add_argument("--from-json", type=Path, action="append", default=[],
                        help="print the tables of a saved --json run (repeat: of several "
                        "runs together, e.g. one per corpus)")  # fmt: skip
    parser.add_argument("--redo-from", type=Path, action="append", default=[],
                        help="a saved --json run (repeat: several): run again only its "
                        "valid queries that did not run, keep the other outcomes, print the "
                        "tables of the whole; give the saved run's --rows/--rows-only")  # fmt: skip
    parser.add_argument("--top", type=int, help="construct rows: the top N, and every one "
                        "that stops a non-docs query")  # fmt: skip
    parser.add_argument("--repo", type=Path, action="append", default=[],
                        help="a community repository as cloned (work tree or bare git dir); "
                        "its KQL is measured as one more source")  # fmt: skip
    parser.add_argument("--community", type=Path, help="a folder holding the community "
                        "repositories of _kql_repos.COMMUNITY (mirrors or clones): each "
                        "one found is measured as by --repo")  # fmt: skip
    parser.add_argument("--rows", type=int, default=0, help="also run every valid query on "
                        "tables holding this many synthetic rows")  # fmt: skip
    parser.add_argument("--validity-from", type=Path, help="a saved --json run whose "
                        "Kusto.Language verdicts are reused for the same query texts (the "
                        "same corpus schemas); other queries are validated")  # fmt: skip
    parser.add_argument("--only-valid", action="store_true", help="run only the queries "
                        "Kusto.Language finds valid (the figures are about those)")  # fmt: skip
    parser.add_argument("--rows-only", action="store_true", help="with --rows: only the pass "
                        "on tables with rows (its outcomes are the table's runs)")  # fmt: skip
    parser.add_argument("--shard", default="0/1", help="i/n: measure only every n-th query "
                        "from the i-th (0-based), to share a corpus between processes")  # fmt: skip
    parser.add_argument("--skip-from", type=Path, action="append", default=[],
                        help="a saved --json run (repeat: several): leave out the queries it "
                        "measured (to finish a run cut short; --from-json joins both)")  # fmt: skip
    parser.add_argument("--quick", action="store_true", help="skip (for run_all.py --quick)")
    args = parser.parse_args()
    if args.quick:
        print(
            "bench_kql_coverage: a coverage measurement of several minutes; skipped under --quick"
        )
        return 0
    if args.from_json:
        report([row for saved in args.from_json for row in json.loads(saved.read_text())],
               args.top)  # fmt: skip
        return 0
    corpus = corpus_dir()
    if corpus is None:
        print("bench_kql_coverage: the KQL corpus (../shared/data/kql) is not here; skipped")
        return 0
    if args.redo_from:
        saved = [row for path in args.redo_from for row in json.loads(path.read_text())]
        if any("kind_rows" in row for row in saved) and (not args.rows or args.rows_only):
            parser.error("--redo-from: the saved run measured empty tables and tables with "
                         "rows: give its --rows N (without --rows-only)")  # fmt: skip
        partial = args.json.with_suffix(".partial.json") if args.json else None
        rows = redo(corpus, saved, args.rows, args.rows_only, partial)
        report(rows, args.top)
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1))
        return 0
    if args.community:
        from _kql_repos import community_paths

        args.repo += community_paths(args.community)
    sources = args.sources or ([] if args.repo else list(SOURCES))
    verdicts = None
    if args.validity_from:
        saved = json.loads(args.validity_from.read_text())
        verdicts = {r["query"]: (r["syntax_ok"], r["valid"]) for r in saved if "valid" in r}
    partial = args.json.with_suffix(".partial.json") if args.json else None
    index, _, count = args.shard.partition("/")
    if not (index.isdigit() and count.isdigit() and int(index) < int(count)):
        parser.error(f"--shard {args.shard!r}: expected i/n with 0 <= i < n")
    rows = measure(corpus, sources, args.repo, args.rows, verdicts, args.only_valid,
                   args.rows_only, partial, (int(index), int(count)),
                   {(row["source"], str(row["id"])) for path in args.skip_from
                    for row in json.loads(path.read_text())})  # fmt: skip
    report(rows, args.top)
    record(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
