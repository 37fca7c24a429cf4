/* queryeval HTML report: the case table (filter, sort, page, expand).
 * The case data is embedded as JSON (gzip+base64 for big runs) in #qe-data. Only one page
 * of rows is ever in the DOM, so 100,000 cases stay responsive. No network, no libraries. */
(function () {
  "use strict";

  // row layout (see queryeval/reports/_html.py)
  const CASE = 0, SYS = 1, PASS = 2, LAT = 3, COST = 4, OUT = 5, MSG = 6, PRED = 7, ERR = 8,
    SCORES = 9, VERDICTS = 10, NOTES = 11, REASON = 12;
  const CUT = 140;
  const $ = (id) => document.getElementById(id);
  const ESC = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
  const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ESC[c]);

  async function readData() {
    const el = $("qe-data");
    if (el.dataset.encoding === "gzip+base64") {
      if (typeof DecompressionStream === "undefined") {
        throw new Error("this browser cannot decompress the embedded case data " +
          "(no DecompressionStream); open the report in a current browser");
      }
      const bin = atob(el.textContent.trim());
      const bytes = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
      return JSON.parse(await new Response(stream).text());
    }
    return JSON.parse(el.textContent);
  }

  function fmtNum(v, digits) {
    return v === null || v === undefined ? "" : Number(v).toFixed(digits);
  }

  function columns(D) {
    const c = D.cases;
    const cols = [
      { title: "case", cls: "id", text: (r) => c[r[CASE]][0], key: (r) => c[r[CASE]][0] },
    ];
    if (D.systems.length > 1) {
      cols.push({ title: "system", cls: "t", text: (r) => D.systems[r[SYS]], key: (r) => D.systems[r[SYS]] });
    }
    cols.push({
      title: "verdict", cls: "v", html: verdictHtml,
      key: (r) => (r[ERR] ? -1 : r[PASS] === null ? 0.5 : r[PASS]),
    });
    cols.push({ title: "question", cls: "t", text: (r) => c[r[CASE]][2], key: (r) => c[r[CASE]][2] });
    cols.push({ title: "gold", cls: "t", text: (r) => c[r[CASE]][3], key: (r) => c[r[CASE]][3] });
    cols.push({
      title: "prediction", cls: "t",
      text: (r) => (r[ERR] ? "system error: " + r[ERR] : r[PRED]), key: (r) => r[PRED],
    });
    if (D.has.outcome) {
      cols.push({
        title: "execution", cls: "t",
        text: (r) => r[OUT] + (r[MSG] ? ": " + r[MSG] : ""), key: (r) => r[OUT],
      });
    }
    D.labels.forEach((label, j) => {
      cols.push({
        title: label, cls: "s", score: j,
        key: (r) => (typeof r[SCORES][j] === "number" ? r[SCORES][j] : null),
      });
    });
    if (D.has.reasoning) {
      cols.push({ title: "judge reasoning", cls: "t", text: (r) => r[REASON], key: (r) => r[REASON] });
    }
    if (D.has.latency) {
      cols.push({ title: "latency (s)", cls: "s", text: (r) => fmtNum(r[LAT], 2), key: (r) => r[LAT] });
    }
    if (D.has.cost) {
      cols.push({ title: "cost", cls: "s", text: (r) => fmtNum(r[COST], 4), key: (r) => r[COST] });
    }
    return cols;
  }

  function verdictHtml(r) {
    if (r[ERR]) return '<span class="badge err">error</span>';
    if (r[PASS] === 1) return '<span class="badge pass">pass</span>';
    if (r[PASS] === 0) return '<span class="badge fail">fail</span>';
    return '<span class="badge none">—</span>';
  }

  function scoreHtml(r, j) {
    const v = r[SCORES][j];
    const mark = r[VERDICTS].charAt(j);
    if (mark === "p" || mark === "f") {  // a human review's verdict: marked as an override
      return '<td class="s ' + mark.toUpperCase() + ' ov" title="overridden by human review">✎ ' +
        (typeof v === "number" ? v.toFixed(3) : esc(v)) + "</td>";
    }
    if (typeof v === "number") return '<td class="s ' + (mark === "-" ? "" : mark) + '">' + v.toFixed(3) + "</td>";
    return '<td class="s st">' + (v === null ? "" : esc(v)) + "</td>";
  }

  function cell(col, r) {
    if (col.score !== undefined) return scoreHtml(r, col.score);
    if (col.html) return '<td class="' + col.cls + '">' + col.html(r) + "</td>";
    const full = col.text(r) || "";
    const short = full.length > CUT ? full.slice(0, CUT) + "…" : full;
    const tip = full.length > CUT ? ' title="' + esc(full.slice(0, 600)) + '"' : "";
    return '<td class="' + col.cls + '"' + tip + ">" + esc(short) + "</td>";
  }

  function parseQuery(text, D) {
    const q = { words: [], ids: [], tags: [], systems: [], tests: [] };
    const metric = /^([A-Za-z_][\w.\-]*)(<=|>=|<|>|=)(-?[\d.]+)$/;
    // tokens: words, "quoted phrases", key:value and key:"quoted value"
    for (const raw of text.match(/[\w.\-]+:"[^"]*"|"[^"]*"|\S+/g) || []) {
      const tok = raw.replace(/"/g, "");
      if (!tok) continue;
      const low = tok.toLowerCase();
      let m;
      if (low.startsWith("id:") && tok.length > 3) q.ids.push(low.slice(3));
      else if (low.startsWith("tag:") && tok.length > 4) q.tags.push(low.slice(4));
      else if (low.startsWith("system:") && tok.length > 7) q.systems.push(low.slice(7));
      else if ((m = metric.exec(tok))) {
        const name = m[1];
        const j = D.labels.indexOf(name);
        let get = null;
        if (j >= 0) get = (r) => (typeof r[SCORES][j] === "number" ? r[SCORES][j] : null);
        else if (name === "latency") get = (r) => r[LAT];
        else if (name === "cost") get = (r) => r[COST];
        if (get) q.tests.push({ get: get, op: m[2], bound: parseFloat(m[3]) });
        else q.words.push(low);
      } else q.words.push(low);
    }
    return q;
  }

  function passes(op, v, bound) {
    if (v === null || v === undefined) return false;
    switch (op) {
      case "<": return v < bound;
      case "<=": return v <= bound;
      case ">": return v > bound;
      case ">=": return v >= bound;
      default: return Math.abs(v - bound) < 1e-9;
    }
  }

  function main(D) {
    const rows = D.rows;
    const cols = columns(D);
    const tagNames = D.tags.map((t) => t.toLowerCase());
    const hay = new Array(rows.length);
    let shown = [];
    let page = 0;
    let sortCol = -1;
    let sortDir = 1;
    let open = -1;

    function haystack(i) {
      if (hay[i] === undefined) {
        const r = rows[i];
        const c = D.cases[r[CASE]];
        hay[i] = [c[0], c[1], c[2], c[3], r[PRED], r[ERR] || "", r[OUT], r[MSG], r[REASON]]
          .join("\n").toLowerCase();
      }
      return hay[i];
    }

    // controls
    const fill = (id, values) => {
      const sel = $(id);
      for (const v of values) {
        const o = document.createElement("option");
        o.value = v[0];
        o.textContent = v[1];
        sel.appendChild(o);
      }
    };
    if (D.systems.length > 1) fill("f-system", D.systems.map((s, i) => [String(i), s]));
    else $("f-system").hidden = true;
    if (D.tags.length) {
      fill("f-tag", D.tags.map((t, i) => [String(i), t]).sort((a, b) => (a[1] < b[1] ? -1 : 1)).slice(0, 5000));
    } else $("f-tag").hidden = true;
    const kinds = Array.from(new Set(rows.map((r) => r[OUT]).filter((k) => k))).sort();
    if (kinds.length) fill("f-outcome", kinds.map((k) => [k, k]));
    else $("f-outcome").hidden = true;

    const thead = document.querySelector("#case-table thead");
    thead.innerHTML = "<tr>" + cols.map((c, k) => '<th data-k="' + k + '" scope="col">' + esc(c.title) + "</th>").join("") + "</tr>";

    function sortShown() {
      if (sortCol < 0) return;
      const key = cols[sortCol].key;
      const keys = new Map();
      for (const i of shown) keys.set(i, key(rows[i]));
      shown.sort((a, b) => {
        const x = keys.get(a), y = keys.get(b);
        const xn = x === null || x === undefined || x === "", yn = y === null || y === undefined || y === "";
        if (xn || yn) return xn === yn ? a - b : xn ? 1 : -1; // blanks last either way
        if (x < y) return -sortDir;
        if (x > y) return sortDir;
        return a - b;
      });
    }

    function filter() {
      const q = parseQuery($("q").value, D);
      const sys = $("f-system").value;
      const verdict = $("f-verdict").value;
      const tag = $("f-tag").value;
      const outcome = $("f-outcome").value;
      const sysIdx = sys === "" ? -1 : Number(sys);
      const tagIdx = tag === "" ? -1 : Number(tag);
      const out = [];
      for (let i = 0; i < rows.length; i++) {
        const r = rows[i];
        if (sysIdx >= 0 && r[SYS] !== sysIdx) continue;
        if (verdict === "1" && r[PASS] !== 1) continue;
        if (verdict === "0" && r[PASS] !== 0) continue;
        if (verdict === "n" && r[PASS] !== null) continue;
        if (verdict === "e" && !r[ERR]) continue;
        if (outcome && r[OUT] !== outcome) continue;
        const c = D.cases[r[CASE]];
        if (tagIdx >= 0 && c[4].indexOf(tagIdx) < 0) continue;
        if (q.ids.length && q.ids.indexOf(c[0].toLowerCase()) < 0) continue;
        if (q.tags.length && !q.tags.every((t) => c[4].some((k) => tagNames[k] === t))) continue;
        if (q.systems.length && !q.systems.some((s) => D.systems[r[SYS]].toLowerCase().indexOf(s) >= 0)) continue;
        if (q.tests.length && !q.tests.every((t) => passes(t.op, t.get(r), t.bound))) continue;
        if (q.words.length) {
          const h = haystack(i);
          if (!q.words.every((w) => h.indexOf(w) >= 0)) continue;
        }
        out.push(i);
      }
      shown = out;
      sortShown();
      page = 0;
      render();
    }

    function detailHtml(i) {
      const r = rows[i];
      const c = D.cases[r[CASE]];
      const items = [["case", c[0]]];
      if (c[1]) items.push(["name", c[1]]);
      if (c[4].length) items.push(["tags", c[4].map((k) => D.tags[k]).join(", ")]);
      items.push(["system", D.systems[r[SYS]]]);
      items.push(["verdict", r[ERR] ? "system error" : r[PASS] === 1 ? "pass" : r[PASS] === 0 ? "fail" : "no verdict"]);
      items.push(["question", c[2]], ["gold", c[3]], ["prediction", r[PRED]]);
      if (r[OUT]) items.push(["execution", r[OUT] + (r[MSG] ? ": " + r[MSG] : "")]);
      if (r[ERR]) items.push(["system error", r[ERR]]);
      D.labels.forEach((label, j) => {
        const v = r[SCORES][j];
        const mark = {
          P: " (pass)", F: " (fail)",
          p: " (pass, overridden by human review)", f: " (fail, overridden by human review)",
        }[r[VERDICTS].charAt(j)] || "";
        const note = r[NOTES] ? r[NOTES][j] : "";
        const val = typeof v === "number" ? v.toFixed(4) : v === null ? "not scored" : v;
        items.push([label, val + mark + (note ? "\n" + note : "")]);
      });
      if (r[REASON]) items.push(["judge reasoning", r[REASON]]);
      if (r[LAT] !== null) items.push(["latency", fmtNum(r[LAT], 3) + " s"]);
      if (r[COST] !== null) items.push(["cost", fmtNum(r[COST], 6)]);
      const body = items.map((it) => "<div>" + esc(it[0]) + "</div><div><pre>" + esc(it[1] || "") + "</pre></div>").join("");
      return '<tr class="detail"><td colspan="' + cols.length + '"><div class="dgrid">' + body + "</div></td></tr>";
    }

    function render() {
      const size = Number($("pagesize").value);
      const pages = Math.max(1, Math.ceil(shown.length / size));
      page = Math.min(page, pages - 1);
      const start = page * size;
      const slice = shown.slice(start, start + size);
      const parts = [];
      for (const i of slice) {
        const r = rows[i];
        parts.push('<tr class="r' + (open === i ? " open" : "") + '" data-i="' + i + '">' + cols.map((c) => cell(c, r)).join("") + "</tr>");
        if (open === i) parts.push(detailHtml(i));
      }
      document.querySelector("#case-table tbody").innerHTML = parts.join("");
      $("count").textContent = shown.length === rows.length
        ? rows.length + " rows"
        : shown.length + " of " + rows.length + " rows";
      $("pageinfo").textContent = shown.length
        ? "rows " + (start + 1) + "–" + (start + slice.length) + " · page " + (page + 1) + " of " + pages
        : "no matching rows";
      $("first").disabled = $("prev").disabled = page === 0;
      $("next").disabled = $("last").disabled = page >= pages - 1;
      thead.querySelectorAll("th").forEach((th, k) => {
        if (k === sortCol) th.setAttribute("aria-sort", sortDir > 0 ? "ascending" : "descending");
        else th.removeAttribute("aria-sort");
      });
    }

    let timer = 0;
    $("q").addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(filter, 150);
    });
    for (const id of ["f-system", "f-verdict", "f-tag", "f-outcome"]) $(id).addEventListener("change", filter);
    $("pagesize").addEventListener("change", () => { page = 0; render(); });
    $("first").addEventListener("click", () => { page = 0; render(); });
    $("prev").addEventListener("click", () => { page = Math.max(0, page - 1); render(); });
    $("next").addEventListener("click", () => { page += 1; render(); });
    $("last").addEventListener("click", () => { page = 1e9; render(); });
    $("reset").addEventListener("click", () => {
      $("q").value = "";
      for (const id of ["f-system", "f-verdict", "f-tag", "f-outcome"]) $(id).value = "";
      sortCol = -1;
      open = -1;
      filter();
    });
    thead.addEventListener("click", (ev) => {
      const th = ev.target.closest("th");
      if (!th) return;
      const k = Number(th.dataset.k);
      sortDir = k === sortCol ? -sortDir : 1;
      sortCol = k;
      sortShown();
      page = 0;
      render();
    });
    document.querySelector("#case-table tbody").addEventListener("click", (ev) => {
      const tr = ev.target.closest("tr.r");
      if (!tr) return;
      const i = Number(tr.dataset.i);
      open = open === i ? -1 : i;
      render();
    });

    function fromHash() {
      const params = new URLSearchParams(location.hash.slice(1));
      const id = params.get("case");
      const tag = params.get("tag");
      if (id === null && tag === null) return false;
      $("q").value = id === null ? "" : /\s/.test(id) ? 'id:"' + id + '"' : "id:" + id;
      const sys = params.get("system");
      $("f-system").value = sys !== null && D.systems.indexOf(sys) >= 0 ? String(D.systems.indexOf(sys)) : "";
      $("f-tag").value = tag !== null && D.tags.indexOf(tag) >= 0 ? String(D.tags.indexOf(tag)) : "";
      filter();
      if (id !== null && shown.length) {
        open = shown[0];
        render();
      }
      $("cases").scrollIntoView();
      return true;
    }
    window.addEventListener("hashchange", fromHash);
    if (!fromHash()) filter();
    document.body.dataset.ready = "1";
  }

  readData().then(main).catch((err) => {
    const box = document.createElement("p");
    box.className = "error-box";
    box.textContent = "The case table could not be shown: " + err.message;
    $("cases").appendChild(box);
    console.error(err);
  });
})();
