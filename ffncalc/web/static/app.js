// ffncalc's page: every figure shown is one the JSON API returned (the library's); this script only asks, lays out
// and draws. The view's state lives in the URL, so a link reproduces it.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { upload: null, count: null, sort: null };
const PLAN_FIELDS = {
  fit: ["hardware", "gpus", "dtype", "engine", "context", "batch"],
  infer: ["hardware", "gpus", "dtype", "engine", "batch", "prompt", "generate"],
  train: ["hardware", "gpus", "dtype", "tokens"],
};
const URL_KEYS = ["model", "seq_len", "convention", "model_b", "question", "hardware", "gpus", "dtype", "engine", "context", "batch", "prompt", "generate", "tokens"];

// JSON with every integer exact: one past 2^53 is read as a BigInt from its own digits.
function parseExact(text) {
  return JSON.parse(text, (key, value, ctx) =>
    typeof value === "number" && !Number.isSafeInteger(value) && ctx && /^-?\d+$/.test(ctx.source) ? BigInt(ctx.source) : value);
}

function show(value) {
  if (value === null || value === undefined) return "";
  if (typeof value === "bigint" || (typeof value === "number" && Number.isInteger(value))) return value.toLocaleString("en-US");
  if (typeof value === "number") return String(value);
  if (Array.isArray(value)) return value.join(" × ");
  return String(value);
}

async function api(job, params, format) {
  const body = { ...params };
  if (format) body.format = format;
  const response = await fetch(`/api/${job}`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  const text = await response.text();
  if (!response.ok) {
    let message = `${response.status} ${response.statusText}`;
    try { message = JSON.parse(text).error || message; } catch (e) { /* not JSON: the status */ }
    throw new Error(message);
  }
  return format && format !== "json" ? text : parseExact(text);
}

function fail(box, error) {
  box.textContent = error ? error.message || String(error) : "";
  box.hidden = !error;
}

function source() {
  if (state.upload) return { text: state.upload.text, filename: state.upload.filename };
  const model = $("hub-id").value.trim() || $("preset").value;
  return model ? { model } : null;
}

function countParams() {
  const p = { ...source() };
  const seq = $("seq-len").value.trim();
  if (seq) p.seq_len = Number(seq);
  p.convention = $("convention").value;
  return p;
}

// --- the URL ---------------------------------------------------------------------------------------

function writeUrl() {
  const q = new URLSearchParams();
  const src = state.upload ? null : source();
  if (src) q.set("model", src.model);
  if ($("seq-len").value.trim()) q.set("seq_len", $("seq-len").value.trim());
  if ($("convention").value !== $("convention").dataset.default) q.set("convention", $("convention").value);
  if ($("preset-b").value) q.set("model_b", $("preset-b").value);
  if (state.planAsked) {
    q.set("question", $("question").value);
    for (const f of PLAN_FIELDS[$("question").value]) if ($(f).value.trim()) q.set(f, $(f).value.trim());
  }
  history.replaceState(null, "", q.toString() ? `/?${q}` : "/");
}

function readUrl() {
  const q = new URLSearchParams(location.search);
  const model = q.get("model");
  if (model) {
    if ([...$("preset").options].some((o) => o.value === model)) $("preset").value = model;
    else $("hub-id").value = model;
  }
  if (q.get("seq_len")) $("seq-len").value = q.get("seq_len");
  if (q.get("convention")) $("convention").value = q.get("convention");
  if (q.get("model_b")) $("preset-b").value = q.get("model_b");
  for (const key of URL_KEYS.slice(4)) if (q.get(key) !== null && $(key)) $(key).value = q.get(key);
  return q;
}

// --- the count -------------------------------------------------------------------------------------

const COLUMNS = [
  ["component", "component", false],
  ["part", "part", false],
  ["shape", "shape", false],
  ["count", "count", true],
  ["params", "params", true],
  ["active_params", "active params", true],
  ["forward_flops_per_token", "fwd FLOPs/token", true],
  ["elementwise_flops_per_token", "elementwise/token", true],
];

async function runCount() {
  const src = source();
  writeUrl();
  if (!src) return;
  fail($("error"), null);
  try {
    state.count = await api("count", countParams());
  } catch (e) {
    fail($("error"), e);
    $("result").hidden = true;
    return;
  }
  renderCount(state.count);
}

function renderCount(r) {
  $("result").hidden = false;
  $("model-title").textContent = r.model;
  $("total-params").textContent = show(r.totals.params);
  $("active-params").textContent = show(r.totals.active_params);
  $("flops-per-token").textContent = show(r.totals.forward_flops_per_token);
  $("train-flops").textContent = show(r.totals.train_flops);
  $("convention-info").textContent = `convention ${r.convention.name}: ${r.convention.summary} [${r.convention.source}]`;
  $("context-info").textContent = `seq_len ${show(r.seq_len)} · batch ${show(r.batch)} · recompute ${r.recompute}`;
  renderComponents(r.components);
  const totals = $("totals").tBodies[0];
  totals.replaceChildren(...Object.entries(r.totals).map(([k, v]) => row([k.replaceAll("_", " "), show(v)], [false, true])));
  $("chart").replaceChildren(chart(r, Math.min(760, Math.max(300, $("chart").clientWidth))));
}

function row(cells, numeric) {
  const tr = document.createElement("tr");
  cells.forEach((c, i) => {
    const td = document.createElement("td");
    td.textContent = c;
    if (numeric[i]) td.className = "num";
    tr.append(td);
  });
  return tr;
}

function renderComponents(components) {
  const table = $("components");
  const head = document.createElement("tr");
  for (const [key, label, numeric] of COLUMNS) {
    const th = document.createElement("th");
    th.textContent = label;
    th.dataset.key = key;
    if (numeric) th.className = "num";
    if (state.sort && state.sort.key === key) th.setAttribute("aria-sort", state.sort.dir > 0 ? "ascending" : "descending");
    th.addEventListener("click", () => {
      state.sort = { key, dir: state.sort && state.sort.key === key ? -state.sort.dir : numeric ? -1 : 1 };
      renderComponents(state.count.components);
    });
    head.append(th);
  }
  table.tHead.replaceChildren(head);
  let rows = components.slice();
  if (state.sort) {
    const { key, dir } = state.sort;
    rows.sort((a, b) => {
      const x = key === "shape" ? a.shape.length : a[key], y = key === "shape" ? b.shape.length : b[key];
      return (x < y ? -1 : x > y ? 1 : 0) * dir;
    });
  }
  table.tBodies[0].replaceChildren(...rows.map((c) =>
    row(COLUMNS.map(([key]) => show(c[key])), COLUMNS.map(([, , n]) => n))));
}

// The chart: each component's bar as long as its share of the total the library gives (a drawing of its figures).
function chart(r, W) {
  const NS = "http://www.w3.org/2000/svg";
  const make = (tag, attrs, text) => {
    const el = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
    if (text !== undefined) el.textContent = text;
    return el;
  };
  const panels = [
    ["params", "parameters", r.totals.params],
    ["forward_flops_per_token", "forward FLOPs per token", r.totals.forward_flops_per_token],
  ];
  const label = Math.round(W * 0.36), barW = W - label - 10, rowH = 16;
  const svg = make("svg", { xmlns: NS, role: "img", "aria-label": `shares of ${r.model}` });
  let y = 4;
  for (const [key, title, total] of panels) {
    const shown = r.components.filter((c) => Number(c[key]) > 0);
    svg.append(make("text", { x: 0, y: y + 12, "font-weight": "bold", "font-size": 12 }, `${title} (${show(total)})`));
    y += 20;
    for (const c of shown) {
      const w = Math.max(1, (Number(c[key]) / Number(total)) * barW);
      const g = make("g", {});
      g.append(make("title", {}, `${c.component}: ${show(c[key])}`));
      g.append(make("text", { x: label - 6, y: y + 11, "text-anchor": "end", "font-size": 11 }, c.component));
      g.append(make("rect", { x: label, y: y + 2, width: w.toFixed(1), height: rowH - 4, fill: key === "params" ? "#4a72b0" : "#c8793a" }));
      svg.append(g);
      y += rowH;
    }
    y += 10;
  }
  svg.setAttribute("viewBox", `0 0 ${W} ${y}`);
  svg.setAttribute("width", W);
  svg.setAttribute("height", y);
  svg.setAttribute("font-family", "sans-serif");
  return svg;
}

function save(text, name, type) {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([text], { type }));
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}

function stem() {
  const src = source() || {};
  return (src.model || (src.filename || "model").replace(/\.[^.]*$/, "")).replace(/[^\w.-]+/g, "_");
}

async function download(format) {
  try {
    const text = await api("count", countParams(), format === "json" ? "json-text" : format);
    const ext = { csv: "csv", json: "json", markdown: "md", latex: "tex" }[format];
    save(text, `${stem()}.${ext}`, { csv: "text/csv", json: "application/json", markdown: "text/markdown", latex: "application/x-latex" }[format]);
  } catch (e) {
    fail($("error"), e);
  }
}

// The plot command's share figure (matplotlib, where the server has it), as PDF.
async function downloadPdf() {
  try {
    const response = await fetch("/api/chart", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ ...source(), format: "pdf" }) });
    if (!response.ok) throw new Error((await response.json()).error);
    save(await response.blob(), `${stem()}-shares.pdf`, "application/pdf");
  } catch (e) {
    fail($("error"), e);
  }
}

// --- fit, infer, train ---------------------------------------------------------------------------------

function planShown() {
  const q = $("question").value;
  for (const label of document.querySelectorAll("#plan label[data-for]")) label.hidden = !label.dataset.for.split(" ").includes(q);
}

async function runPlan() {
  state.planAsked = true;
  writeUrl();
  const src = source();
  const q = $("question").value;
  fail($("plan-error"), null);
  if (!src) return fail($("plan-error"), new Error("no model: choose a preset, or paste or upload a config.json or spec"));
  const p = { ...src };
  for (const f of PLAN_FIELDS[q]) {
    const v = $(f).value.trim();
    if (v === "") continue;
    p[f] = $(f).type === "number" ? Number(v) : v;
  }
  if (q === "train" && $("seq-len").value.trim()) p.seq_len = Number($("seq-len").value);
  let r;
  try {
    r = await api(q, p);
  } catch (e) {
    $("plan-result").hidden = true;
    return fail($("plan-error"), e);
  }
  $("plan-result").hidden = false;
  $("plan-title").textContent = r.title;
  $("verdict").textContent = r.notes.length ? r.notes[0] : "";
  $("plan-figures").tBodies[0].replaceChildren(...Object.entries(r.figures).map(([id, f]) => {
    const tr = row([f.label, show(f.value), f.unit || ""], [false, true, false]);
    tr.dataset.id = id;
    return tr;
  }));
  $("plan-notes").replaceChildren(...r.notes.slice(1).map((n) => { const li = document.createElement("li"); li.textContent = n; return li; }));
}

// --- two models side by side ---------------------------------------------------------------------------

async function runCompare() {
  writeUrl();
  const src = source(), b = $("preset-b").value;
  fail($("compare-error"), null);
  if (!src || !b) return;
  const p = { ...countParams(), model_b: b };
  let r;
  try {
    r = await api("table", p);
  } catch (e) {
    $("comparison").hidden = true;
    return fail($("compare-error"), e);
  }
  const [x, y] = r.models;
  const table = $("comparison");
  const head = document.createElement("tr");
  for (const h of ["", x.model, y.model]) { const th = document.createElement("th"); th.textContent = h; head.append(th); }
  table.tHead.replaceChildren(head);
  table.tBodies[0].replaceChildren(...Object.keys(x).filter((k) => k !== "model").map((k) =>
    row([k.replaceAll("_", " "), show(x[k]), show(y[k])], [false, true, true])));
  table.hidden = false;
}

// --- start -----------------------------------------------------------------------------------------

function fill(select, values, chosen) {
  for (const v of values) select.append(new Option(v, v, false, v === chosen));
}

async function start() {
  let presets, options;
  try {
    [presets, options] = await Promise.all([api("presets", {}), api("options", {})]);
  } catch (e) {
    return fail($("error"), e);
  }
  const names = presets.presets.map((p) => p.name);
  fill($("preset"), names);
  fill($("preset-b"), names);
  fill($("convention"), options.convention, options.convention[0]);
  $("convention").dataset.default = options.convention[0];
  fill($("hardware"), options.hardware, "h100-sxm");
  fill($("dtype"), options.dtype, options.defaults.dtype);
  fill($("engine"), options.engine);
  const q = readUrl();
  planShown();

  $("preset").addEventListener("change", () => { state.upload = null; $("hub-id").value = ""; runCount(); });
  $("use-hub").addEventListener("click", () => { state.upload = null; runCount(); });
  $("hub-id").addEventListener("keydown", (e) => { if (e.key === "Enter") { state.upload = null; runCount(); } });
  $("use-text").addEventListener("click", () => {
    state.upload = { text: $("config-text").value, filename: $("config-text").dataset.filename || "pasted" };
    runCount();
  });
  $("config-text").addEventListener("input", () => { delete $("config-text").dataset.filename; });
  $("config-file").addEventListener("change", async () => {
    const file = $("config-file").files[0];
    if (!file) return;
    if (file.size > 2 * 1024 * 1024) {
      state.upload = null;
      return fail($("error"), new Error(`${file.name}: ${file.size.toLocaleString("en-US")} bytes; at most 2 MiB (a config.json or spec is kilobytes)`));
    }
    const text = await file.text();
    $("config-text").value = text;
    $("config-text").dataset.filename = file.name;
    state.upload = { text, filename: file.name };
    runCount();
  });
  $("seq-len").addEventListener("change", runCount);
  $("convention").addEventListener("change", runCount);
  $("question").addEventListener("change", planShown);
  $("run-plan").addEventListener("click", runPlan);
  $("run-compare").addEventListener("click", runCompare);
  for (const b of document.querySelectorAll("[data-download]")) b.addEventListener("click", () => download(b.dataset.download));
  $("download-pdf").hidden = !options.plot;
  $("download-pdf").addEventListener("click", downloadPdf);
  $("download-svg").addEventListener("click", () => {
    const svg = $("chart").querySelector("svg");
    if (svg) save(new XMLSerializer().serializeToString(svg), `${stem()}-shares.svg`, "image/svg+xml");
  });

  await runCount();
  if (q.get("question")) { state.planAsked = true; await runPlan(); }
  if (q.get("model_b")) await runCompare();
  document.body.dataset.ready = "true";
}

document.addEventListener("DOMContentLoaded", start);
