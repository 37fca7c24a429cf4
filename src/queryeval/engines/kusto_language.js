// queryeval's KQL validity helper: Microsoft's Kusto.Language parser and analyzer (npm
// package @kusto/language-service-next) behind JSON lines on stdin/stdout.
//
// Started once per run by queryeval.engines._kusto_language.KqlValidator, never per query.
// Requests, one JSON object a line:
//   {"id": 1, "op": "hello"}                                -> {"id": 1, "version": "..."}
//   {"id": 2, "op": "schema", "name": "s1", "database": "db",
//    "tables": {"T": [["a", "string"], ["b", "long"]]}}     -> {"id": 2, "ok": true}
//   {"id": 3, "op": "check", "query": "T | take 1", "schema": "s1"}
//     -> {"id": 3, "syntax": [diagnostic, ...], "all": [diagnostic, ...]}
// "hello" and "schema" also analyze a few queries (warm-up: never counted against a query).
// A diagnostic is {code, severity, category, message, start, length}. "syntax" holds the
// parser's diagnostics, "all" the parser's and the analyzer's against the named schema (or
// against no database without "schema"). A request that fails answers {"id", "error"}.
"use strict";

const path = require("path");
const readline = require("readline");

const packageDir = process.argv[2];
if (!packageDir) {
  process.stderr.write("usage: node kusto_language.js <@kusto/language-service-next folder>\n");
  process.exit(2);
}
// Bridge.NET's runtime, then the translated Kusto.Language assembly; both define globals.
require(path.join(packageDir, "bridge.min.js"));
require(path.join(packageDir, "Kusto.Language.Bridge.min.js"));
const K = Kusto.Language;
const S = K.Symbols;
const VERSION = require(path.join(packageDir, "package.json")).version;

const globals = new Map();

function scalarType(name) {
  const type = S.ScalarTypes.GetSymbol(name);
  if (!type) {
    throw new Error(`unknown KQL type ${JSON.stringify(name)}`);
  }
  return type;
}

function defineSchema(request) {
  const tables = [];
  for (const [table, columns] of Object.entries(request.tables || {})) {
    const symbols = columns.map(
      ([column, type]) => new S.ColumnSymbol(column, scalarType(type), null, null, null, null)
    );
    tables.push(new S.TableSymbol.$ctor4(table, symbols));
  }
  const database = new S.DatabaseSymbol.$ctor1(request.database || "db", tables, false);
  globals.set(request.name, K.GlobalState.Default.WithDatabase(database));
}

function diagnostics(list) {
  return Bridge.toArray(list).map((d) => ({
    code: d.Code,
    severity: d.Severity,
    category: d.Category,
    message: d.Message,
    start: d.Start,
    length: d.Length,
  }));
}

function check(request) {
  let state = K.GlobalState.Default;
  if (request.schema !== undefined && request.schema !== null) {
    state = globals.get(request.schema);
    if (!state) {
      throw new Error(`unknown schema ${JSON.stringify(request.schema)}`);
    }
  }
  const code = K.KustoCode.ParseAndAnalyze(String(request.query), state);
  return { syntax: diagnostics(code.GetSyntaxDiagnostics()), all: diagnostics(code.GetDiagnostics()) };
}

// Warm-up, part of the start (never counted against a query): the first analysis builds
// Kusto.Language's global tables and compiles its hot paths.
const WARM_UP = [
  "print x = 1, s = 'a' | extend y = x + 1, t = strcat(s, 'b') | where y > 0 | project y, t",
  "range i from 1 to 3 step 1 | summarize n = count(), m = max(i) by b = bin(i, 2) | order by n desc | take 1",
  "datatable(a: string, b: dynamic) ['x', dynamic({})] | mv-expand b | join kind=inner (print a = 'x') on a",
];

function warmUp(state) {
  for (const query of WARM_UP) {
    const code = K.KustoCode.ParseAndAnalyze(query, state);
    code.GetDiagnostics();
  }
}

function answer(request) {
  switch (request.op) {
    case "hello":
      warmUp(K.GlobalState.Default);
      return { version: VERSION };
    case "schema":
      defineSchema(request);
      warmUp(globals.get(request.name));
      return { ok: true };
    case "check":
      return check(request);
    default:
      throw new Error(`unknown op ${JSON.stringify(request.op)}`);
  }
}

const lines = readline.createInterface({ input: process.stdin, terminal: false });
lines.on("line", (line) => {
  if (!line.trim()) {
    return;
  }
  let request = {};
  let reply;
  try {
    request = JSON.parse(line);
    reply = { id: request.id, ...answer(request) };
  } catch (err) {
    reply = { id: request.id === undefined ? null : request.id, error: String(err && err.message || err) };
  }
  process.stdout.write(JSON.stringify(reply) + "\n");
});
lines.on("close", () => process.exit(0));
