"""Markdown for people reading a pull request: the run summary, the gates and the comparison
with a baseline; and the same comparison as plain text for a terminal."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from queryeval.cases import describe_failures
from queryeval.reports._flag import flag_note

_MARK = {"better": "✅", "worse": "❌", "no significant difference": "➖"}


def _n(v: Any, digits: int = 3) -> str:
    return "—" if v is None else f"{v:.{digits}f}"


def _signed(v: Any) -> str:
    return "—" if v is None else f"{v:+.3f}"


def _ci(ci: Any, signed: bool = False) -> str:
    if not ci or ci.get("low") is None:
        return ""
    f = _signed if signed else _n
    return f"[{f(ci['low'])}, {f(ci['high'])}]"


def _p(v: Any) -> str:
    if v is None:
        return ""
    return "<0.001" if v < 0.001 else f"{v:.3f}"


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]], align: Sequence[str]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def _ids(ids: Sequence[str], limit: int) -> str:
    if not ids:
        return "—"
    shown = ", ".join(f"`{i}`" for i in ids[:limit])
    return shown + (f" … and {len(ids) - limit} more" if len(ids) > limit else "")


def comparison_markdown(
    comparison: Mapping[str, Any], *, heading: str = "###", ids: int = 20
) -> str:
    """A pull-request comment: the verdict, a table of metric differences per system pair,
    and the flipped cases."""
    verdict = comparison["verdict"]
    level = round(100 * comparison.get("level", 1 - comparison.get("alpha", 0.05)), 1)
    lines = [
        f"{heading} queryeval comparison: {_MARK.get(verdict, '')} **{verdict}**",
        "",
        f"Run A (reference): `{comparison['run_a']}` · run B: `{comparison['run_b']}` · "
        f"{level:g}% confidence · differences are B − A",
    ]
    for pair in comparison["systems"]:
        mc = pair.get("mcnemar")
        lines += [
            "",
            f"{heading}# `{pair['system_a']}` → `{pair['system_b']}`: "
            f"{_MARK.get(pair['verdict'], '')} {pair['verdict']} "
            f"(on `{pair['primary']}`, {pair['n_paired']} paired cases)",
            "",
        ]
        rows = [
            [
                m["metric"],
                m["n"],
                _n(m["mean_a"]),
                _n(m["mean_b"]),
                _signed(m["diff"]),
                _ci(m["ci"], signed=True),
                _p(m["p_value"]),
                f"{_MARK.get(m['verdict'], '')} {m['verdict']}",
            ]
            for m in pair["metrics"]
        ]
        lines += _table(
            ["metric", "n", "A", "B", "B − A", f"{level:g}% CI", "p", "verdict"],
            rows,
            ["---", "--:", "--:", "--:", "--:", "---", "--:", "---"],
        )
        if mc:
            lines += [
                "",
                f"McNemar ({mc['method']}): {mc['b']} passed only in A, {mc['c']} only in B, "
                f"p = {_p(mc['p_value'])}.",
            ]
        lines += [
            "",
            f"- Fixed ({len(pair['fixed'])}): {_ids(pair['fixed'], ids)}",
            f"- Broken ({len(pair['broken'])}): {_ids(pair['broken'], ids)}",
        ]
        if pair.get("only_a") or pair.get("only_b"):
            lines.append(
                f"- Not paired: {len(pair.get('only_a', []))} case(s) only in A, "
                f"{len(pair.get('only_b', []))} only in B"
            )
    return "\n".join(lines) + "\n"


def comparison_text(comparison: Mapping[str, Any], *, ids: int = 20) -> str:
    """The comparison as aligned plain text (for a terminal)."""
    level = round(100 * comparison.get("level", 1 - comparison.get("alpha", 0.05)), 1)
    out = [
        f"verdict: {comparison['verdict']}   (B − A at {level:g}% confidence)",
        f"  A: {comparison['run_a']}",
        f"  B: {comparison['run_b']}",
    ]
    for pair in comparison["systems"]:
        out += [
            "",
            f"{pair['system_a']} -> {pair['system_b']}: {pair['verdict']} "
            f"(on {pair['primary']}; {pair['n_paired']} paired cases)",
        ]
        header = ["metric", "n", "A", "B", "B-A", "CI", "p", "verdict"]
        rows = [header] + [
            [
                m["metric"],
                str(m["n"]),
                _n(m["mean_a"]),
                _n(m["mean_b"]),
                _signed(m["diff"]),
                _ci(m["ci"], signed=True),
                _p(m["p_value"]),
                m["verdict"],
            ]
            for m in pair["metrics"]
        ]
        widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
        for r in rows:
            out.append(
                "  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
            )
        out.append(f"  fixed ({len(pair['fixed'])}): {', '.join(pair['fixed'][:ids]) or '-'}")
        out.append(f"  broken ({len(pair['broken'])}): {', '.join(pair['broken'][:ids]) or '-'}")
    return "\n".join(out) + "\n"


def summary_markdown(
    summary: Mapping[str, Any], comparison: Mapping[str, Any] | None = None
) -> str:
    """The run summary: pass rate and scorer means with 95% CIs per system, gates, comparison."""
    lines = [f"## queryeval: {summary.get('suite')}", "", f"{summary.get('n_cases')} case(s).", ""]
    labels = list(
        dict.fromkeys(
            lb for e in summary.get("systems", {}).values() for lb in e.get("scorers", {})
        )
    )
    rows = []
    failure_notes: list[str] = []
    for name, e in summary.get("systems", {}).items():
        row = [name, f"{_n(e.get('pass_rate'))} {_ci(e.get('pass_rate_ci95'))}".strip()]
        notes = []
        for label in labels:
            s = e.get("scorers", {}).get(label, {})
            flag = " ⚠" if s.get("flagged") else ""
            row.append(f"{_n(s.get('mean'))}{flag} {_ci(s.get('ci95'))}".strip())
            if s.get("failures"):
                notes.append(f"- {name} / {label}: failed {describe_failures(s['failures'])}")
            if s.get("flagged"):
                notes.append(f"- ⚠ {name} / {label}: {flag_note(s)}")
        row.append(str(e.get("system_errors", 0)))
        rows.append(row)
        failure_notes.extend(notes)
    lines += _table(
        ["system", "pass rate (95% CI)", *labels, "system errors"],
        rows,
        ["---", "--:", *(["--:"] * len(labels)), "--:"],
    )
    if failure_notes:
        lines += ["", "Failures count 0 in every mean; unscored cases are left out:", ""]
        lines += failure_notes
    gates = summary.get("gates") or []
    if gates:
        failed = [g for g in gates if not g["passed"]]
        lines += ["", f"### Gates: {len(gates) - len(failed)} of {len(gates)} passed", ""]
        lines += _table(
            ["gate", "system", "value", "result"],
            [
                [
                    f"`{g['gate']}`",
                    g["system"],
                    _n(g.get("value")),
                    ("✅ pass" if g["passed"] else "❌ FAIL")
                    + (f" (bound {_n(g.get('bound'))})" if "bound" in g else ""),
                ]
                for g in gates
            ],
            ["---", "---", "--:", "---"],
        )
    review = summary.get("review")
    if review:
        lines += ["", *review_markdown(review)]
    if comparison:
        lines += ["", comparison_markdown(comparison).rstrip()]
    return "\n".join(lines) + "\n"


def review_markdown(review: Mapping[str, Any]) -> list[str]:
    """The human review: the file, its counts, and judge-human agreement per scorer."""
    lines = [
        "### Human review",
        "",
        f"`{review.get('file')}`: {review.get('overrides', 0)} verdict override(s), "
        f"{review.get('gold_corrections', 0)} gold correction(s); the figures above include "
        "them.",
    ]
    agreement = review.get("agreement") or {}
    if agreement:
        lines.append("")
        lines += _table(
            ["scorer", "overridden scores", "compared", "changed", "accuracy", "kappa"],
            [
                [
                    label,
                    a.get("overrides"),
                    a.get("compared"),
                    a.get("changed", "—"),
                    _n(a.get("accuracy")),
                    _n(a.get("kappa")),
                ]
                for label, a in agreement.items()
            ],
            ["---", "--:", "--:", "--:", "--:", "--:"],
        )
    return lines


def write_markdown(
    path: Path, summary: Mapping[str, Any], comparison: Mapping[str, Any] | None = None
) -> Path:
    """Write report.md."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(summary_markdown(summary, comparison), encoding="utf-8")
    return path
