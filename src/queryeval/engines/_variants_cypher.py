"""Scratch graphs for verified verdicts on Cypher (`queryeval.verify`): a separate embedded
ArcadeDB with its Bolt plugin on 127.0.0.1, in its own child process, serving one empty
database `scratch` that the variants of a graph are written into one after another. The
user's graph is never written: it is only read, through its own engine, read-only.

The child writes each variant with ArcadeDB's Java API (a JSON graph on its stdin, one line
a graph: every vertex deleted, then the graph's vertices and edges created in one
transaction; it answers `OK` or `ERROR ...`); the queries run over Bolt as a read-only user
(its password passed on the child's stdin), through `ScratchGraphEngine`,
the Cypher engine itself (read transactions always rolled back, the same timeouts, the
same failure classes), checked against the names of the *original* graph, so a query
naming a label that a variant happens to lack fails or runs exactly as on the original.

    python -m queryeval.engines._variants_cypher --root R --timeout-ms N --heap H
        (stdin: the reader's password, then one JSON graph a line) prints
        `READY <bolt port>`, then `OK` or `ERROR ...` a graph; stops at stdin EOF.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from queryeval.engines._arcadedb_server import READER
from queryeval.engines._base import Limits
from queryeval.engines._cypher import CypherEngine

DATABASE = "scratch"


class ScratchGraphEngine(CypherEngine):
    """The Cypher engine on the scratch database, checking names against `names` (the
    original graph's labels, relationship types and property keys)."""

    def __init__(self, url: str, auth: tuple[str, str], limits: Limits,
                 names: dict[str, Any]) -> None:  # fmt: skip
        self._fixed_names = {k: set(v) for k, v in names.items()}
        super().__init__("scratch", limits, "scratch-graph", url=url, auth=auth,
                         database=DATABASE)  # fmt: skip

    def graph_names(self) -> dict[str, Any] | None:
        return self._fixed_names or None  # no names given: nothing checked


class GraphScratch:
    """One scratch ArcadeDB server: `load` a graph ({"nodes": [[id, [labels], {props}]],
    "rels": [[type, from id, to id, {props}]]}), query it through `engine(names)`;
    `close` stops the server and removes its folder. Not thread-safe: one user at a time
    (`lock`)."""

    def __init__(self, limits: Limits, *, heap: str = "512m",
                 start_timeout_s: float = 180.0) -> None:  # fmt: skip
        from queryeval.engines._arcadedb import _child_env, _read_status

        self.limits = limits
        self._folder = Path(tempfile.mkdtemp(prefix="queryeval-graph-variants-"))
        self._reader_password = secrets.token_hex(16)
        timeout_ms = max(1, int(limits.timeout_s * 1000))
        log = (self._folder / "server.log").open("w")
        self._proc = subprocess.Popen(
            [sys.executable, "-m", __name__, "--root", str(self._folder), "--timeout-ms",
             str(timeout_ms), "--heap", heap],
            cwd=self._folder, env=_child_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=log, text=True,
        )  # fmt: skip
        log.close()
        assert self._proc.stdin is not None
        self._proc.stdin.write(f"{self._reader_password}\n")
        self._proc.stdin.flush()
        status = _read_status(self._proc, start_timeout_s)
        if not status.startswith("READY"):
            tail = (self._folder / "server.log").read_text(errors="replace")[-2000:]
            self.close()
            raise RuntimeError(f"the scratch ArcadeDB did not start: {status[7:]}\n{tail}")
        self.url = f"bolt://127.0.0.1:{int(status.split()[1])}"
        self._engines: list[ScratchGraphEngine] = []
        self.lock = threading.RLock()
        self.loaded: str | None = None  # the graph now in the database (its JSON)

    def engine(self, names: dict[str, Any]) -> ScratchGraphEngine:
        """A read-only Cypher engine on the scratch database, checking `names`."""
        engine = ScratchGraphEngine(self.url, (READER, self._reader_password), self.limits,
                                    names)  # fmt: skip
        self._engines.append(engine)
        return engine

    def forget(self, engine: ScratchGraphEngine) -> None:
        """Close an engine made by `engine`."""
        with contextlib.suppress(ValueError):
            self._engines.remove(engine)
        with contextlib.suppress(Exception):
            engine.close()

    def load(self, graph: dict[str, Any]) -> None:
        """Replace the scratch database's content by `graph` (or by what the Cypher
        statement `{"cypher": text}` creates); RuntimeError when the child refuses it (a
        value ArcadeDB cannot store, a statement it cannot run)."""
        text = json.dumps(graph, sort_keys=True, default=_unjsonable)
        with self.lock:
            if text == self.loaded:
                return
            self.loaded = None
            proc = self._proc
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(text + "\n")
            proc.stdin.flush()
            answer = proc.stdout.readline().strip()
            if answer != "OK":
                raise RuntimeError(f"the scratch graph was not written: {answer or 'no answer'}")
            self.loaded = text

    def close(self) -> None:
        """Close the engines and the writer, stop the server, remove its folder."""
        for engine in self._engines:
            with contextlib.suppress(Exception):
                engine.close()
        self._engines.clear()
        proc = self._proc
        if proc.poll() is None:
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                if proc.stdin is not None:
                    proc.stdin.close()  # asks for a clean stop
                proc.wait(10)
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
        if proc.stdout is not None:
            proc.stdout.close()
        shutil.rmtree(self._folder, ignore_errors=True)


_POOL: dict[float, list[Any]] = {}  # timeout -> [scratch, holders]
_POOL_LOCK = threading.Lock()


def acquire_graph_scratch(limits: Limits) -> GraphScratch:
    """A scratch server for graphs queried under `limits`: the one already started for the
    same time limit while someone holds it, else a new one (a JVM: seconds to start, so no
    runnable example here; tests/test_verified_cypher.py uses it). Give it back with
    `release_graph_scratch` (the last holder's release stops it)."""
    with _POOL_LOCK:
        held = _POOL.get(limits.timeout_s)
        if held is not None and held[0]._proc.poll() is None:
            held[1] += 1
            return held[0]
        scratch = GraphScratch(limits)
        _POOL[limits.timeout_s] = [scratch, 1]
        return scratch


def release_graph_scratch(scratch: GraphScratch) -> None:
    """Give back a scratch server from `acquire_graph_scratch`."""
    with _POOL_LOCK:
        held = _POOL.get(scratch.limits.timeout_s)
        if held is not None and held[0] is scratch:
            held[1] -= 1
            if held[1] > 0:
                return
            del _POOL[scratch.limits.timeout_s]
    scratch.close()


def _unjsonable(value: Any) -> Any:
    raise TypeError(f"a {type(value).__name__} cannot be written to the scratch graph")


def _write(db: Any, graph: dict[str, Any]) -> None:
    """Delete every vertex (and so every edge), then create `graph` (or run its Cypher
    statement), in one transaction."""
    schema = db.schema
    if "cypher" in graph:
        with db.transaction():
            for vertex_type in [t.getName() for t in schema.get_types() if _is_vertex(t)]:
                db.command("sql", f"DELETE FROM `{vertex_type}`")
            if graph["cypher"]:
                db.command("cypher", graph["cypher"])
        return
    labels = {label for _, names, _ in graph["nodes"] for label in names}
    types = {rel[0] for rel in graph["rels"]}
    for label in sorted(labels):
        schema.get_or_create_vertex_type(label)
    for rel_type in sorted(types):
        schema.get_or_create_edge_type(rel_type)
    with db.transaction():
        for vertex_type in [t.getName() for t in schema.get_types() if _is_vertex(t)]:
            db.command("sql", f"DELETE FROM `{vertex_type}`")
        made: dict[Any, Any] = {}
        for key, names, properties in graph["nodes"]:
            vertex = db.new_vertex(names[0])
            for name, value in properties.items():
                vertex.set(name, value)
            vertex.save()
            made[key] = vertex
        for rel_type, start, end, properties in graph["rels"]:
            made[start].new_edge(rel_type, made[end], **properties)


def _is_vertex(java_type: Any) -> bool:
    return "Vertex" in str(java_type.getClass().getSimpleName())


def _serve(root: Path, timeout_ms: int, heap: str, reader_password: str) -> None:
    """Create the empty scratch database, serve it over Bolt, write each graph read from
    stdin; stop at EOF."""
    from queryeval.engines._arcadedb_server import start_server

    # C1 only and the serial collector: a short-lived server of small graphs, where the
    # optimising compiler's and parallel GC's threads cost CPU and never pay back (measured:
    # half the child's CPU seconds, each graph written ~2x faster)
    jvm_args = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]
    with start_server(root, DATABASE, timeout_ms, reader_password, heap, jvm_args=jvm_args,
                      create=True) as (server, port):  # fmt: skip
        db = server.get_database(DATABASE)
        print(f"READY {port}", flush=True)
        for line in sys.stdin:  # the parent closes our stdin to stop us
            try:
                _write(db, json.loads(line))
                print("OK", flush=True)
            except Exception as exc:
                message = " ".join(f"{type(exc).__name__}: {exc}".split())[:500]
                print(f"ERROR {message}", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog=__name__)
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--timeout-ms", type=int, default=30_000)
    parser.add_argument("--heap", default="512m")
    args = parser.parse_args(argv)
    code = 0
    try:
        reader_password = sys.stdin.readline().strip()  # never on the command line
        _serve(args.root, args.timeout_ms, args.heap, reader_password)
    except BaseException as exc:
        print(f"ERROR {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        print(f"FAILED {type(exc).__name__}: {exc}", flush=True)
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # skip JPype's interpreter-exit teardown, which can crash


if __name__ == "__main__":
    main()
