// groundkb console: a small single page over the REST API (no framework, no build step).
// Every view reads the same /api routes any client uses; text is inserted as text
// nodes only (never as HTML), so documents cannot inject markup.
"use strict";

const TYPES = ["all", "command", "api", "guide", "feature", "troubleshooting", "setting", "page"];
const MODES = ["auto", "keyword", "vector", "hybrid"];
const main = document.getElementById("main");
let timer = null;
let lastSearch = null;

// ----------------------------------------------------------------- helpers
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function svg(tag, attrs, ...children) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  for (const c of children.flat(Infinity)) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

function token() { return sessionStorage.getItem("groundkb-admin-token") || ""; }

async function api(path, options = {}) {
  const headers = { Accept: "application/json", ...(options.headers || {}) };
  // the token goes with every request: a caller's own token (servers with access
  // control), or the admin token (admin actions)
  if (options.admin || token()) headers.Authorization = "Bearer " + token();
  if (options.body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, {
    method: options.method || "GET",
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const data = await res.json().catch(() => ({}));
  if (!res.ok) {
    const e = data.error || { code: "http_" + res.status, message: res.statusText };
    throw new Error(`[${e.code}] ${e.message}`);
  }
  return data;
}

function escapeRe(s) { return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"); }

// Text with the matched terms marked (<mark>), as DOM nodes. Terms are the analyzer's
// tokens ("user" for "users"), so a term marks the words it starts.
function highlight(text, terms) {
  const frag = document.createDocumentFragment();
  const words = (terms || []).flatMap((t) => t.split(/\s+/)).filter((t) => t.length > 1);
  if (!words.length) { frag.append(text); return frag; }
  const re = new RegExp("\\b(" + words.map(escapeRe).join("|") + ")[\\w-]*", "gi");
  let at = 0;
  for (const m of text.matchAll(re)) {
    frag.append(text.slice(at, m.index), h("mark", {}, m[0]));
    at = m.index + m[0].length;
  }
  frag.append(text.slice(at));
  return frag;
}

function docLink(id, terms, label) {
  const q = terms && terms.length ? "?terms=" + encodeURIComponent(terms.join(",")) : "";
  return h("a", { href: "#/doc/" + encodeURIComponent(id) + q }, label || id);
}

function fmtMs(v) { return v >= 100 ? v.toFixed(0) + " ms" : v.toFixed(1) + " ms"; }
function pct(v) { return (100 * v).toFixed(1) + " %"; }

function setView(title, ...nodes) {
  if (timer) { clearInterval(timer); timer = null; }
  main.replaceChildren(h("h1", {}, title), ...nodes.flat(Infinity).filter((n) => n !== null && n !== undefined && n !== false));
  document.title = title + " · groundkb";
}

function statusLine(id) { return h("p", { id, class: "status", role: "status", "aria-live": "polite" }); }
function say(el, text, error) { el.textContent = text; el.classList.toggle("error", !!error); }

async function refreshBadge() {
  try {
    const health = await api("/api/health");
    const m = health.retrieval;
    const badge = document.getElementById("mode-badge");
    badge.textContent = "retrieval: " + m.mode + (m.reason ? " (" + m.reason + ")" : "");
    badge.title = m.detail || "configured " + m.configured;
    badge.classList.toggle("degraded", !!m.reason && m.reason !== "no_embedder");
  } catch (e) { /* the page itself shows errors */ }
}

// ------------------------------------------------------------------ search
async function viewSearch(params) {
  const q = h("input", { id: "q", name: "query", type: "search", required: true, maxlength: 2000,
    value: params.get("query") || "", placeholder: "Ask a question, e.g. how do I list users",
    "aria-label": "Question" });
  const sel = (id, label, values, current) => h("label", {}, label,
    h("select", { id, name: id }, values.map((v) => h("option", { value: v, selected: v === current }, v))));
  const form = h("form", { class: "search", role: "search", onsubmit: (ev) => {
    ev.preventDefault();
    const p = new URLSearchParams();
    for (const [k, v] of new FormData(form)) if (v && v !== "all" && !(k === "mode" && v === "auto")) p.set(k, v);
    location.hash = "#/search?" + p.toString();
  } },
    h("label", { class: "q" }, "Question", q),
    sel("type", "Type", TYPES, params.get("type") || "all"),
    h("label", {}, "Category", h("input", { name: "category", value: params.get("category") || "", size: 12 })),
    sel("source", "Source", ["all", ...(params.get("source") ? [params.get("source")] : [])], params.get("source") || "all"),
    sel("mode", "Mode", MODES, params.get("mode") || "auto"),
    h("label", {}, "Hits", h("input", { name: "limit", type: "number", min: 1, max: 100, value: params.get("limit") || 5 })),
    h("button", { type: "submit" }, "Search"));
  const out = h("section", { id: "result", "aria-live": "polite" });
  setView("Search", form, out);
  api("/api/sources").then((d) => {  // filled in later: typing never waits for it
    const select = form.querySelector("#source");
    for (const s of d.sources) {
      if (![...select.options].some((o) => o.value === s.name)) select.append(h("option", { value: s.name }, s.name));
    }
  }).catch(() => {});
  if (!params.get("query")) { q.focus(); return; }
  out.append(h("p", { class: "empty" }, "Searching…"));
  try {
    const body = { query: params.get("query") };
    for (const k of ["type", "category", "source", "mode"]) if (params.get(k)) body[k] = params.get(k);
    if (params.get("limit")) body.limit = Number(params.get("limit"));
    const r = await api("/api/search", { method: "POST", body });
    lastSearch = location.hash;
    out.replaceChildren(renderVerdict(r), renderHits(r));
    const first = out.querySelector(".hit h3 a");
    if (first) first.focus(); else q.focus();
  } catch (e) {
    out.replaceChildren(h("p", { class: "error", role: "alert" }, e.message));
  }
  refreshBadge();
}

function rerun(query) {
  const p = new URLSearchParams(location.hash.split("?")[1] || "");
  p.set("query", query);
  location.hash = "#/search?" + p.toString();
}

function renderVerdict(r) {
  const v = r.verdict;
  const box = h("div", { class: "verdict " + v.kind, "data-testid": "verdict" },
    h("div", {}, h("span", { class: "kind" }, v.kind.replace("_", " ")), " ",
      h("span", { class: "meta" }, h("span", {}, "reason " + v.reason),
        h("span", {}, "confidence " + v.confidence.toFixed(2)),
        h("span", {}, "mode " + r.mode), h("span", {}, fmtMs(r.took_ms)))),
    h("p", {}, v.message));
  if (r.notice) box.append(h("p", { class: "notice" }, "Note: " + r.notice));
  if (r.corrected_query) box.append(h("p", {}, "Corrected to: ", h("code", {}, r.corrected_query)));
  if (r.asked_of && r.asked_of.length)
    box.append(h("p", {}, "Asked of " + r.asked_of.join(", ") + " (named in the question)"));
  if (v.options && v.options.length) {
    box.append(h("div", {}, "Options:", h("ul", { class: "chips", "aria-label": "Options" },
      v.options.map((o) => h("li", {}, docLink(o.doc_id, r.terms, o.label || o.title))))));
  }
  if (r.suggestions && r.suggestions.length) {
    box.append(h("div", {}, "Did you mean:", h("ul", { class: "chips", "aria-label": "Suggestions" },
      r.suggestions.map((s) => h("li", {}, h("button", { type: "button", onclick: () => rerun(s) }, s))))));
  }
  if (v.evidence && v.evidence.length) {
    box.append(h("details", {}, h("summary", {}, "Evidence for the verdict"),
      h("ul", {}, v.evidence.map((e) => h("li", {}, e)))));
  }
  return box;
}

function renderHits(r) {
  if (!r.hits.length) return h("p", { class: "empty" }, "No hits.");
  return h("ol", { class: "hits", "aria-label": "Hits" }, r.hits.map((hit) => {
    const ranks = Object.entries(hit.ranks || {}).map(([k, n]) => k + " #" + n).join(", ");
    const cite = /^https?:\/\//.test(hit.citation)
      ? h("a", { href: hit.citation, target: "_blank", rel: "noopener noreferrer" }, hit.citation)
      : h("code", {}, hit.citation);
    return h("li", { class: "hit", "data-doc-id": hit.doc_id },
      h("h3", {}, docLink(hit.doc_id, hit.matched_terms, hit.title)),
      h("div", { class: "meta" },
        h("span", { class: "path" }, hit.header_path || hit.title),
        hit.command ? h("span", {}, h("code", {}, hit.command)) : null,
        hit.method ? h("span", { class: "endpoint" }, h("code", {}, hit.method + " " + hit.path)) : null,
        hit.deprecated ? h("span", { class: "deprecated", title: "Its API spec marks it deprecated" }, "deprecated") : null,
        h("span", {}, hit.type + (hit.category ? " / " + hit.category : "")),
        h("span", {}, "source " + hit.source),
        h("span", {}, "score " + hit.score.toFixed(2)),
        ranks ? h("span", { class: "ranks" }, "ranks: " + ranks) : null),
      h("p", { class: "snippet" }, highlight(hit.snippet, hit.matched_terms)),
      h("div", { class: "meta terms" }, "matched: ",
        hit.matched_terms.length ? hit.matched_terms.map((t, i) => [i ? " " : "", h("code", {}, t)]) : "none"),
      h("div", { class: "meta cite" }, "citation: ", cite),
      h("details", {}, h("summary", {}, "Why this hit"),
        h("ul", {}, hit.explanation.map((e) => h("li", {}, e)))));
  }));
}

// ---------------------------------------------------------------- document
async function viewDocument(id, params) {
  const terms = (params.get("terms") || "").split(",").filter(Boolean);
  setView("Document", h("p", { class: "empty" }, "Loading…"));
  try {
    const d = await api("/api/documents/" + encodeURIComponent(id).replace(/%2F/g, "/"));
    const back = lastSearch ? h("p", {}, h("a", { href: lastSearch }, "← Back to the results")) : null;
    setView(d.title, back,
      h("p", { class: "meta" }, h("span", {}, "id " + d.id), h("span", {}, d.type),
        d.category ? h("span", {}, d.category) : null, h("span", {}, "source " + d.source),
        h("span", {}, "updated " + d.updated_at)),
      d.command ? h("p", {}, "Command: ", h("code", {}, d.command)) : null,
      h("p", { class: "meta cite" }, "citation: ", /^https?:\/\//.test(d.citation)
        ? h("a", { href: d.citation, target: "_blank", rel: "noopener noreferrer" }, d.citation)
        : h("code", {}, d.citation)),
      d.keywords.length ? h("p", { class: "meta" }, "keywords: " + d.keywords.join(", ")) : null,
      h("pre", { class: "content", tabindex: 0, "aria-label": "Content" }, highlight(d.content, terms)),
      d.examples.length ? [h("h2", {}, "Examples"), h("ul", {}, d.examples.map((e) =>
        h("li", {}, h("code", {}, e.code), e.description ? " — " + e.description : "")))] : null,
      d.related_ids.length ? [h("h2", {}, "Related"), h("ul", {}, d.related_ids.map((r) =>
        h("li", {}, docLink(r))))] : null);
    main.focus();
  } catch (e) {
    setView("Document", h("p", { class: "error", role: "alert" }, e.message));
  }
}

// ----------------------------------------------------------------- sources
function adminBox(status) {
  const input = h("input", { id: "admin-token", type: "password", autocomplete: "off", value: token(), size: 28 });
  return h("form", { class: "admin", onsubmit: (ev) => {
    ev.preventDefault();
    sessionStorage.setItem("groundkb-admin-token", input.value);
    say(status, input.value ? "Token kept for this tab." : "Token cleared.");
    showCaller();
  } }, h("label", {}, "Token: your access token, or the admin token (admin actions)", input),
    h("button", { type: "submit", class: "secondary" }, "Use token"));
}

// Who the server says this tab is (its token's user, or anonymous) and what it reads.
async function showCaller() {
  const line = document.getElementById("whoami");
  if (!line) return;
  try {
    const me = await api("/api/whoami");
    const groups = me.groups.length ? me.groups.join(", ") : "none";
    line.textContent = `Reading as ${me.user} (groups: ${groups}; ${me.via}): ` +
      (me.sources.length ? me.sources.join(", ") : "no sources");
  } catch (e) {
    line.textContent = e.message;
  }
}

async function viewSources() {
  const status = statusLine("sources-status");
  setView("Sources", adminBox(status), h("p", { id: "whoami", class: "whoami" }), status,
    h("p", { class: "empty" }, "Loading…"));
  showCaller();
  let data;
  try { data = await api("/api/sources"); } catch (e) { say(status, e.message, true); return; }
  const rows = data.sources.map((s) => {
    const sync = s.last_sync;
    const errors = sync && sync.errors.length
      ? h("details", {}, h("summary", { class: "error" }, sync.errors.length + " problem(s)"),
        h("ul", {}, sync.errors.map((e) => h("li", {}, e))))
      : sync ? "none" : "—";
    const toggle = h("button", { type: "button", class: s.enabled ? "secondary" : "",
      "aria-pressed": String(s.enabled), "data-action": "toggle", "data-source": s.name,
      onclick: () => act(status, `/api/sources/${encodeURIComponent(s.name)}/${s.enabled ? "disable" : "enable"}`,
        `${s.enabled ? "Disabled" : "Enabled"} ${s.name}.`) },
      s.enabled ? "Disable" : "Enable");
    const resync = h("button", { type: "button", class: "secondary", "data-action": "sync",
      onclick: (ev) => { ev.target.disabled = true; say(status, `Re-syncing ${s.name}…`);
        act(status, `/api/sources/${encodeURIComponent(s.name)}/sync`, null); } }, "Re-sync");
    return h("tr", { "data-source": s.name },
      h("th", { scope: "row" }, s.name), h("td", {}, s.kind),
      h("td", { class: "num" }, s.documents), h("td", { class: "num" }, s.chunks),
      h("td", {}, s.updated_at), h("td", {}, errors),
      h("td", {}, h("span", { class: s.enabled ? "state-on" : "state-off" }, s.enabled ? "enabled" : "disabled")),
      h("td", {}, toggle, " ", resync));
  });
  main.lastChild.replaceWith(rows.length ? h("table", {},
    h("caption", { class: "meta" }, "Disabled sources are left out of searches, look-ups and listings."),
    h("thead", {}, h("tr", {}, ["Source", "Type", "Documents", "Chunks", "Last indexed", "Errors", "State", "Actions"]
      .map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, rows)) : h("p", { class: "empty" }, "No sources yet: groundkb ingest PATH --source NAME"));
}

async function act(status, path, done) {
  try {
    const r = await api(path, { method: "POST", admin: true, body: {} });
    const msg = done || (r.source ? `Synced ${r.source}: ${r.inserted} inserted, ${r.updated} updated, ` +
      `${r.unchanged} unchanged, ${r.deleted} deleted, ${r.errors.length} problem(s).` : "Done.");
    await viewSources();
    say(document.getElementById("sources-status"), msg);
  } catch (e) {
    say(status, e.message, true);
    main.querySelectorAll("button[disabled]").forEach((b) => { b.disabled = false; });
  }
}

// ----------------------------------------------------------------- metrics
function chart(points, series, opts) {
  const W = 880, H = 220, L = 56, R = 16, T = 14, B = 28;
  const box = svg("svg", { class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": opts.label });
  box.append(svg("title", {}, opts.label));
  if (!points.length) return box;
  const t0 = points[0].start, t1 = Math.max(points[points.length - 1].start, t0 + 1);
  const max = Math.max(opts.min || 0, ...points.flatMap((p) => series.map((s) => p[s.key])));
  const x = (t) => L + ((t - t0) / (t1 - t0)) * (W - L - R);
  const y = (v) => H - B - (v / (max || 1)) * (H - T - B);
  for (let i = 0; i <= 4; i++) {
    const v = (max * i) / 4;
    box.append(svg("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), stroke: "#e5e9f0" }),
      svg("text", { x: L - 6, y: y(v) + 4, "text-anchor": "end" }, opts.fmt(v)));
  }
  const time = (t) => new Date(t * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  box.append(svg("text", { x: L, y: H - 8 }, time(t0)), svg("text", { x: W - R, y: H - 8, "text-anchor": "end" }, time(t1)));
  for (const s of series) {
    const pts = points.map((p) => `${x(p.start).toFixed(1)},${y(p[s.key]).toFixed(1)}`).join(" ");
    box.append(svg("polyline", { points: pts, fill: "none", stroke: s.color, "stroke-width": 2, "data-series": s.key }));
    if (points.length === 1) box.append(svg("circle", { cx: x(points[0].start), cy: y(points[0][s.key]), r: 3, fill: s.color }));
  }
  return box;
}

function legend(series) {
  return h("p", { class: "legend" }, series.map((s) => [h("i", { style: "background:" + s.color }), s.name]));
}

async function viewMetrics() {
  const status = statusLine("metrics-status");
  const body = h("div", {});
  const kill = h("button", { type: "button", class: "secondary", id: "kill-switch" }, "Force keyword");
  setView("Metrics", adminBox(status), status, body,
    h("p", { class: "meta" }, "Prometheus: ", h("a", { href: "/metrics" }, "/metrics"), " · refreshes every 10 s"));
  const draw = async () => {
    let d;
    try { d = await api("/api/metrics"); } catch (e) { say(status, e.message, true); return; }
    const m = d.retrieval, sm = d.summary;
    const forced = m.reason === "forced";
    kill.textContent = forced ? "Back to " + m.configured : "Force keyword";
    kill.setAttribute("aria-pressed", String(forced));
    kill.onclick = async () => {
      try { await api("/api/admin/mode", { method: "PUT", admin: true, body: { keyword: !forced } }); draw(); refreshBadge(); }
      catch (e) { say(status, e.message, true); }
    };
    const card = (v, l) => h("div", { class: "card" }, h("div", { class: "v" }, v), h("div", { class: "l" }, l));
    const lat = [{ key: "p50_ms", name: "p50", color: "#1f5fbf" }, { key: "p95_ms", name: "p95", color: "#c0392b" }];
    const rate = [{ key: "no_match_rate", name: "no match", color: "#a12b2b" }, { key: "clarify_rate", name: "clarify", color: "#946200" }];
    body.replaceChildren(
      h("h2", {}, "Retrieval mode"),
      h("p", { id: "mode-line" }, h("strong", {}, m.mode), m.reason ? ` — ${m.reason}: ${m.detail}` : " (configured)",
        m.retry_in_s ? ` · retrying ${m.configured} in ${m.retry_in_s.toFixed(0)} s` : "", " ", kill),
      h("h2", {}, "Over the last " + Math.round(d.points.length ? (d.now - d.points[0].start) / 60 + 0.5 : 0) + " min"),
      h("div", { class: "cards" }, card(sm.searches, "searches (window)"), card(fmtMs(sm.p50_ms), "p50 latency"),
        card(fmtMs(sm.p95_ms), "p95 latency"), card(pct(sm.no_match_rate), "no match"),
        card(pct(sm.clarify_rate), "clarify"), card(sm.fallbacks, "fallbacks"), card(sm.errors, "errors")),
      h("h2", {}, "Latency percentiles"), legend(lat),
      chart(d.points, lat, { label: "Search latency p50 and p95 over time", fmt: (v) => v.toFixed(0) + " ms", min: 1 }),
      h("h2", {}, "No-match and clarify rates"), legend(rate),
      chart(d.points, rate, { label: "No-match and clarify rate over time", fmt: (v) => (100 * v).toFixed(0) + "%", min: 0.1 }),
      h("details", {}, h("summary", {}, "Data table"), h("table", {},
        h("thead", {}, h("tr", {}, ["Time", "Searches", "p50", "p95", "No match", "Errors", "Fallbacks"].map((c) => h("th", { scope: "col" }, c)))),
        h("tbody", {}, d.points.map((p) => h("tr", {}, h("td", {}, new Date(p.start * 1000).toLocaleTimeString()),
          h("td", { class: "num" }, p.searches), h("td", { class: "num" }, fmtMs(p.p50_ms)), h("td", { class: "num" }, fmtMs(p.p95_ms)),
          h("td", { class: "num" }, pct(p.no_match_rate)), h("td", { class: "num" }, p.errors), h("td", { class: "num" }, p.fallbacks)))))));
    if (!d.points.length) body.append(h("p", { class: "empty" }, "No searches yet."));
  };
  await draw();
  timer = setInterval(() => { if (!document.hidden) draw(); }, 10000);
}

// ---------------------------------------------------------------- settings
async function viewSettings() {
  const status = statusLine("settings-status");
  setView("Settings", adminBox(status), status, h("p", { class: "empty" }, "Loading…"));
  let d;
  try { d = await api("/api/settings"); } catch (e) { say(status, e.message, true); return; }
  const reload = h("button", { type: "button", class: "secondary", onclick: async () => {
    try {
      const r = await api("/api/admin/reload", { method: "POST", admin: true, body: {} });
      await viewSettings();
      say(document.getElementById("settings-status"), r.changed.length ? "Reloaded; changed: " + r.changed.join(", ") : "Reloaded; nothing changed.");
    } catch (e) { say(status, e.message, true); }
  } }, "Reload from the settings file");
  main.lastChild.replaceWith(
    h("p", { class: "meta" }, "Read-only. File: " + (d.config_path || "none (defaults and environment)"), " ", reload),
    h("table", {}, h("thead", {}, h("tr", {}, ["Setting", "Value", "Default", "Meaning"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, d.settings.map((s) => h("tr", { "data-setting": s.name }, h("th", { scope: "row" }, h("code", {}, s.name)),
        h("td", {}, s.secret ? (s.value ? "(set, hidden)" : "(not set)") : JSON.stringify(s.value)),
        h("td", {}, s.secret ? "" : JSON.stringify(s.default)), h("td", {}, s.help))))));
}

// ------------------------------------------------------------------ router
async function route() {
  const [path, query] = location.hash.replace(/^#/, "").split("?");
  const params = new URLSearchParams(query || "");
  const page = path.startsWith("/doc/") ? "search" : (path.replace(/^\//, "") || "search");
  for (const a of document.querySelectorAll("nav a[data-page]")) {
    if (a.dataset.page === page) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  if (path.startsWith("/doc/")) return viewDocument(decodeURIComponent(path.slice(5)), params);
  if (page === "sources") return viewSources();
  if (page === "metrics") return viewMetrics();
  if (page === "settings") return viewSettings();
  return viewSearch(params);
}

let pendingG = false;
document.addEventListener("keydown", (ev) => {
  const typing = /^(INPUT|SELECT|TEXTAREA)$/.test(document.activeElement.tagName);
  if (typing || ev.ctrlKey || ev.metaKey || ev.altKey) return;
  if (ev.key === "/") {
    ev.preventDefault();
    if (!location.hash.startsWith("#/search") && location.hash !== "") location.hash = "#/search";
    else { const q = document.getElementById("q"); if (q) q.focus(); }
    return;
  }
  if (pendingG) {
    pendingG = false;
    const to = { s: "#/search", o: "#/sources", m: "#/metrics", t: "#/settings" }[ev.key];
    if (to) { ev.preventDefault(); location.hash = to; }
    return;
  }
  if (ev.key === "g") pendingG = true;
});
window.addEventListener("hashchange", route);
refreshBadge();
route();
