"""JUnit XML: each (system, case) a testcase, each gate a testcase, so CI systems list them.

Failures carry the failing scorers with their values and thresholds; a system crash is an
`<error>`; a case no scorer could judge is `<skipped>` (unscored is never a failure).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from queryeval.cases import CaseInfo
from queryeval.reports._casedata import cap, latency_of

if TYPE_CHECKING:
    from queryeval.scorers import Scorer

# characters XML 1.0 cannot hold (ElementTree would write them and break the file)
_BAD_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_DETAIL_CHARS = 4000


def _clean(text: str) -> str:
    return _BAD_XML.sub("\ufffd", text)


def _failure_lines(rec: Mapping[str, Any], scorers: Mapping[str, Scorer]) -> list[str]:
    """One line per scorer that failed the case (or that was required and gave no pass)."""
    lines = []
    for label, sd in (rec.get("scores") or {}).items():
        scorer = scorers.get(label)
        required = scorer is not None and scorer.config is not None and scorer.config.required
        why = (sd.get("explanation") or "").split("\n")[0]
        if sd.get("passed") is False:
            value = sd.get("value")
            text = f"{label} = {value:.4g}" if value is not None else f"{label} failed"
            threshold = scorer.threshold if scorer is not None else None
            if threshold is not None and value is not None:
                text += f" (threshold {threshold:g})"
            lines.append(f"{text}: {why}" if why else text)
        elif required and sd.get("passed") is not True:
            lines.append(f"{label} is required but {sd.get('status', 'gave no verdict')}: {why}")
    return lines


def _testcase(
    parent: ET.Element, classname: str, rec: Mapping[str, Any], scorers: Mapping[str, Scorer]
) -> str:
    latency = latency_of(rec)
    tc = ET.SubElement(
        parent,
        "testcase",
        classname=classname,
        name=_clean(str(rec["case_id"])),
        time=f"{latency or 0:.3f}",
    )
    if rec.get("error"):
        err = _clean(str(rec["error"]))
        ET.SubElement(
            tc, "error", message=cap(err.split("\n")[0], 300), type="system_error"
        ).text = cap(err, _DETAIL_CHARS)
        return "error"
    if rec.get("passed") is False:
        lines = [_clean(line) for line in _failure_lines(rec, scorers)] or ["the case failed"]
        failure = ET.SubElement(tc, "failure", message=cap("; ".join(lines), 300), type="failed")
        failure.text = cap("\n".join(lines), _DETAIL_CHARS)
        return "failure"
    if rec.get("passed") is None:
        reasons = [
            f"{label}: {sd.get('status')} {sd.get('explanation', '')}".strip()
            for label, sd in (rec.get("scores") or {}).items()
        ]
        ET.SubElement(tc, "skipped", message=_clean(cap("no verdict; " + "; ".join(reasons), 300)))
        return "skipped"
    return "passed"


def _suite_element(root: ET.Element, name: str, counts: dict[str, int], time: float) -> None:
    el = root[-1]
    el.set("name", name)
    el.set("tests", str(sum(counts.values())))
    el.set("failures", str(counts.get("failure", 0)))
    el.set("errors", str(counts.get("error", 0)))
    el.set("skipped", str(counts.get("skipped", 0)))
    el.set("time", f"{time:.3f}")


def write_junit(
    path: Path,
    summary: Mapping[str, Any],
    cases: Sequence[CaseInfo],
    records: Sequence[Mapping[str, Any]],
    scorers: Mapping[str, Scorer],
) -> Path:
    """Write JUnit XML (one testsuite per system, one for the gates); returns its path."""
    suite = str(summary.get("suite", "queryeval"))
    order = {c.id: i for i, c in enumerate(cases)}
    by_system: dict[str, list[Mapping[str, Any]]] = {s: [] for s in summary.get("systems", {})}
    for rec in records:
        by_system.setdefault(rec["system"], []).append(rec)
    root = ET.Element("testsuites", name=f"queryeval: {suite}")
    totals: dict[str, int] = {}
    total_time = 0.0
    for system, recs in by_system.items():
        recs.sort(key=lambda r: order.get(r["case_id"], len(order)))
        classname = _clean(f"{suite}.{system}")
        ET.SubElement(root, "testsuite")
        counts: dict[str, int] = {}
        time = 0.0
        for rec in recs:
            outcome = _testcase(root[-1], classname, rec, scorers)
            counts[outcome] = counts.get(outcome, 0) + 1
            time += latency_of(rec) or 0.0
        _suite_element(root, classname, counts, time)
        for k, v in counts.items():
            totals[k] = totals.get(k, 0) + v
        total_time += time
    gates = summary.get("gates") or []
    if gates:
        ET.SubElement(root, "testsuite")
        counts = {}
        for gate in gates:
            name = _clean(f"{gate['system']}: {gate['gate']}")
            tc = ET.SubElement(
                root[-1], "testcase", classname=f"{suite}.gates", name=name, time="0"
            )
            if gate["passed"]:
                counts["passed"] = counts.get("passed", 0) + 1
                continue
            message = f"value {gate.get('value')}"
            if gate.get("bound") is not None or "baseline_value" in gate:
                message += f", bound {gate.get('bound')} (baseline {gate.get('baseline_value')})"
            if gate.get("note"):
                message += f"; {gate['note']}"
            ET.SubElement(tc, "failure", message=_clean(message), type="gate")
            counts["failure"] = counts.get("failure", 0) + 1
        _suite_element(root, f"{suite}.gates", counts, 0.0)
        for k, v in counts.items():
            totals[k] = totals.get(k, 0) + v
    root.set("tests", str(sum(totals.values())))
    root.set("failures", str(totals.get("failure", 0)))
    root.set("errors", str(totals.get("error", 0)))
    root.set("skipped", str(totals.get("skipped", 0)))
    root.set("time", f"{total_time:.3f}")
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.indent(root, space=" ")
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
    return path
