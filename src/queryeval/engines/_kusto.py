"""KQL on a Kusto endpoint (Azure Data Explorer, or `duckdb-kql serve` on 127.0.0.1) with the
official `azure-kusto-data` client: read-only requests, a server timeout, the clock pinned,
and a client-side bound so a server that ignores the timeout cannot hold the run."""

from __future__ import annotations

import concurrent.futures as cf
import datetime as dt
import re
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from queryeval.cases import OutcomeKind
from queryeval.engines._base import (
    Engine,
    Limits,
    QueryTimeout,
    RawResult,
    collect_rows,
    describe_refusal,
)
from queryeval.languages import kql

BACKSTOP = 1.4  # x timeout: stop waiting for the server
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}

_RULES: list[tuple[re.Pattern[str], OutcomeKind]] = [
    (re.compile(r"writes are disabled|read-?only|Forbidden", re.I), "refused"),
    (
        re.compile(
            r"E_RUNAWAY_QUERY|E_QUERY_RESULT_SET_TOO_LARGE|E_LOW_MEMORY_CONDITION|"
            r"exceeded the allowed (memory|result set|limits)|Low memory condition|"
            r"Out of Memory Error|Max expression depth",
            re.I,
        ),
        "resource_limit",
    ),
    (re.compile(r"could not parse|syntax error|SYN0002", re.I), "syntax"),
    (re.compile(r"unsupported KQL construct|not supported", re.I), "unsupported"),
    (
        re.compile(
            r"schema error|Binder Error|Catalog Error|Failed to resolve|SEM0100|"
            r"does not exist|unknown (table|column|function)",
            re.I,
        ),
        "schema",
    ),
    (re.compile(r"timed? ?out|expired|INTERRUPT|servertimeout", re.I), "timeout"),
    (
        re.compile(r"E_SERVICE_NOT_AVAILABLE|ServiceUnavailable|Internal error|\b50[234]\b"),
        "engine_error",
    ),
]


def classify_kusto(exc: BaseException) -> tuple[OutcomeKind, str] | None:
    """A Kusto service error as an outcome kind, read from its message."""
    from azure.kusto.data.exceptions import KustoError

    if not isinstance(exc, KustoError):
        return None
    message = str(exc)
    for pattern, kind in _RULES:
        if pattern.search(message):
            return kind, describe_refusal(message) if kind == "refused" else message
    return "runtime", message


class KustoEngine(Engine):
    """KQL on a Kusto cluster URL, database `database`."""

    language = "kql"
    in_process = False  # the server holds the query's memory

    def __init__(self, name: str, url: str, database: str, limits: Limits, identity: str,
                 now: dt.datetime, auth: str | None = None) -> None:  # fmt: skip
        super().__init__(name, limits, identity)
        from azure.kusto.data import KustoClient, KustoConnectionStringBuilder

        self.url, self.database, self.now = url, database, now
        host = urlparse(url).hostname or ""
        auth = auth or ("none" if host in _LOOPBACK else "az_cli")
        kcsb = KustoConnectionStringBuilder
        builders = {
            "none": kcsb.with_no_authentication,
            "az_cli": kcsb.with_az_cli_authentication,
            "managed_identity": kcsb.with_aad_managed_service_identity_authentication,
        }
        if auth not in builders:
            raise ValueError(f"unknown Kusto auth {auth!r}: expected one of {sorted(builders)}")
        self._client = KustoClient(builders[auth](url))
        self._pool = cf.ThreadPoolExecutor(max_workers=8, thread_name_prefix="queryeval-kusto")

    def refusal(self, query: str) -> str | None:
        reason = kql.read_only_refusal(query)
        return describe_refusal(reason) if reason else None

    def _properties(self) -> Any:
        from azure.kusto.data import ClientRequestProperties

        crp = ClientRequestProperties()
        crp.client_request_id = f"queryeval;{uuid.uuid4()}"
        crp.set_option("request_readonly", True)
        crp.set_option("servertimeout", dt.timedelta(seconds=self.limits.timeout_s))
        crp.set_option("query_now", self.now.isoformat())
        crp.set_option("request_timeout", dt.timedelta(seconds=self.limits.timeout_s * BACKSTOP))
        return crp

    def _pinned(self, query: str) -> str:
        """The query with `set query_now` in its text too: some servers (duckdb-kql serve
        1.1) read request options only when sent as an object, not as the SDK's string."""
        if query.lstrip().startswith("."):
            return query
        stamp = self.now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        return f"set query_now = datetime({stamp});\n{query}"

    def _request(self, query: str) -> RawResult:
        response = self._client.execute(self.database, self._pinned(query), self._properties())
        table = response.primary_results[0]
        columns = [c.column_name for c in table.columns]
        rows, truncated = collect_rows([table.raw_rows], self.limits)
        return RawResult(columns, rows, truncated)

    def _run(self, query: str) -> RawResult:
        future = self._pool.submit(self._request, query)
        try:
            return future.result(timeout=self.limits.timeout_s * BACKSTOP)
        except cf.TimeoutError:
            raise QueryTimeout(
                f"no answer within {BACKSTOP:g} x the {self.limits.timeout_s:g}s limit"
            ) from None

    def classify(self, exc: BaseException) -> tuple[OutcomeKind, str]:
        return classify_kusto(exc) or ("engine_error", f"{type(exc).__name__}: {exc}")

    def explain(self, query: str) -> str:
        raw = self._run(f"{query}\n| take 0")
        return ", ".join(raw.columns)

    def schema(self) -> dict[str, Any]:
        raw = self._run(".show tables")
        tables: dict[str, dict[str, str]] = {}
        for row in raw.rows:
            table = str(row[0])
            cols = self._run(f"{table} | getschema")
            names = [c.lower() for c in cols.columns]
            name_i = names.index("columnname") if "columnname" in names else 0
            type_i = names.index("columntype") if "columntype" in names else -1
            tables[table] = {str(r[name_i]): str(r[type_i]) for r in cols.rows}
        return {"tables": tables, "now": self.now.isoformat()}

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._client.close()


class KqlServer:
    """`duckdb-kql serve` on 127.0.0.1 over a DuckDB file attached READ_ONLY (for tests and
    local use): `url` and `database` are what a KustoEngine needs."""

    def __init__(self, path: Path, database: str = "db") -> None:
        self.path, self.database = path, database
        self.url = ""
        self._dir = Path(tempfile.mkdtemp(prefix="queryeval-kql-"))
        init = self._dir / "init.sql"
        quoted = str(path.resolve()).replace("'", "''")
        init.write_text(f'ATTACH \'{quoted}\' AS "{database}" (READ_ONLY);\nUSE "{database}";\n')
        self._log = (self._dir / "serve.log").open("w")
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "duckdb_kql", "serve", "--init", str(init), "--port", "0"],
            stdout=subprocess.PIPE, stderr=self._log, text=True, cwd=self._dir,
        )  # fmt: skip
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            match = re.search(r"(http://127\.0\.0\.1:\d+)", line)
            if match:
                self.url = match.group(1)
                break
        if not self.url:
            self.close()
            raise RuntimeError(f"duckdb-kql serve did not start; see {self._dir / 'serve.log'}")

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(10)
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        self._log.close()

    def __enter__(self) -> KqlServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
