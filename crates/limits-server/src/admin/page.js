// The live page: reads /dashboard.json every second and draws it. Every
// text from the server (rule names, keys: a client chose them) is set as
// text, never as markup.
"use strict";

const SVG = "http://www.w3.org/2000/svg";

function make(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}

function seconds(s) {
  if (s === null || s === undefined) return "never";
  if (s < 1) return (s * 1000).toFixed(0) + " ms";
  if (s < 120) return s.toFixed(1) + " s";
  return (s / 60).toFixed(1) + " min";
}

function fact(label, value) {
  const div = make("div", label);
  div.prepend(make("b", value));
  return div;
}

function drawStore(d) {
  const store = d.store;
  const facts = [
    fact("store", store.kind + (store.healthy ? "" : " (unreachable)")),
  ];
  if (store.on_store_error !== null) facts.push(fact("while it is out", store.on_store_error));
  if (store.unreachable.length) facts.push(fact("servers out", store.unreachable.join(", ")));
  if (store.clock_offset_ms !== null) facts.push(fact("clock offset", store.clock_offset_ms.toFixed(1) + " ms"));
  if (store.evictable) facts.push(fact("warning", "Redis may evict keys"));
  const keys = d.rules.reduce((n, r) => n + (r.keys || 0), 0);
  const evictions = d.rules.reduce((n, r) => n + (r.evictions || 0), 0);
  facts.push(fact("keys held", String(keys)), fact("evictions", String(evictions)));
  facts.push(d.latency
    ? fact("decision p50 / p99", d.latency.p50_ms.toFixed(2) + " / " + d.latency.p99_ms.toFixed(2) + " ms")
    : fact("decision latency", "at once, in memory"));
  if (d.dry_run) facts.push(fact("mode", "dry run: nothing refused"));
  document.getElementById("store").replaceChildren(...facts);
}

// The last second at the right edge, `span` seconds across.
function line(points, className, max, span, width, height) {
  const path = document.createElementNS(SVG, "polyline");
  const step = width / Math.max(1, span - 1), start = span - points.length;
  path.setAttribute("points", points.map((v, i) =>
    ((start + i) * step).toFixed(1) + "," + (height - (v / max) * (height - 2) - 1).toFixed(1)).join(" "));
  path.setAttribute("class", className);
  return path;
}

function chart(history, span) {
  const width = 600, height = 90;
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", "0 0 " + width + " " + height);
  svg.setAttribute("preserveAspectRatio", "none");
  const allowed = history.map(s => s.allowed), limited = history.map(s => s.limited);
  const max = Math.max(1, ...allowed, ...limited);
  const axis = document.createElementNS(SVG, "line");
  axis.setAttribute("x1", "0"); axis.setAttribute("x2", String(width));
  axis.setAttribute("y1", String(height - 1)); axis.setAttribute("y2", String(height - 1));
  axis.setAttribute("class", "axis");
  svg.append(axis, line(allowed, "allowed", max, span, width, height),
    line(limited, "limited", max, span, width, height));
  svg.dataset.peak = String(max);
  return svg;
}

function drawRules(d) {
  const cards = d.rules.map(rule => {
    const card = make("div", undefined, "rule");
    card.dataset.rule = rule.name;
    const last = rule.per_second[rule.per_second.length - 1] || { allowed: 0, limited: 0 };
    card.dataset.lastAllowed = String(last.allowed);
    card.dataset.lastLimited = String(last.limited);
    const now = make("span", undefined, "now");
    now.append(make("span", last.allowed + " allowed/s", "allowed"), " · ",
      make("span", last.limited + " limited/s", "limited"));
    const totals = "in all " + rule.allowed_total + " allowed, " + rule.limited_total + " limited" +
      (rule.keys === null ? "" : "; " + rule.keys + " keys held");
    card.append(now, make("b", rule.name), make("div", rule.description, "words"),
      make("div", totals), chart(rule.per_second, d.seconds));
    return card;
  });
  document.getElementById("rules").replaceChildren(...cards);
  document.getElementById("more").textContent =
    d.more_rules ? d.more_rules + " more rules are not shown." : "";
}

function drawLimited(d) {
  const rows = d.limited_keys.map(k => {
    const row = make("tr");
    row.append(make("td", k.key, "key"), make("td", k.rule), make("td", String(k.refusals), "num"),
      make("td", seconds(k.last_seconds_ago) + " ago", "num"), make("td", seconds(k.retry_in_seconds), "num"));
    return row;
  });
  if (!rows.length) {
    const row = make("tr");
    const cell = make("td", "No key was limited in the last minute.", "empty");
    cell.colSpan = 5;
    row.append(cell);
    rows.push(row);
  }
  document.querySelector("#limited tbody").replaceChildren(...rows);
}

async function refresh() {
  const status = document.getElementById("status");
  try {
    const answer = await fetch("/dashboard.json", { cache: "no-store" });
    if (!answer.ok) throw new Error("HTTP " + answer.status);
    const d = await answer.json();
    drawStore(d);
    drawRules(d);
    drawLimited(d);
    status.textContent = "updated " + new Date().toLocaleTimeString();
    status.className = "";
  } catch (e) {
    status.textContent = "cannot reach the server (" + e.message + "); retrying";
    status.className = "down";
  }
}

refresh();
setInterval(refresh, 1000);
