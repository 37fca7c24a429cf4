"""The hostile query catalogue of issue 14: queries a system may generate that would take
the machine's memory or never end, on every embedded engine. `write_hostile_suite` writes
a suite whose live system answers each case with its bomb (the huge texts are generated
by the system, as a model would write them); every bomb must end as `resource_limit` or
`timeout`, one bomb is a gold (the case is unscored: a gold problem) and two cases are
ordinary (they must still pass). Used by tests/test_hostile_queries.py and
bench/bench_hostile.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SALES = ROOT / "examples" / "sql" / "fixtures" / "sales"
LOGS = ROOT / "examples" / "kql" / "fixtures" / "logs"
MOVIES = ROOT / "examples" / "cypher" / "fixtures" / "movies.yaml"
NOW = "2024-06-01T12:00:00Z"

RECURSIVE = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
CARTESIAN = (  # 40 customers: 1.6e11 rows
    "SELECT count(*) FROM customers a, customers b, customers c, customers d, customers e, "
    "customers f, customers g WHERE a.customer_id + b.customer_id + c.customer_id "
    "+ d.customer_id + e.customer_id + f.customer_id + g.customer_id = 7"
)
# case id -> (database, the bomb; "<generated N>" is a query text of N bytes)
BOMBS: dict[str, tuple[str, str]] = {
    "duckdb-list-range": ("duck", "SELECT list(range(1500000000))"),
    "duckdb-repeat": ("duck", "SELECT repeat('x', 3000000000)"),
    "duckdb-sort": ("duck", "SELECT * FROM range(200000000) ORDER BY random()"),
    "duckdb-string-agg": ("duck", "SELECT string_agg(range::VARCHAR, ',') FROM range(300000000)"),
    "duckdb-cartesian": ("duck", CARTESIAN),
    "duckdb-recursive": ("duck", RECURSIVE + "SELECT count(*) FROM r"),
    "duckdb-3mb-text": ("duck", "<generated 3000000>"),
    "duckdb-60mb-text": ("duck", "<generated 60000000>"),
    "sqlite-recursive": ("lite", RECURSIVE + "SELECT count(*) FROM r"),
    "sqlite-recursive-concat": ("lite", RECURSIVE + "SELECT group_concat(n) FROM r"),
    "sqlite-zeroblob": ("lite", "SELECT zeroblob(2000000000)"),
    "sqlite-randomblob": ("lite", "SELECT randomblob(900000000)"),
    "sqlite-cartesian": ("lite", CARTESIAN),
    "kql-range-200m": ("logs", "range x from 1 to 200000000 step 1"),
    "kql-range-make-list": ("logs", "range x from 1 to 200000000 step 1 | summarize make_list(x)"),
    "kql-strrep": ("logs", 'print x = strrep("abc", 1000000000)'),
    "kql-3mb-text": ("logs", "<generated 3000000>"),
}
GRAPH_BOMBS: dict[str, tuple[str, str]] = {
    "cypher-unwind-count": ("graph", "UNWIND range(1, 1000000000) AS x RETURN count(x)"),
    "cypher-unwind-collect": ("graph", "UNWIND range(1, 1000000000) AS x RETURN collect(x)"),
    "cypher-paths": ("graph", "MATCH p = (a)-[*]-(b) RETURN count(p)"),
}
GOLDS = {
    "duck": "SELECT count(*) FROM customers",
    "lite": "SELECT count(*) FROM customers",
    "logs": "Logs | count",
    "graph": "MATCH (m:Movie) RETURN count(m) AS n",
}
GOLD_BOMB = "gold-list-range"  # its gold is a bomb: a gold problem, the case unscored
ORDINARY = ("ordinary-duckdb", "ordinary-kql")

SYSTEM = '''"""The hostile system: answers each case with its bomb (huge texts generated here)."""


def answer(case):
    query = case.metadata["bomb"]
    if query.startswith("<generated "):
        size = int(query.split()[1].rstrip(">"))
        if case.metadata["database"] == "logs":
            head, clause = "Logs | where Level == 'x'", " or Level == 'y'"
        else:
            head, clause = "SELECT 1 FROM customers WHERE 1 = 0", " OR customer_id = 1"
        query = head + clause * ((size - len(head)) // len(clause))
    return query
'''


def write_hostile_suite(folder: Path, options: dict[str, object], *, graph: bool = False) -> Path:
    """A suite of the catalogue in `folder` (each database with `options`); with `graph`,
    the Cypher bombs on an embedded ArcadeDB too. Returns the suite file."""
    folder.mkdir(parents=True, exist_ok=True)
    bombs = {**BOMBS, **(GRAPH_BOMBS if graph else {})}
    cases = []
    for case_id, (database, bomb) in bombs.items():
        cases.append(_case(case_id, database, GOLDS[database], bomb))
    cases.append(_case(GOLD_BOMB, "duck", "SELECT list(range(1500000000))", GOLDS["duck"]))
    cases.append(_case(ORDINARY[0], "duck", GOLDS["duck"], GOLDS["duck"]))
    cases.append(_case(ORDINARY[1], "logs", GOLDS["logs"], GOLDS["logs"]))
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (folder / "hostile_system.py").write_text(SYSTEM)
    databases = {
        "duck": {"engine": "duckdb", "fixture": str(SALES), "options": options},
        "lite": {"engine": "sqlite", "fixture": str(SALES), "options": options},
        "logs": {"engine": "kql", "fixture": str(LOGS), "options": {**options, "now": NOW}},
    }
    if graph:
        databases["graph"] = {"engine": "arcadedb", "fixture": str(MOVIES), "options": options}
    suite = {
        "name": "hostile",
        "cases": "cases.jsonl",
        "databases": databases,
        "systems": [{"name": "hostile", "callable": "hostile_system:answer", "timeout_s": 120}],
        "scorers": [{"name": "executes", "weight": 0}, "execution_match"],
        "reports": ["json"],
    }
    path = folder / "suite.yaml"
    path.write_text(json.dumps(suite, indent=1))  # JSON is YAML
    return path


def _case(case_id: str, database: str, gold: str, bomb: str) -> dict[str, object]:
    return {
        "id": case_id,
        "metadata": {"database": database, "bomb": bomb},
        "conversation": [
            {"content": f"hostile {case_id}", "target": {"query": {"text": gold,
                                                                     "database": database}}}
        ],
    }  # fmt: skip


def outcomes(run: Path) -> dict[str, tuple[str, str]]:
    """case id -> (what execution_match said: a failure reason, `unscored`, `passed` or
    `failed`; its message), from a run's results.jsonl."""
    found = {}
    for line in (run / "results.jsonl").read_text().splitlines():
        record = json.loads(line)
        score = record["scores"]["execution_match"]
        details = score.get("details") or {}
        if score.get("status") == "unscored":
            found[record["case_id"]] = ("unscored", str(score.get("explanation", "")))
        elif details.get("failure"):
            found[record["case_id"]] = (details["failure"], str(details.get("execution", "")))
        else:
            found[record["case_id"]] = ("passed" if score.get("passed") else "failed", "")
    return found


_MEASURED = """
import sys
from queryeval.cli import main
sys.argv = ["queryeval", *sys.argv[1:]]
try:
    main()
finally:  # VmHWM: this process's own peak (ru_maxrss would keep its parent's across exec)
    with open("/proc/self/status") as status:
        peak = next(line.split()[1] for line in status if line.startswith("VmHWM"))
    print("PEAK_RSS_KIB", peak, file=sys.stderr)
"""


def process_tree(root: int) -> set[int]:
    """A process and all its descendants now (from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry.name)] = int(fields[1])
    tree, grew = {root}, True
    while grew:
        more = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree |= more
        grew = bool(more)
    return tree


def _tree_rss_kib(root: int) -> int:
    """The resident memory of a process and all its descendants now, in KiB (from /proc)."""
    total = 0
    for pid in process_tree(root):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        total += next((int(x.split()[1]) for x in status.splitlines() if x.startswith("VmRSS")), 0)
    return total


def run_measured(args: list[str], timeout_s: float = 600) -> tuple[int, str, float, float]:
    """`queryeval ARGS` in a child process: (exit code, stderr, the child's peak RSS in MiB,
    the peak in MiB of the child and every process it started together, e.g. ArcadeDB's
    server, sampled every 0.2 s)."""
    import tempfile
    import time

    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH", "")) if p
        ),
    }  # this checkout's queryeval, whatever the environment installed
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([sys.executable, "-c", _MEASURED, *args], env=env,
                                stdout=subprocess.DEVNULL, stderr=err, text=True)  # fmt: skip
        deadline, tree = time.monotonic() + timeout_s, 0
        while proc.poll() is None:
            if time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                break
            tree = max(tree, _tree_rss_kib(proc.pid))
            time.sleep(0.2)
        err.seek(0)
        stderr = err.read()
    found = [line.split()[1] for line in stderr.splitlines() if line.startswith("PEAK_RSS")]
    own = int(found[-1]) / 1024 if found else float("nan")
    return proc.returncode, stderr, own, max(tree / 1024, own)
