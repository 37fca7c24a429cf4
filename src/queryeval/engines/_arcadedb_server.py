"""Child process that builds or serves an ArcadeDB graph (run as `python -m ...`).

ArcadeDB runs in a JVM inside the Python process (JPype); keeping it in a child process
keeps the JVM out of the evaluator, lets a hung query be ended by ending the process, and
avoids JPype's crash at interpreter exit (this process leaves with `os._exit`).

    build  --root R --database NAME --seed graph.yaml   build R/databases/NAME from the seed
    serve  --root R --database NAME --timeout-ms N --query-heap-mb M --password P
           start the server with the Bolt plugin on 127.0.0.1 (a free port), create a
           read-only user `queryeval_reader`, print `READY <bolt port>`, stop at stdin EOF.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import socket
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

READER = "queryeval_reader"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def build(root: Path, database: str, seed: Path, heap: str) -> None:
    """Create the database from a graph seed (see `queryeval.engines._graph`)."""
    import arcadedb_embedded as arcadedb
    from arcadedb_embedded.jvm import start_jvm

    from queryeval.engines._graph import load_graph_seed

    graph = load_graph_seed(seed)
    start_jvm(heap_size=heap)
    db = arcadedb.create_database(str(root / "databases" / database))
    try:
        for label in graph.labels:
            db.command("sql", f"CREATE VERTEX TYPE `{label}` IF NOT EXISTS")
        for rel_type in graph.relationship_types:
            db.command("sql", f"CREATE EDGE TYPE `{rel_type}` IF NOT EXISTS")
        vertices: dict[str, Any] = {}
        with db.transaction():
            for node in graph.nodes:
                vertex = db.new_vertex(node.label)
                for key, value in node.properties.items():
                    vertex.set(key, value)
                vertex.save()
                vertices[node.key] = vertex
            for rel in graph.relationships:
                vertices[rel.start].new_edge(rel.type, vertices[rel.end], **rel.properties)
    finally:
        db.close()


@contextlib.contextmanager
def start_server(
    root: Path,
    database: str,
    timeout_ms: int,
    reader_password: str,
    heap: str,
    *,
    jvm_args: Sequence[str] = (),
    query_heap_mb: int = 0,
    create: bool = False,
) -> Iterator[tuple[Any, int]]:
    """Start the JVM (`heap`, extra `jvm_args`) and an ArcadeDB server on `root` with the
    Bolt plugin on 127.0.0.1 (a free port, a random root password), the server-side query
    deadline `timeout_ms` and a read-only user `queryeval_reader` of `database` (its group
    may read every record, no result-set limit); yield (server, Bolt port); stop the
    server on exit. `query_heap_mb` (when positive) is ArcadeDB's heap budget of the
    queries' buffers (sorts, DISTINCT, collect(), cartesian products ...): a query past it
    fails instead of exhausting the JVM's heap. `create`: create `database` empty first."""
    import arcadedb_embedded as arcadedb
    import jpype
    from arcadedb_embedded.jvm import start_jvm

    start_jvm(heap_size=heap, jvm_args=list(jvm_args) or None)
    config = jpype.JClass("com.arcadedb.GlobalConfiguration")
    # The server-side deadline: checked inside scans, expansions and filters.
    config.COMMAND_TIMEOUT.setValue(timeout_ms)
    if query_heap_mb > 0:
        config.QUERY_MAX_HEAP_RAM.setValue(query_heap_mb)
    if create:
        arcadedb.create_database(str(root / "databases" / database)).close()
    port = _free_port()
    server = arcadedb.create_server(
        str(root),
        root_password=secrets.token_hex(18),
        config={
            "host": "127.0.0.1",
            "http_port": _free_port(),
            "server_plugins": "Bolt:com.arcadedb.bolt.BoltProtocolPlugin",
            "bolt_port": port,
        },
    )
    server.start()
    try:
        security = server._java_server.getSecurity()
        json_object = jpype.JClass("com.arcadedb.serializer.json.JSONObject")
        reader_group = {
            "access": [],
            "resultSetLimit": -1,
            "readTimeout": timeout_ms,
            "types": {"*": {"access": ["readRecord"]}},
        }
        security.saveGroup(database, "reader", json_object(json.dumps(reader_group)))
        user = {
            "name": READER,
            "password": str(security.encodePassword(reader_password)),
            "databases": {database: ["reader"]},
        }
        security.createUser(json_object(json.dumps(user)))
        yield server, port
    finally:
        server.stop()


def serve(root: Path, database: str, timeout_ms: int, password: str, heap: str,
          query_heap_mb: int = 0) -> None:  # fmt: skip
    """Serve `database` over Bolt until stdin closes (see `start_server`)."""
    with start_server(root, database, timeout_ms, password, heap,
                      query_heap_mb=query_heap_mb) as (_, port):  # fmt: skip
        print(f"READY {port}", flush=True)
        sys.stdin.read()  # the parent closes our stdin to stop us


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="queryeval.engines._arcadedb_server")
    parser.add_argument("mode", choices=["build", "serve"])
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--database", required=True)
    parser.add_argument("--seed", type=Path)
    parser.add_argument("--timeout-ms", type=int, default=30_000)
    parser.add_argument("--heap", default="1g")
    parser.add_argument("--query-heap-mb", type=int, default=0)
    args = parser.parse_args(argv)
    code = 0
    try:
        if args.mode == "build":
            build(args.root, args.database, args.seed, args.heap)
        else:
            password = sys.stdin.readline().strip()  # never on the command line
            serve(args.root, args.database, args.timeout_ms, password, args.heap,
                  args.query_heap_mb)  # fmt: skip
    except BaseException as exc:
        print(f"ERROR {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        print(f"FAILED {type(exc).__name__}: {exc}", flush=True)
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # skip JPype's interpreter-exit teardown, which can crash


if __name__ == "__main__":
    main()
