"use strict";
// queryeval view: one page, routes in the hash, data from /api/ (same origin only).
const app = document.getElementById("app");
const crumbs = document.getElementById("crumbs");

function esc(v) {
  return String(v ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}
function num(v, d = 3) { return v === null || v === undefined ? "—" : Number(v).toFixed(d); }
function ci(c) { return c && c.low !== undefined && c.low !== null ? `[${num(c.low)}, ${num(c.high)}]` : ""; }
function status(s) { return s ? `<span class="${esc(s)}">${esc(s)}</span>` : '<span class="none">—</span>'; }
function qs(o) { return Object.entries(o).filter(([, v]) => v !== "" && v !== null && v !== undefined).map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join("&"); }
function parseHash() {
  const h = location.hash.slice(1) || "/";
  const [path, query] = h.split("?");
  return { parts: path.split("/").filter(Boolean), q: Object.fromEntries(new URLSearchParams(query || "")) };
}
async function api(path, options) {
  const r = await fetch(path, options);
  const data = await r.json().catch(() => ({ error: `HTTP ${r.status}` }));
  if (!r.ok) throw new Error(data.error || `HTTP ${r.status}`);
  return data;
}
function problems(list) {
  if (!list || !list.length) return "";
  return `<div class="problems"><strong>What could not be read</strong><ul>${list.map((p) => `<li>${esc(p)}</li>`).join("")}</ul></div>`;
}
function ready() { document.body.dataset.ready = "1"; }

// --- Runs --------------------------------------------------------------------------------
function trendSvg(points) {
  const w = 220, h = 60, n = points.length;
  const xs = points.map((_, i) => (n > 1 ? 8 + (i * (w - 16)) / (n - 1) : w / 2));
  const ys = points.map((p) => (p.pass_rate === null || p.pass_rate === undefined ? null : h - 6 - p.pass_rate * (h - 12)));
  let d = "";
  ys.forEach((y, i) => { if (y !== null) d += `${d ? "L" : "M"}${xs[i].toFixed(1)},${y.toFixed(1)}`; });
  const dots = ys.map((y, i) => (y === null ? "" : `<circle cx="${xs[i].toFixed(1)}" cy="${y.toFixed(1)}" r="2.5"><title>${esc(points[i].name)}: ${num(points[i].pass_rate)}</title></circle>`)).join("");
  return `<svg width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" role="img"><rect width="${w}" height="${h}" fill="#f4f6f8"/><path d="${d}" fill="none" stroke="#0072B2" stroke-width="1.5"/><g fill="#0072B2">${dots}</g></svg>`;
}
async function pageRuns() {
  crumbs.innerHTML = "";
  const data = await api("/api/runs");
  const byId = Object.fromEntries(data.runs.map((r) => [r.id, r]));
  let html = `<h1>Runs <span class="muted">(${data.runs.length})</span></h1>
  <div class="filters"><label>compare run A<select id="ca">${data.runs.map((r) => `<option value="${r.id}">${esc(r.name)}</option>`).join("")}</select></label>
  <label>with run B<select id="cb">${data.runs.map((r, i) => `<option value="${r.id}" ${i === data.runs.length - 1 ? "selected" : ""}>${esc(r.name)}</option>`).join("")}</select></label>
  <button id="cgo">Side by side</button></div>`;
  for (const g of data.groups) {
    const trend = data.trends.find((t) => t.suite === g.suite);
    html += `<h2>Suite ${esc(g.suite)}</h2>`;
    if (trend && g.runs.length > 1) {
      html += `<div>${Object.entries(trend.series).map(([s, pts]) => `<div class="trend"><div class="muted">${esc(s)}: pass rate over time</div>${trendSvg(pts)}</div>`).join("")}</div>`;
    }
    html += `<table class="runs"><tr><th>run</th><th>when</th><th>status</th><th>system</th><th class="num">pass rate</th><th>95% CI</th><th class="num">cases</th><th>gates</th><th>notes</th></tr>`;
    for (const id of g.runs) {
      const r = byId[id];
      const systems = r.systems.length ? r.systems : [{ name: "—" }];
      systems.forEach((s, i) => {
        const gates = r.gates.filter((x) => x.system === s.name);
        const gatesText = gates.length ? `${gates.filter((x) => x.passed).length}/${gates.length} passed` : "";
        const flag = s.flagged ? ` <span class="flag" title="too many cases without a verdict: the rate of what could be judged is ${num(s.pass_rate_scored)}">flagged</span>` : "";
        html += `<tr>${i === 0 ? `<td rowspan="${systems.length}"><a href="#/run/${r.id}">${esc(r.name)}</a></td><td rowspan="${systems.length}">${esc(r.when)}</td><td rowspan="${systems.length}">${esc(r.status)}</td>` : ""}
        <td>${esc(s.name)}</td><td class="num">${num(s.pass_rate)}${flag}${s.before_review ? ' <span class="flag" title="summary.json\'s figure, before the review\'s overrides: the run\'s page counts them">before review</span>' : ""}</td><td>${ci(s.ci)}</td><td class="num">${s.cases ?? "—"}</td><td>${gatesText}</td>
        ${i === 0 ? `<td rowspan="${systems.length}">${r.overrides ? `<span class="rev">${r.overrides} reviewed</span> ` : ""}${r.problems.length ? `<span class="flag" title="${esc(r.problems.join("\n"))}">${r.problems.length} problem(s)</span>` : ""}</td>` : ""}</tr>`;
      });
    }
    html += "</table>";
  }
  app.innerHTML = html;
  document.getElementById("cgo").onclick = () => {
    location.hash = `#/compare?${qs({ a: document.getElementById("ca").value, b: document.getElementById("cb").value })}`;
  };
}

// --- A run -------------------------------------------------------------------------------
async function pageRun(rid) {
  const r = await api(`/api/runs/${rid}`);
  crumbs.innerHTML = `<a href="#/">runs</a> › ${esc(r.name)}`;
  let html = `<h1>${esc(r.name)} <span class="muted">suite ${esc(r.suite)} · ${esc(r.when)} · ${esc(r.status)}</span></h1>`;
  html += problems(r.problems);
  html += `<p><a href="#/run/${rid}/cases">Cases</a> · <a href="#/compare?${qs({ a: rid, b: rid })}">Two systems side by side</a></p>`;
  if (r.counted) {
    html += `<div class="card" id="counted"><h2>${r.reviewed ? "With the human review's overrides" : "Counted from the records stored"}</h2><table><tr><th>system</th><th class="num">pass rate</th><th>95% CI</th><th class="num">passed</th><th class="num">failed</th><th class="num">no verdict</th>${r.reviewed ? '<th class="num">overridden</th>' : ""}</tr>`;
    for (const s of r.counted) {
      html += `<tr><td>${esc(s.name)}</td><td class="num figure" data-system="${esc(s.name)}">${num(s.pass_rate)}</td><td>${ci(s.ci)}</td><td class="num">${s.passed}</td><td class="num">${s.failed}</td><td class="num">${s.no_verdict}</td>${r.reviewed ? `<td class="num"><span class="rev">${s.overrides}</span></td>` : ""}</tr>`;
    }
    html += "</table></div>";
  }
  const sec = r.sections;
  if (sec) {
    if (sec.partial) html += `<div class="problems">${esc(sec.partial)}</div>`;
    const unreviewed = r.reviewed && !r.counted;  // the overrides could not be applied
    html += `<h2>Figures${unreviewed ? ' <span class="flag">NOT REVIEWED</span> (as stored, without the review\'s overrides: see the problem above)' : r.reviewed ? " (as stored, before the review)" : ""}</h2><table><tr><th>system</th><th class="num">pass rate</th><th>95% CI</th><th class="num">passed</th><th class="num">failed</th><th class="num">no verdict</th><th class="num">system errors</th>${sec.labels.map((l) => `<th class="num">${esc(l)}</th>`).join("")}</tr>`;
    for (const h of sec.headline) {
      html += `<tr><td>${esc(h.name)}</td><td class="num stored" data-system="${esc(h.name)}">${num(h.pass_rate)}${unreviewed ? ' <span class="flag">not reviewed</span>' : ""}${h.flagged ? ' <span class="flag">flagged</span>' : ""}</td><td>${ci(h.pass_ci)}</td><td class="num">${h.passed}</td><td class="num">${h.failed}</td><td class="num">${h.no_verdict}</td><td class="num">${h.system_errors}</td>
      ${h.scorers.map((s) => `<td class="num" title="${esc(s.flag_note || s.failures || "")}">${num(s.mean)} <span class="muted">${ci(s.ci)}</span>${s.flagged ? ' <span class="flag">flagged</span>' : ""}</td>`).join("")}</tr>`;
    }
    html += `</table><div>${sec.overview_chart || ""}</div>`;
    if (sec.gates.length) {
      html += `<h2>Gates</h2><table><tr><th>gate</th><th>system</th><th class="num">value</th><th>result</th><th>note</th></tr>${sec.gates.map((g) => `<tr><td>${esc(g.gate)}</td><td>${esc(g.system)}</td><td class="num">${num(g.value)}</td><td>${g.passed ? status("pass") : status("fail")}</td><td>${esc(g.note || "")}</td></tr>`).join("")}</table>`;
    }
  }
  if (r.failures && r.failures.length) {
    html += `<h2>Failures by reason</h2><table><tr><th>reason</th><th class="num">records</th></tr>${r.failures.map(([k, n]) => `<tr><td><a href="#/run/${rid}/cases?${qs({ reason: k })}">${esc(k)}</a></td><td class="num">${n}</td></tr>`).join("")}</table>`;
  }
  if (sec && sec.tags) {
    html += `<h2>By tag</h2><div>${sec.tags.chart || ""}</div><table><tr><th>tag</th><th>system</th><th class="num">cases</th><th class="num">pass rate</th></tr>${sec.tags.rows.map((t) => `<tr><td><a href="#/run/${rid}/cases?${qs({ tag: t.tag })}">${esc(t.tag)}</a></td><td>${esc(t.system)}</td><td class="num">${t.cases}</td><td class="num">${num(t.pass_rate)}</td></tr>`).join("")}</table>`;
  }
  if (sec) {
    for (const b of sec.breakdowns) html += `<h2>By ${esc(b.family)}</h2><div>${b.chart}</div>`;
    for (const c of sec.components) {
      html += `<h2>${esc(c.title)}</h2><table><tr>${c.header.map((x) => `<th>${esc(x)}</th>`).join("")}</tr>${c.rows.map((row) => `<tr>${row.map((v) => `<td>${typeof v === "number" ? num(v) : esc(v ?? "—")}</td>`).join("")}</tr>`).join("")}</table>`;
    }
    html += `<h2>Run</h2><table>${sec.run_info.map(([k, v]) => `<tr><th>${esc(k)}</th><td>${esc(v)}</td></tr>`).join("")}</table>`;
  }
  if (r.golds.length) {
    html += `<h2>Proposed gold corrections</h2><table><tr><th>case</th><th>gold</th><th>reason</th><th>who</th><th>when</th></tr>${r.golds.map((g) => `<tr><td>${esc(g.case_id)}</td><td><pre>${esc(g.gold)}</pre></td><td>${esc(g.note)}</td><td>${esc(g.reviewer)}</td><td>${esc(g.at)}</td></tr>`).join("")}</table>`;
  }
  app.innerHTML = html;
}

// --- Cases -------------------------------------------------------------------------------
async function pageCases(rid, q) {
  const [run, f] = await Promise.all([api(`/api/runs/${rid}`), api(`/api/runs/${rid}/facets`)]);
  crumbs.innerHTML = `<a href="#/">runs</a> › <a href="#/run/${rid}">${esc(run.name)}</a> › cases`;
  const opt = (list, cur) => `<option value="">any</option>${(list || []).map(([k, n]) => `<option value="${esc(k)}" ${String(k) === cur ? "selected" : ""}>${esc(k)} (${n})</option>`).join("")}`;
  app.innerHTML = `<h1>Cases of ${esc(run.name)}</h1>${problems(run.problems)}
  <form class="filters" id="f">
    <label>system<select name="system">${opt(f.systems, q.system)}</select></label>
    <label>status<select name="status">${opt(f.statuses, q.status)}</select></label>
    <label>failure reason<select name="reason">${opt(f.reasons, q.reason)}</select></label>
    <label>tag<select name="tag">${opt(f.tags, q.tag)}</select></label>
    <label>score of<select name="scorer">${(f.scorers || []).map((s) => `<option ${s === q.scorer ? "selected" : ""}>${esc(s)}</option>`).join("")}</select></label>
    <label>min<input name="min" size="4" value="${esc(q.min || "")}"></label>
    <label>max<input name="max" size="4" value="${esc(q.max || "")}"></label>
    <label>search question, gold, prediction<input name="q" size="24" value="${esc(q.q || "")}"></label>
    <label>sort<select name="sort">${["row", "case", "system", "status", "score", "latency", "cost", "tokens"].map((s) => `<option ${s === (q.sort || "row") ? "selected" : ""}>${s}</option>`).join("")}</select></label>
    <label>descending<input type="checkbox" name="desc" value="1" ${q.desc ? "checked" : ""}></label>
    <button type="submit">Filter</button>
  </form><div id="result"><p class="muted">loading…</p></div>`;
  document.getElementById("f").onsubmit = (e) => {
    e.preventDefault();
    const data = Object.fromEntries(new FormData(e.target));
    location.hash = `#/run/${rid}/cases?${qs(data)}`;
  };
  const limit = 50, offset = Number(q.offset || 0);
  const page = await api(`/api/runs/${rid}/cases?${qs({ ...q, limit, offset })}`);
  let html = `${problems([...(f.problems || []), ...(page.problems || [])])}<div class="pager"><span id="total">${page.total}</span> matching · ${page.total ? offset + 1 : 0}–${Math.min(offset + limit, page.total)}
    ${offset > 0 ? `<a href="#/run/${rid}/cases?${qs({ ...q, offset: Math.max(0, offset - limit) })}">‹ previous</a>` : ""}
    ${offset + limit < page.total ? `<a id="next" href="#/run/${rid}/cases?${qs({ ...q, offset: offset + limit })}">next ›</a>` : ""}</div>
  <table id="cases"><tr><th>case</th><th>system</th><th>status</th><th>reason</th><th class="num">${esc(page.scorer || "score")}</th><th>question</th><th>prediction</th><th class="num">latency</th><th class="num">cost</th></tr>`;
  for (const row of page.rows) {
    const link = `#/run/${rid}/case?${qs({ system: row.system, case_id: row.case_id })}`;
    html += `<tr><td><a class="case" href="${link}">${esc(row.case_id)}</a></td><td>${esc(row.system)}</td><td>${status(row.status)}${row.reviewed ? ' <span class="rev">reviewed</span>' : ""}</td><td>${esc(row.reason || "")}</td><td class="num">${num(row.score)}</td><td class="text" title="${esc(row.question)}">${esc(row.question)}</td><td class="text" title="${esc(row.prediction)}"><code>${esc(row.prediction)}</code></td><td class="num">${num(row.latency, 2)}</td><td class="num">${num(row.cost, 4)}</td></tr>`;
  }
  document.getElementById("result").innerHTML = html + "</table>";
}

// --- One case ----------------------------------------------------------------------------
function table(t) {
  return `<div class="muted">${esc(t.where)} (${t.n} row(s))</div><table><tr>${t.columns.map((c) => `<th>${esc(c)}</th>`).join("")}</tr>${t.rows.map((row) => `<tr>${(Array.isArray(row) ? row : [row]).map((v) => `<td>${esc(typeof v === "object" ? JSON.stringify(v) : v)}</td>`).join("")}</tr>`).join("")}</table>`;
}
async function pageCase(rid, q) {
  const [run, c] = await Promise.all([api(`/api/runs/${rid}`), api(`/api/runs/${rid}/case?${qs({ system: q.system, case_id: q.case_id })}`)]);
  crumbs.innerHTML = `<a href="#/">runs</a> › <a href="#/run/${rid}">${esc(run.name)}</a> › <a href="#/run/${rid}/cases">cases</a> › ${esc(c.case_id)}`;
  if (!c.scores) {  // the record could not be read: say so, nothing else to show
    app.innerHTML = `<h1>${esc(c.case_id)} · ${esc(c.system)}</h1>${problems(c.problems)}`;
    return;
  }
  const verdict = c.error ? "error" : c.passed === true ? "pass" : c.passed === false ? "fail" : "none";
  let html = `<h1>${esc(c.case_id)} · ${esc(c.system)} · <span id="verdict">${status(verdict)}</span></h1>`;
  html += problems([...(c.case_problem ? [c.case_problem] : []), ...(c.problems || [])]);
  html += `<div class="card"><strong>Question</strong><pre>${esc(c.question || "—")}</pre></div>`;
  html += `<div class="grid"><div class="card"><strong>Gold</strong><pre>${esc(c.gold || "—")}</pre></div><div class="card"><strong>Prediction</strong><pre>${esc(c.prediction || "—")}</pre></div></div>`;
  if (c.diff.length) {
    html += `<div class="card"><strong>Diff</strong> <span class="muted">(<del>gold only</del> <ins>prediction only</ins>)</span><pre id="diff">${c.diff.map(([op, t]) => (op === "=" ? esc(t) : op === "-" ? `<del>${esc(t)}</del>` : `<ins>${esc(t)}</ins>`)).join("")}</pre></div>`;
  }
  if (c.error) html += `<div class="card"><strong>System error</strong><pre>${esc(c.error)}</pre></div>`;
  html += `<div class="card"><strong>Latency</strong> ${num(c.latency_s, 3)} s · <strong>cost</strong> ${num(c.cost, 5)} · <strong>tokens</strong> in ${c.tokens.in ?? "—"}, out ${c.tokens.out ?? "—"} · <strong>attempts</strong> ${c.attempts.length}</div>`;
  html += `<h2>Scores</h2><table><tr><th>scorer</th><th class="num">value</th><th>status</th><th>verdict</th><th>explanation</th></tr>`;
  for (const [label, s] of Object.entries(c.scores)) {
    const rv = (s.details || {}).review;
    const v = s.passed === true ? "pass" : s.passed === false ? "fail" : null;
    html += `<tr><td>${esc(label)}</td><td class="num">${num(s.value)}</td><td>${esc(s.status)}</td><td>${status(v)}${rv ? ` <span class="rev" title="${esc(`was ${(rv.original || {}).passed}; by ${rv.reviewer} at ${rv.at || ""}: ${rv.note}`)}">overridden by ${esc(rv.reviewer)}</span>` : ""}</td><td>${esc(s.explanation || "")}</td></tr>`;
  }
  html += "</table>";
  for (const [label, text] of Object.entries(c.rationale)) html += `<div class="card"><strong>Judge rationale (${esc(label)})</strong><pre>${esc(text)}</pre></div>`;
  for (const ce of c.counterexamples) html += `<div class="card"><strong>Counterexample</strong> <span class="muted">${esc(ce.where)}</span><pre>${esc(JSON.stringify(ce.value, null, 1))}</pre></div>`;
  if (c.expected.length || c.tables.length) {
    html += `<h2>Result tables</h2><div class="grid"><div>${c.expected.map(table).join("") || '<p class="muted">no expected rows stored</p>'}</div><div>${c.tables.map(table).join("") || '<p class="muted">no predicted rows stored</p>'}</div></div>`;
  }
  html += `<h2>Attempts</h2>${c.attempts.map((a, i) => `<div class="card"><strong>attempt ${i + 1}</strong><pre>${esc(JSON.stringify(a, null, 1))}</pre></div>`).join("") || '<p class="muted">none</p>'}`;
  if (c.metadata && Object.keys(c.metadata).length) html += `<div class="card"><strong>The system's notes</strong><pre id="metadata">${esc(JSON.stringify(c.metadata, null, 1))}</pre></div>`;
  const labels = Object.keys(c.scores);
  html += `<h2>Review</h2><form id="review" class="filters">
    <label>scorer<select name="scorer">${labels.map((l) => `<option>${esc(l)}</option>`).join("")}</select></label>
    <label>verdict<select name="verdict"><option>pass</option><option>fail</option></select></label>
    <label>reason<input name="note" size="30" required></label>
    <label>who<input name="reviewer" size="12" required value="${esc(localStorage.getItem("qe-reviewer") || "")}"></label>
    <button type="submit">Override verdict</button></form>
    <form id="gold" class="filters"><label>corrected gold<textarea name="gold" rows="2" cols="50" required>${esc(c.gold)}</textarea></label>
    <label>reason<input name="note" size="30" required></label>
    <label>who<input name="reviewer" size="12" required value="${esc(localStorage.getItem("qe-reviewer") || "")}"></label>
    <button type="submit">Propose gold correction</button></form><p id="review-msg" class="muted"></p>`;
  if (c.golds.length) html += `<p class="rev">gold correction proposed by ${esc(c.golds[0].reviewer)}: ${esc(c.golds[0].note)}</p>`;
  app.innerHTML = html;
  const post = async (body) => {
    localStorage.setItem("qe-reviewer", body.reviewer || "");
    try {
      await api(`/api/runs/${rid}/review`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
      await pageCase(rid, q);
      document.getElementById("review-msg").textContent = "saved in review.json";
    } catch (err) {
      document.getElementById("review-msg").innerHTML = `<span class="err">${esc(err.message)}</span>`;
    }
  };
  document.getElementById("review").onsubmit = (e) => { e.preventDefault(); post({ kind: "override", system: c.system, case_id: c.case_id, ...Object.fromEntries(new FormData(e.target)) }); };
  document.getElementById("gold").onsubmit = (e) => { e.preventDefault(); post({ kind: "gold", case_id: c.case_id, ...Object.fromEntries(new FormData(e.target)) }); };
}

// --- Side by side ------------------------------------------------------------------------
async function pageCompare(q) {
  crumbs.innerHTML = `<a href="#/">runs</a> › side by side`;
  const limit = 50, offset = Number(q.offset || 0);
  const d = await api(`/api/compare?${qs({ ...q, limit, offset })}`);
  const cmp = d.comparison;
  if (!cmp) {  // the runs' records could not be read: say so
    app.innerHTML = `<h1>Side by side</h1>${problems(d.problems)}`;
    return;
  }
  let html = `<h1>Side by side: ${esc(cmp.run_a)} (A) vs ${esc(cmp.run_b)} (B)</h1>${problems(d.problems || [])}`;
  if (d.suites[0] !== d.suites[1]) html += problems([`the runs are of different suites (${d.suites[0]}, ${d.suites[1]}): cases are paired by id only`]);
  const first = cmp.systems[0] || {};
  const pick = (name, list, cur) => `<select name="${name}">${list.map((x) => `<option ${x === cur ? "selected" : ""}>${esc(x)}</option>`).join("")}</select>`;
  html += `<form class="filters" id="pair"><label>system of A${pick("system_a", d.systems_a, first.system_a)}</label>
    <label>system of B${pick("system_b", d.systems_b, first.system_b)}</label><button type="submit">Compare</button></form>`;
  html += `<p>verdict: <strong id="cmp-verdict">${esc(cmp.verdict)}</strong> (level ${num(cmp.level, 2)})</p>`;
  for (const p of cmp.systems) {
    html += `<div class="card"><strong>${esc(p.system_a)} (A) vs ${esc(p.system_b)} (B)</strong>: ${p.n_paired} paired cases, <span class="pass">${p.n_fixed} fixed</span>, <span class="fail">${p.n_broken} broken</span>${p.mcnemar ? `, McNemar p = ${num(p.mcnemar.p_value)}` : ""}; only in A ${p.n_only_a}, only in B ${p.n_only_b}
    <table><tr><th>metric</th><th class="num">n</th><th class="num">A</th><th class="num">B</th><th class="num">B − A</th><th>CI</th><th class="num">p</th><th>test</th><th>verdict</th></tr>
    ${p.metrics.slice(0, 30).map((m) => `<tr><td>${esc(m.metric)}</td><td class="num">${m.n}</td><td class="num">${num(m.mean_a)}</td><td class="num">${num(m.mean_b)}</td><td class="num">${num(m.diff)}</td><td>${ci(m.ci)}</td><td class="num">${num(m.p_value)}</td><td>${esc(m.test)}</td><td>${esc(m.verdict)}</td></tr>`).join("")}</table></div>`;
  }
  const rows = d.rows;
  if (rows) {
    html += `<h2>Per case: ${esc(first.system_a)} (A) vs ${esc(first.system_b)} (B), flipped first</h2><div class="pager">${rows.total} cases, <span id="flipped">${rows.flipped}</span> flipped ·
      ${offset > 0 ? `<a href="#/compare?${qs({ ...q, offset: Math.max(0, offset - limit) })}">‹ previous</a>` : ""}
      ${offset + limit < rows.total ? `<a href="#/compare?${qs({ ...q, offset: offset + limit })}">next ›</a>` : ""}</div>
      <table id="pairs"><tr><th>case</th><th>A</th><th>A prediction</th><th>B</th><th>B prediction</th></tr>
      ${rows.rows.map((r) => `<tr><td>${r.flipped ? '<span class="flag">flipped</span> ' : ""}${esc(r.case_id)}</td><td>${status(r.a.status)} ${esc(r.a.reason || "")}</td><td class="text"><code>${esc(r.a.prediction || "")}</code></td><td>${status(r.b.status)} ${esc(r.b.reason || "")}</td><td class="text"><code>${esc(r.b.prediction || "")}</code></td></tr>`).join("")}</table>`;
  }
  app.innerHTML = html;
  document.getElementById("pair").onsubmit = (e) => {
    e.preventDefault();
    location.hash = `#/compare?${qs({ a: q.a, b: q.b, ...Object.fromEntries(new FormData(e.target)) })}`;
  };
}

async function route() {
  delete document.body.dataset.ready;
  const { parts, q } = parseHash();
  try {
    if (parts[0] === "run" && parts[2] === "cases") await pageCases(parts[1], q);
    else if (parts[0] === "run" && parts[2] === "case") await pageCase(parts[1], q);
    else if (parts[0] === "run") await pageRun(parts[1]);
    else if (parts[0] === "compare") await pageCompare(q);
    else await pageRuns();
  } catch (err) {
    app.innerHTML = `<h1>Cannot show this page</h1><p class="err" id="error">${esc(err.message)}</p><p><a href="#/">all runs</a></p>`;
  }
  ready();
}
window.addEventListener("hashchange", route);
route();
