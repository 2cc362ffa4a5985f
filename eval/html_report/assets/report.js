// The HTML report's item browser: filters (one select per facet, a text search), a tally of the rows shown
// and, per row, its media, prompt, options, raw answers and decisions, beside its clean twin or the other
// runs. Everything comes from the JSON in #report-data; the DOM is built with textContent only (no markup
// from the data is ever parsed). The filters live in the URL hash (#items?task=MCIT&result=wrong), so a
// number of the summary links to the items behind it.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("report-data").textContent);
  const rows = data.rows;
  const byId = new Map(rows.map((r) => [r.id, r]));
  const facets = data.facets.filter((f) => rows.some((r) => r.facets[f] !== undefined));
  const filters = {};
  let text = "";
  const PAGE = 200;
  let limit = PAGE;

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    for (const c of children) {
      if (c === null || c === undefined) continue;
      node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }

  // ---------------------------------------------------------------------------------------------- filters
  const bar = document.getElementById("filters");
  const selects = {};
  for (const f of facets) {
    const counts = new Map();
    for (const r of rows) {
      const v = r.facets[f];
      if (v !== undefined) counts.set(v, (counts.get(v) || 0) + 1);
    }
    const sel = el("select", { id: "facet-" + f, "data-facet": f });
    sel.append(el("option", { value: "" }, "any"));
    for (const [v, n] of [...counts].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
      sel.append(el("option", { value: v }, v + " (" + n + ")"));
    }
    sel.addEventListener("change", () => {
      if (sel.value) filters[f] = sel.value;
      else delete filters[f];
      changed();
    });
    selects[f] = sel;
    bar.append(el("label", {}, f + " ", sel));
  }
  const search = el("input", { id: "search", type: "search", placeholder: "id or question text" });
  search.addEventListener("input", () => {
    text = search.value.trim().toLowerCase();
    changed();
  });
  const clear = el("button", { id: "clear", type: "button" }, "clear filters");
  clear.addEventListener("click", () => {
    for (const f of Object.keys(filters)) delete filters[f];
    text = "";
    search.value = "";
    changed();
  });
  bar.append(el("label", {}, "search ", search), clear);

  function changed() {
    limit = PAGE;
    const params = new URLSearchParams(filters);
    if (text) params.set("q", text);
    history.replaceState(null, "", "#items?" + params.toString());
    render();
  }

  function fromHash() {
    if (!(location.hash || "").startsWith("#items")) return false;
    const params = new URLSearchParams(location.hash.slice(location.hash.indexOf("?") + 1));
    for (const f of Object.keys(filters)) delete filters[f];
    text = "";
    for (const [k, v] of params) {
      if (k === "q") text = v.toLowerCase();
      else if (facets.includes(k)) filters[k] = v;
      else if (data.facets.includes(k)) filters[k] = v; // a facet no row has: nothing matches
    }
    for (const [f, sel] of Object.entries(selects)) sel.value = filters[f] || "";
    search.value = text;
    limit = PAGE;
    render();
    return true;
  }

  function matches(r) {
    for (const [f, v] of Object.entries(filters)) if (r.facets[f] !== v) return false;
    if (text && !(r.id.toLowerCase().includes(text) || (r.question || "").toLowerCase().includes(text))) {
      return false;
    }
    return true;
  }

  // ---------------------------------------------------------------------------------------------- table
  const columns = ["task", "setting", "source", "category", "result", "response", "pair"].filter((f) =>
    facets.includes(f)
  );
  const runColumns = data.runs || [];
  const head = document.querySelector("#rows thead tr");
  head.append(el("th", {}, "item"));
  for (const c of columns) head.append(el("th", {}, c));
  for (const run of runColumns) head.append(el("th", {}, run));
  if (!runColumns.length) head.append(el("th", {}, "right answer"), el("th", {}, "chosen (first pass)"));
  head.append(el("th", {}, "passes"));

  function pct(n, d) {
    return d ? ((100 * n) / d).toFixed(2) + " %" : "–";
  }

  function tally(hits) {
    const done = hits.filter((r) => r.facets.status === "evaluated");
    const parts = [hits.length + " of " + rows.length + " items shown"];
    for (const run of runColumns) {
      const results = hits.map((r) => r.facets["result (" + run + ")"]);
      const evaluated = results.filter((v) => v === "correct" || v === "wrong").length;
      const right = results.filter((v) => v === "correct").length;
      parts.push(run + ": right " + right + " of " + evaluated + " (" + pct(right, evaluated) + ")");
    }
    if (!runColumns.length) {
      parts.push(done.length + " evaluated");
      parts.push("all passes right " + done.filter((r) => r.circular).length + " (" +
        pct(done.filter((r) => r.circular).length, done.length) + ")");
      parts.push("first pass right " + done.filter((r) => r.vanilla).length + " (" +
        pct(done.filter((r) => r.vanilla).length, done.length) + ")");
      for (const kind of ["abstained", "unparsed"]) {
        const n = done.filter((r) => r.facets.response === kind).length;
        if (n) parts.push(kind + " " + n + " (" + pct(n, done.length) + ")");
      }
      const paired = done.filter((r) => r.facets.pair !== undefined);
      if (paired.length) {
        const both = paired.filter((r) => r.facets.pair === "both right").length;
        parts.push("pairs " + paired.length + ", both right " + both + " (" + pct(both, paired.length) + ")");
      }
    }
    document.getElementById("tally").textContent = parts.join(" · ");
  }

  const body = document.querySelector("#rows tbody");
  function render() {
    const hits = rows.filter(matches);
    tally(hits);
    body.replaceChildren();
    for (const r of hits.slice(0, limit)) body.append(rowElement(r));
    const more = document.getElementById("more");
    more.replaceChildren();
    if (hits.length > limit) {
      const b = el("button", { type: "button" }, "show " + Math.min(PAGE, hits.length - limit) + " more of " +
        (hits.length - limit));
      b.addEventListener("click", () => {
        limit += PAGE;
        render();
      });
      more.append(b);
    }
  }

  function rowElement(r) {
    const tr = el("tr", { class: "item " + (r.facets.result || r.facets.status), "data-id": r.id });
    tr.append(el("td", { class: "id" }, r.id));
    for (const c of columns) tr.append(el("td", {}, r.facets[c] || ""));
    for (const run of runColumns) {
      const v = (r.runs || []).find((x) => x.label === run);
      tr.append(el("td", { class: v ? v.facets.result || v.facets.status : "absent" },
        v ? v.facets.result || v.facets.status : "not in this run"));
    }
    if (!runColumns.length) tr.append(el("td", {}, r.answer || ""), el("td", {}, r.chosen || ""));
    tr.append(el("td", {}, r.passes_total ? r.passes_run + "/" + r.passes_total : ""));
    tr.addEventListener("click", () => {
      const next = tr.nextElementSibling;
      if (next && next.classList.contains("detail")) next.remove();
      else tr.after(detail(r));
    });
    return tr;
  }

  // ---------------------------------------------------------------------------------------------- detail
  function kv(pairs) {
    const dl = el("dl");
    for (const [k, v] of pairs) dl.append(el("dt", {}, k), el("dd", {}, v));
    return dl;
  }

  function mediaBlock(m) {
    const box = el("div", { class: "media" });
    if (!m) return box;
    if (m.error) box.append(el("p", { class: "error" }, "media could not be decoded: " + m.error));
    if (m.note) box.append(el("p", { class: "note" }, m.note));
    if (m.strip) {
      box.append(el("img", { src: m.strip, alt: "frames the model saw", class: "strip" }));
      if (m.times) box.append(el("p", { class: "note" }, "frames at " + m.times.join(", ") + " s"));
    }
    if (m.audio) box.append(el("audio", { controls: "", preload: "none", src: m.audio }));
    return box;
  }

  function passBlock(p) {
    const box = el("div", { class: "pass " + (p.correct === true ? "correct" : p.correct === false ? "wrong" : "") });
    box.append(el("h4", {}, p.title + (p.correct === true ? " ✓ right" : p.correct === false ? " ✗ wrong" : "")));
    box.append(el("div", { class: "label" }, "prompt"), el("pre", { class: "prompt" }, p.prompt));
    if (p.options) {
      const t = el("table", { class: "options" });
      for (const [letter, txt, marks] of p.options) {
        t.append(el("tr", { class: marks.join(" ") }, el("td", {}, letter), el("td", {}, txt),
          el("td", { class: "marks" }, marks.join(", "))));
      }
      box.append(t);
    }
    if (p.output !== null && p.output !== undefined) {
      box.append(el("div", { class: "label" }, "raw output"), el("pre", { class: "output" }, p.output));
    }
    if (Array.isArray(p.scores)) {
      const t = el("table", { class: "scores" });
      t.append(el("tr", {}, el("th", {}, "candidate"), el("th", {}, "sum"), el("th", {}, "tokens"),
        el("th", {}, "per token"), el("th", {}, "letter")));
      for (const s of p.scores) {
        const num = (v) => (Number.isInteger(v) ? String(v) : v.toFixed(3));
        t.append(el("tr", {}, ...s.map((v, i) => el("td", {}, i && typeof v === "number" ? num(v) : v))));
      }
      box.append(el("div", { class: "label" }, "option log-likelihoods"), t);
    } else if (p.scores) {
      box.append(el("div", { class: "label" }, "scores"), el("pre", {}, p.scores));
    }
    if (p.decision) box.append(el("div", { class: "label" }, "decision"), kv(p.decision));
    if (p.fields && p.fields.length) box.append(el("div", { class: "label" }, "record"), kv(p.fields));
    return box;
  }

  function view(title, r) {
    const box = el("div", { class: "view" });
    box.append(el("h3", {}, title));
    if (!r) {
      box.append(el("p", { class: "note" }, "not on this page"));
      return box;
    }
    const facts = [["item", r.id]];
    if (r.answer) facts.push(["right answer", r.answer]);
    if (r.chosen) facts.push(["chosen (first pass)", r.chosen]);
    for (const f of ["status", "result", "response", "pair"]) if (r.facets[f]) facts.push([f, r.facets[f]]);
    if (r.reason) facts.push(["reason", r.reason]);
    box.append(kv(facts));
    if (r.question) box.append(el("div", { class: "label" }, "question"), el("p", { class: "question" }, r.question));
    box.append(mediaBlock(r.media));
    for (const p of r.passes || []) box.append(passBlock(p));
    return box;
  }

  function detail(r) {
    const cell = el("td", { colspan: String(head.children.length) });
    const side = el("div", { class: "side" });
    if (r.runs) {
      for (const run of r.runs) side.append(view(run.label, Object.assign({ id: r.id }, run)));
    } else {
      side.append(view("this item", r));
      if (r.twin) side.append(view("clean twin", byId.get(r.twin)));
    }
    cell.append(side);
    return el("tr", { class: "detail" }, cell);
  }

  window.addEventListener("hashchange", () => {
    if (fromHash()) document.getElementById("items").scrollIntoView();
  });
  if (!fromHash()) render();
})();
