"""An audit's outputs: DIR/audit.json (the findings, a list), DIR/audit-summary.json
(counts and what was covered), DIR/audit.html (one self-contained page), console lines,
and a drafted overlay (`--write-overlay`)."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from queryeval.audit._model import KINDS, AuditReport, Finding

MAX_LINES = 30


def write_report(report: AuditReport, out: Path) -> list[Path]:
    """Write audit.json, audit-summary.json and audit.html into `out`; their paths."""
    out.mkdir(parents=True, exist_ok=True)
    findings = [f.record() for f in report.findings]
    paths = [out / "audit.json", out / "audit-summary.json", out / "audit.html"]
    paths[0].write_text(json.dumps(findings, indent=1, ensure_ascii=False, default=str) + "\n")
    paths[1].write_text(json.dumps(report.summary(), indent=1, ensure_ascii=False) + "\n")
    paths[2].write_text(html_page(report))
    return paths


def console_lines(report: AuditReport) -> list[str]:
    """The console section: counts by kind, then one line per finding (the first few)."""
    counts = report.counts()
    shown = ", ".join(f"{k} {n}" for k, n in counts.items() if n)
    lines = [
        f"audit of {report.suite}: {report.golds} gold(s) of {report.cases} case(s) checked; "
        f"{len(report.findings)} finding(s){': ' + shown if shown else ''}"
    ]
    for finding in report.findings[:MAX_LINES]:
        lines.append(
            f"  {finding.case_id} (gold {finding.gold}): {finding.kind}: {_flat(finding.message)}"
        )
    if len(report.findings) > MAX_LINES:
        lines.append(f"  ... and {len(report.findings) - MAX_LINES} more (audit.json)")
    if report.not_executable:
        lines.append(f"  {report.not_executable} gold(s) not checked: no database of the suite")
    lines.extend(f"  note: {n}" for n in report.notes)
    return lines


def _flat(text: str, limit: int = 200) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


_STYLE = """body{font:14px system-ui,sans-serif;margin:2em;max-width:70em;color:#222}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;
vertical-align:top}th{background:#f4f4f4}pre{white-space:pre-wrap;margin:0;font-size:12px}
details{margin:.2em 0}.kind{font-weight:600}"""


def html_page(report: AuditReport) -> str:
    """The audit as one self-contained HTML page (no script, no external resource)."""
    e = html.escape
    counts = report.counts()
    rows = "".join(f"<tr><td>{e(k)}</td><td>{counts[k]}</td></tr>" for k in KINDS)
    items = []
    for f in report.findings:
        evidence = e(json.dumps(f.evidence, indent=1, ensure_ascii=False, default=str))
        items.append(
            f"<tr><td>{e(f.case_id)}</td><td>{f.gold}</td><td class=kind>{e(f.kind)}"
            f"</td><td>{e(f.message)}<details><summary>evidence</summary><pre>"
            f"{evidence}</pre></details></td></tr>"
        )
    notes = "".join(f"<li>{e(n)}</li>" for n in report.notes)
    body = (
        (
            "<table><tr><th>case</th><th>gold</th><th>kind</th><th>finding</th></tr>"
            + "".join(items)
            + "</table>"
        )
        if items
        else "<p>No finding.</p>"
    )
    return (
        f"<!doctype html><html><head><meta charset=utf-8><title>audit: {e(report.suite)}"
        f"</title><style>{_STYLE}</style></head><body><h1>Gold audit: {e(report.suite)}</h1>"
        f"<p>{report.golds} gold(s) of {report.cases} case(s) checked; "
        f"{report.not_executable} without a database; systems compared: "
        f"{e(', '.join(report.systems) or 'none')}.</p>"
        f"<table><tr><th>kind</th><th>findings</th></tr>{rows}</table>"
        f"{'<ul>' + notes + '</ul>' if notes else ''}<h2>Findings</h2>{body}</body></html>\n"
    )


def proposed_entries(findings: list[Finding]) -> list[dict[str, Any]]:
    """One proposed overlay entry per case with findings: a corrected gold where the audit
    has one (the majority's query of `disputed`; `unknown_literal` with its nearest value
    put in), else `drop: true`."""
    by_case: dict[str, list[Finding]] = {}
    for f in findings:
        by_case.setdefault(f.case_id, []).append(f)
    out: list[dict[str, Any]] = []
    for case_id, found in by_case.items():
        kinds = sorted({f.kind for f in found}, key=KINDS.index)
        entry: dict[str, Any] = {"case_id": case_id}
        fix = _correction(found)
        if fix is not None:
            entry["gold"] = fix
        else:
            entry["drop"] = True
        entry["reason"] = "; ".join(_flat(f.message, 160) for f in found)
        entry["source"] = "queryeval audit"
        entry["kind"] = ",".join(kinds)
        entry["proposed"] = True
        out.append(entry)
    return out


def _correction(found: list[Finding]) -> str | None:
    for f in found:
        if f.kind == "disputed" and f.evidence.get("systems"):
            return str(f.evidence["systems"][0]["query"])
    for f in found:
        near = f.evidence.get("near_matches") or []
        query = f.evidence.get("query")
        if f.kind == "unknown_literal" and near and isinstance(query, str):
            old = "'" + str(f.evidence["literal"]).replace("'", "''") + "'"
            new = "'" + str(near[0]["value"]).replace("'", "''") + "'"
            if query.count(old) == 1:
                return query.replace(old, new)
    return None


def draft_overlay(report: AuditReport, path: Path) -> Path:
    """Write a YAML overlay of proposed entries for the report's findings."""
    import yaml

    entries = proposed_entries(report.findings)
    header = (
        "# Drafted by `queryeval audit` from its findings: every entry is `proposed`.\n"
        "# A person checks each one, then removes `proposed: true` to apply it.\n"
    )
    text = yaml.safe_dump(entries, sort_keys=False, allow_unicode=True, width=100)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(header + (text if entries else "[]\n"))
    return path


def overlay_html(content: dict[str, Any]) -> str:
    """An overlay's figures as one self-contained HTML page: per system the original and
    the overlay's figures side by side, then the changed cases."""
    e = html.escape
    o, c = content["overlay"], content["cases"]

    def fmt(v: Any) -> str:
        return "n/a" if v is None else f"{v:.3f}" if isinstance(v, float) else e(str(v))

    labels = sorted({k for f in content["systems"].values() for k in f["original"]["means"]})
    head = "".join(
        f"<th>{e(x)} (original)</th><th>{e(x)} (overlay)</th>" for x in ["pass rate", *labels]
    )
    rows = []
    for system, figs in content["systems"].items():
        a, b = figs["original"], figs["overlay"]
        cells = [fmt(a["pass_rate"]), fmt(b["pass_rate"])]
        for label in labels:
            cells += [fmt(a["means"].get(label)), fmt(b["means"].get(label))]
        rows.append(f"<tr><td>{e(system)}</td>" + "".join(f"<td>{x}</td>" for x in cells) + "</tr>")
    changed = "".join(
        f"<tr><td>{e(ch['case_id'])}</td><td>{e(ch['action'])}</td><td>{e(ch['reason'])}</td>"
        f"<td>{e(ch['source'])}</td><td>"
        + ", ".join(
            f"{e(s)}: {v['original']} &rarr; {v['overlay']}" for s, v in ch["systems"].items()
        )
        + "</td></tr>"
        for ch in content["changed"]
    )
    return (
        f"<!doctype html><html><head><meta charset=utf-8><title>overlay {e(o['name'])}</title>"
        f"<style>{_STYLE}</style></head><body><h1>Overlay {e(o['name'])}</h1>"
        f"<p>{e(o['file'])}, sha256 {e(o['sha256'])}: {c['corrected']} corrected, "
        f"{c['dropped']} dropped, {o['proposed']} proposed (not applied); {c['overlay']} of "
        f"{c['original']} cases kept.</p><table><tr><th>system</th>{head}</tr>{''.join(rows)}"
        "</table><h2>Changed cases</h2><table><tr><th>case</th><th>action</th><th>reason</th>"
        f"<th>source</th><th>verdicts</th></tr>{changed}</table></body></html>\n"
    )
