// The argentic-tools dashboard: one event stream in, the DOM out. No framework, no build.
// Everything that comes from the bus (names, arguments, results, errors) is written with
// textContent, never parsed as HTML.
"use strict";

const state = {
  offset: 0, // server clock minus ours, in seconds
  callsShown: 200,
  bucket: 5,
  window: 600,
  rows: new Map(), // task id -> <tr>
  calls: new Map(), // task id -> summary
  latency: new Map(), // tool -> Map(bucket start -> [start, calls, p50, p99, failures])
  fleet: [],
  tools: [],
  selected: null,
};

const $ = (id) => document.getElementById(id);

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined || value === null) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("data-")) node.setAttribute(key, value);
    else node[key] = value;
  }
  for (const child of children) node.append(child);
  return node;
}

const serverNow = () => Date.now() / 1000 + state.offset;

function fmtMs(ms) {
  if (ms === null || ms === undefined) return "–";
  if (ms < 10) return ms.toFixed(2);
  if (ms < 100) return ms.toFixed(1);
  return Math.round(ms).toLocaleString();
}

function fmtDuration(seconds) {
  if (seconds === null || seconds === undefined || !isFinite(seconds)) return "–";
  seconds = Math.max(0, Math.floor(seconds));
  const d = Math.floor(seconds / 86400), h = Math.floor((seconds % 86400) / 3600);
  const m = Math.floor((seconds % 3600) / 60), s = seconds % 60;
  if (d) return `${d}d ${h}h`;
  if (h) return `${h}h ${m}m`;
  if (m) return `${m}m ${s}s`;
  return `${s}s`;
}

function fmtTime(unix) {
  if (!unix) return "";
  const t = new Date((unix - state.offset) * 1000);
  const pad = (n, w = 2) => String(n).padStart(w, "0");
  return `${pad(t.getHours())}:${pad(t.getMinutes())}:${pad(t.getSeconds())}.${pad(t.getMilliseconds(), 3)}`;
}

const fmtPercent = (rate) => (rate === null || rate === undefined ? "–" : (rate * 100).toFixed(rate < 0.1 ? 1 : 0));

function pretty(value) {
  if (value === undefined) return "";
  try {
    return JSON.stringify(value, null, 2);
  } catch (error) {
    return String(value);
  }
}

// -- counters ---------------------------------------------------------------------------

const COUNTED = { success: "succeeded", error: "failed", timeout: "timed_out", cancelled: "cancelled", unknown: "not_seen" };

function countLocally(before, after) {
  // Counters move with each call at once; the next tick brings the server's exact numbers.
  const counters = state.counters;
  if (!counters || before === after) return;
  if (before === undefined && after === "running") counters.in_flight += 1;
  if (before === "running" && after !== "running") counters.in_flight = Math.max(0, counters.in_flight - 1);
  if ((before === undefined || before === "running") && COUNTED[after]) counters[COUNTED[after]] += 1;
  if (before === "unknown" && COUNTED[after]) {  // its result came after all
    counters.not_seen = Math.max(0, counters.not_seen - 1);
    counters[COUNTED[after]] += 1;
  }
  renderCounters(counters);
}

function renderCounters(counters) {
  state.counters = counters;
  $("c-rate").textContent = counters.rate.toFixed(counters.rate < 10 ? 1 : 0);
  for (const key of ["succeeded", "failed", "timed_out", "cancelled", "in_flight", "not_seen", "lost"]) {
    $(`c-${key}`).textContent = (counters[key] ?? 0).toLocaleString();
  }
  // Shown only once the dashboard knows it missed messages.
  $("c-loss").hidden = !(counters.lost || counters.not_seen);
}

// -- recent calls -----------------------------------------------------------------------

function callCells(call) {
  return [
    el("td", { class: "time", text: fmtTime(call.started_at || call.ended_at) }),
    el("td", {}, el("span", { class: `status s-${call.status}`, text: call.status })),
    el("td", { class: "tool", text: call.tool }),
    el("td", { class: "thread", text: call.thread || "" }),
    el("td", { class: "num", text: fmtMs(call.duration_ms) }),
    el("td", {
      class: "error",
      text: call.error_code ? `${call.error_code}: ${call.error || ""}` : call.error || "",
      title: call.error || "",
    }),
  ];
}

function upsertCall(call, atTop = true, count = true) {
  const before = state.calls.get(call.task_id);
  if (count) countLocally(before?.status, call.status);
  state.calls.set(call.task_id, call);
  let row = state.rows.get(call.task_id);
  if (row) {
    row.replaceChildren(...callCells(call));
  } else {
    row = el("tr", { "data-task-id": call.task_id });
    row.replaceChildren(...callCells(call));
    row.addEventListener("click", () => select(call.task_id));
    state.rows.set(call.task_id, row);
    const body = $("calls-body");
    if (atTop) body.prepend(row);
    else body.append(row);
    while (body.rows.length > state.callsShown) {
      const last = body.rows[body.rows.length - 1];
      state.rows.delete(last.dataset.taskId);
      state.calls.delete(last.dataset.taskId);
      last.remove();
    }
  }
  // Set last: a test (or a MutationObserver) waiting for the outcome sees a complete row.
  row.dataset.tool = call.tool;
  row.dataset.status = call.status;
  row.classList.toggle("selected", state.selected === call.task_id);
  $("calls-empty").hidden = state.rows.size > 0;
  // The details follow a call that ends, and one whose tool asks or logs something.
  const said = before !== undefined && before.exchanges !== call.exchanges;
  if (state.selected === call.task_id && (call.status !== "running" || said)) select(call.task_id);
}

function highlight(taskId) {
  state.selected = taskId;
  for (const [id, row] of state.rows) row.classList.toggle("selected", id === taskId);
  for (const row of $("history-body").rows) row.classList.toggle("selected", row.dataset.taskId === taskId);
  const detail = $("detail");
  detail.hidden = false;
  detail.dataset.taskId = taskId;
}

async function select(taskId) {
  highlight(taskId);
  let call;
  try {
    const response = await fetch(`/api/calls/${encodeURIComponent(taskId)}`);
    call = await response.json();
    if (!response.ok) throw new Error(call.error || response.statusText);
  } catch (error) {
    $("detail-title").textContent = `Call ${taskId}`;
    $("detail-fields").replaceChildren(el("dd", { text: String(error.message || error) }));
    $("detail-arguments").textContent = "";
    $("detail-outcome").textContent = "";
    $("detail-content-box").hidden = true;
    $("detail-exchange-box").hidden = true;
    return;
  }
  if (state.selected !== taskId) return;
  showDetail(call);
}

function showDetail(call) {
  $("detail").dataset.status = call.status;
  $("detail-title").replaceChildren(
    el("span", { class: `status s-${call.status}`, text: call.status }),
    ` ${call.tool}`,
  );
  const fields = [
    ["Task id", call.task_id],
    ["Trace id", call.trace_id || "–"],
    ["Thread", call.thread || "–"],
    ["Tool id", call.tool_id || "–"],
    ["Caller", call.caller || (call.via_bus ? "–" : "this dashboard (not sent: refused before)")],
    ["Started", fmtTime(call.started_at) || "–"],
    ["Duration", durationText(call)],
    ["Timeout", call.timeout ? `${call.timeout} s` : "–"],
  ];
  if (call.error_code) fields.push(["Error code", call.error_code]);
  if (call.cancel_reason) fields.push(["Cancelled", call.cancel_reason]);
  $("detail-fields").replaceChildren(
    ...fields.flatMap(([name, value]) => [el("dt", { text: name }), el("dd", { text: value })]),
  );
  $("detail-arguments").textContent = pretty(call.arguments);
  const failed = call.status !== "success" && call.status !== "running";
  $("detail-outcome-title").textContent = failed ? "Error" : "Result";
  $("detail-outcome").dataset.kind = failed ? "error" : "result";
  if (call.status === "running") $("detail-outcome").textContent = "(running)";
  else if (failed) {
    const details = call.details === null || call.details === undefined ? "" : `\n\n${pretty(call.details)}`;
    $("detail-outcome").textContent = `${call.error || ""}${details}`;
  } else $("detail-outcome").textContent = pretty(call.result);
  $("detail-content-box").hidden = !renderContent($("detail-content"), failed ? null : call.content);
  $("detail-exchange-box").hidden = !renderExchange($("detail-exchange"), call.exchanges);
  $("detail-content").dataset.taskId = call.task_id; // last: the details are complete
}

function durationText(call) {
  const parts = [];
  if (call.observed_duration_ms !== null && call.observed_duration_ms !== undefined)
    parts.push(`${fmtMs(call.observed_duration_ms)} ms on the bus`);
  if (call.tool_duration_ms !== null && call.tool_duration_ms !== undefined)
    parts.push(`${fmtMs(call.tool_duration_ms)} ms reported`);
  return parts.join(", ") || "–";
}

// -- content blocks ---------------------------------------------------------------------
// Images and audio are shown in place only for the types a browser renders as media and
// nothing else (never SVG, which can carry script, nor HTML): a data: URL the page builds
// from the block's base64, which must be base64. Any other binary data is offered as a
// download of application/octet-stream (never opened by the browser), and every text,
// a text block's or a resource's, is written with textContent.

const SHOWN_IMAGES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
const PLAYED_AUDIO = new Set([
  "audio/wav", "audio/x-wav", "audio/wave", "audio/mpeg", "audio/mp3", "audio/ogg",
  "audio/webm", "audio/flac", "audio/aac", "audio/mp4",
]);
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const TRUNCATED = "__truncated__";

function fmtBytes(size) {
  if (typeof size !== "number") return "size unknown";
  if (size < 1000) return `${size} B`;
  const units = ["KB", "MB", "GB"];
  let amount = size / 1000, unit = 0;
  while (amount >= 1000 && unit < units.length - 1) { amount /= 1000; unit += 1; }
  return `${amount.toFixed(1)} ${units[unit]}`;
}

const essence = (mime) => String(mime || "").split(";")[0].trim().toLowerCase();
const base64Size = (data) => Math.floor((data.length * 3) / 4) - (data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0);

function blockLabel(text) {
  return el("p", { class: "block-label muted", text });
}

function downloadLink(data, label, index) {
  // application/octet-stream whatever the block says: the browser saves it, never renders it.
  return el("a", {
    class: "block-download",
    href: `data:application/octet-stream;base64,${data}`,
    download: `content-${index + 1}.bin`,
    text: `Download ${label}`,
  });
}

function blockNode(block, index) {
  const kind = block && typeof block === "object" ? block.type : undefined;
  const node = el("div", { class: "block", "data-type": String(kind || "unknown") });
  if (kind === "text") {
    node.append(el("pre", { class: "block-text", text: String(block.text ?? "") }));
    if (block[TRUNCATED]) node.append(blockLabel(`[text, ${fmtBytes(block.bytes)}, cut]`));
    return node;
  }
  if (kind === "image" || kind === "audio") {
    const mime = essence(block.mimeType);
    const label = `${mime || kind}, ${typeof block.data === "string" ? fmtBytes(base64Size(block.data)) : fmtBytes(block.bytes)}`;
    if (block[TRUNCATED] || typeof block.data !== "string" || !BASE64.test(block.data)) {
      node.append(blockLabel(`[${label}${block[TRUNCATED] ? ", not kept" : ""}]`));
    } else if (kind === "image" && SHOWN_IMAGES.has(mime)) {
      node.append(el("img", { src: `data:${mime};base64,${block.data}`, alt: label, title: label }));
    } else if (kind === "audio" && PLAYED_AUDIO.has(mime)) {
      node.append(el("audio", { controls: true, preload: "metadata", src: `data:${mime};base64,${block.data}`, title: label }));
    } else {
      node.append(blockLabel(`[${label}]`), downloadLink(block.data, label, index));
    }
    return node;
  }
  if (kind === "resource") {
    const inner = block.resource && typeof block.resource === "object" ? block.resource : {};
    const mime = inner.mimeType ? String(inner.mimeType) : null;
    if (typeof inner.blob === "string" && BASE64.test(inner.blob)) {
      const label = `${mime || "binary"}, ${fmtBytes(base64Size(inner.blob))}`;
      node.append(blockLabel(`[resource ${inner.uri}, ${label}]`), downloadLink(inner.blob, label, index));
    } else if (inner[TRUNCATED] && inner.text === undefined) {
      node.append(blockLabel(`[resource ${inner.uri}, ${mime || "binary"}, ${fmtBytes(inner.bytes)}, not kept]`));
    } else {
      node.append(blockLabel(`[resource ${inner.uri}${mime ? `, ${mime}` : ""}]`));
      node.append(el("pre", { class: "block-text", text: String(inner.text ?? "") }));
      if (inner[TRUNCATED]) node.append(blockLabel(`[${fmtBytes(inner.bytes)}, cut]`));
    }
    return node;
  }
  if (kind === "resource_link") {
    // A link's URI is the tool's: shown as text, never followed from here.
    const facts = [`link ${block.name}: ${block.uri}`];
    if (block.mimeType) facts.push(String(block.mimeType));
    if (typeof block.size === "number") facts.push(fmtBytes(block.size));
    const about = [block.title, block.description].filter(Boolean).join(" - ");
    node.append(blockLabel(`[${facts.join(", ")}]${about ? ` ${about}` : ""}`));
    return node;
  }
  node.append(blockLabel(`[${String(kind || "block")}: not shown]`));
  return node;
}

function renderContent(container, content) {
  const blocks = Array.isArray(content) ? content : [];
  container.replaceChildren(...blocks.map(blockNode));
  return blocks.length > 0;
}

// -- a call's exchange with its caller ------------------------------------------------
// The tool's questions with their answers, and its log records, in the order they came
// (as a call history keeps them: see Observation.exchanges). All of it is text.

function blockSummary(block) {
  if (!block || typeof block !== "object") return String(block ?? "");
  if (block.type === "text") return String(block.text ?? "");
  const size = typeof block.data === "string" ? fmtBytes(base64Size(block.data)) : fmtBytes(block.bytes);
  const kept = block[TRUNCATED] ? ", not kept" : "";
  if (block.type === "image" || block.type === "audio") return `[${block.mimeType || block.type}, ${size}${kept}]`;
  return `[${block.type || "block"}${kept}]`;
}

const blocksOf = (content) => (Array.isArray(content) ? content : [content]).map(blockSummary);

function questionText(kind, request) {
  if (request[TRUNCATED]) return `asked (${kind}, ${fmtBytes(request.bytes)}, not kept)${request.message ? `: ${request.message}` : ""}`;
  if (kind === "elicit") {
    const fields = Object.keys(request.requestedSchema?.properties || {});
    return `asked: ${request.message ?? ""}${fields.length ? `\nfields: ${fields.join(", ")}` : ""}`;
  }
  if (kind === "sample") {
    const lines = request.systemPrompt ? [`system: ${request.systemPrompt}`] : [];
    for (const message of request.messages || []) {
      for (const text of blocksOf(message.content)) lines.push(`${message.role}: ${text}`);
    }
    return ["asked for a completion:", ...lines].join("\n");
  }
  if (kind === "roots") return "asked for the caller's roots";
  return `asked (${kind}): ${pretty(request)}`;
}

function answerOf(kind, exchange) {
  if (exchange.error !== undefined && exchange.error !== null) return ["error", `no answer: ${exchange.error}`];
  const answer = exchange.answer;
  if (!answer || typeof answer !== "object") return ["waiting", "(waiting for the answer)"];
  if (answer[TRUNCATED]) return ["answered", `answered (${fmtBytes(answer.bytes)}, not kept)`];
  if (kind === "elicit") {
    if (answer.action === "accept") return ["answered", `answered ${JSON.stringify(answer.content ?? {})}`];
    if (answer.action === "decline") return ["declined", "declined"];
    if (answer.action === "cancel") return ["cancelled", "cancelled"];
  }
  if (kind === "sample") return ["answered", `reply from ${answer.model ?? "the model"}: ${blocksOf(answer.content).join(" ")}`];
  if (kind === "roots") return ["answered", `roots: ${(answer.roots || []).map((root) => root.uri).join(", ") || "none"}`];
  return ["answered", pretty(answer)];
}

function logText(record) {
  const parts = [];
  if (record.logger) parts.push(`(${record.logger})`);
  if (record.message) parts.push(String(record.message));
  if (record.data !== null && record.data !== undefined) parts.push(JSON.stringify(record.data));
  return parts.join(" ");
}

function exchangeNode(exchange) {
  const kind = String(exchange?.kind || "");
  const item = el("li", { "data-kind": kind });
  const at = typeof exchange.at_ms === "number" ? `${(exchange.at_ms / 1000).toFixed(3)} s` : "";
  item.append(el("span", { class: "x-at muted", text: at }));
  const body = el("div", { class: "x-body" });
  if (kind === "log") {
    const record = exchange.record && typeof exchange.record === "object" ? exchange.record : {};
    item.dataset.level = String(record.level || "");
    body.append(el("span", { class: "x-level", text: `${record.level || "log"} ` }), logText(record));
  } else {
    const request = exchange.request && typeof exchange.request === "object" ? exchange.request : {};
    const [outcome, text] = answerOf(kind, exchange);
    body.append(
      el("div", { class: "x-question", text: questionText(kind, request) }),
      el("div", { class: "x-answer", text, "data-outcome": outcome }),
    );
  }
  item.append(body);
  return item;
}

function renderExchange(container, exchanges) {
  const items = Array.isArray(exchanges) ? exchanges.filter((x) => x && typeof x === "object") : [];
  container.replaceChildren(...items.map(exchangeNode));
  return items.length > 0;
}

// -- older calls (--history) ------------------------------------------------------------

function fromHistory(observation) {
  const status = ["success", "completed"].includes(observation.status)
    ? "success"
    : ["timeout", "cancelled"].includes(observation.status) ? observation.status : "error";
  return {
    task_id: observation.task_id,
    tool: observation.tool_name,
    tool_id: observation.tool_id,
    thread: observation.thread_id,
    trace_id: observation.trace_id,
    status,
    error: observation.error,
    error_code: observation.error_code,
    arguments: observation.arguments,
    result: observation.result,
    content: observation.content,
    exchanges: observation.exchanges,
    started_at: observation.timestamp - observation.duration_ms / 1000,
    ended_at: observation.timestamp,
    duration_ms: observation.duration_ms,
    tool_duration_ms: observation.duration_ms,
    caller: `the history file (call id ${observation.call_id || "–"})`,
    via_bus: true,
  };
}

async function loadHistory(more = false) {
  const body = $("history-body");
  const params = new URLSearchParams();
  for (const [key, id] of [["tool", "h-tool"], ["thread", "h-thread"], ["outcome", "h-outcome"]]) {
    const value = $(id).value.trim();
    if (value) params.set(key, value);
  }
  if (more && body.rows.length) params.set("before", body.rows[body.rows.length - 1].dataset.endedAt);
  if (!more) body.replaceChildren();
  let answer;
  try {
    const response = await fetch(`/api/history?${params}`);
    answer = await response.json();
    if (!response.ok) throw new Error(answer.error || response.statusText);
  } catch (error) {
    $("history-empty").hidden = false;
    $("history-empty").textContent = String(error.message || error);
    return;
  }
  for (const observation of answer.calls) {
    const call = fromHistory(observation);
    const row = el("tr", { "data-task-id": call.task_id, "data-status": call.status, "data-ended-at": call.ended_at });
    row.replaceChildren(...callCells({ ...call, started_at: call.ended_at }));
    row.addEventListener("click", () => {
      highlight(call.task_id);
      showDetail(call);
    });
    body.append(row);
  }
  $("history-empty").textContent = "No call matches.";
  $("history-empty").hidden = body.rows.length > 0;
  $("history-more").hidden = answer.calls.length === 0;
}

// -- fleet ------------------------------------------------------------------------------

const STATES = {
  online: ["online", "registered; its process answers the dashboard's stats requests"],
  silent: ["no answer", "registered, but its process has not answered a stats request for 5 s: frozen, overloaded, or a tool that does not answer them (plain Argentic)"],
  offline: ["offline", "left the registry: its process died (Last Will) or unregistered"],
};

function stateBadge(state) {
  const [text, title] = STATES[state] || [state, ""];
  return el("span", { class: `state st-${state}`, text, title });
}

function renderFleet() {
  const rows = [];
  let instances = 0, online = 0;
  const now = serverNow();
  for (const tool of state.fleet) {
    instances += tool.replicas.length;
    online += tool.online;
    const health = tool.online === 0 ? "offline" : tool.online < tool.replicas.length ? "degraded" : "online";
    rows.push(
      el(
        "tr",
        { class: "tool-row", "data-tool": tool.name, "data-state": health },
        el("td", {}, el("strong", { text: tool.name }), el("span", { class: "muted", text: ` ${tool.online}/${tool.replicas.length} online` })),
        el("td", {}, el("span", { class: `state st-${health}`, text: health })),
        el("td", { class: "num", text: tool.started_at ? fmtDuration(now - tool.started_at) : "–", title: "the longest-serving online replica's uptime" }),
        el("td", { class: "num", text: tool.calls.toLocaleString() }),
        el("td", { class: "num", text: fmtPercent(tool.error_rate) }),
        el("td", { class: "num", text: tool.cancelled.toLocaleString() }),
        el("td", { class: "num", text: fmtMs(tool.p50_ms) }),
        el("td", { class: "num", text: fmtMs(tool.p99_ms) }),
        el("td", { class: "num", text: String(tool.in_flight) }),
      ),
    );
    for (const replica of tool.replicas) {
      const uptime = replica.online
        ? fmtDuration(replica.started_at ? now - replica.started_at : null)
        : `gone ${fmtDuration(now - replica.left_at)}`;
      const uptimeTitle = replica.online && replica.uptime_from === "registration"
        ? "since it registered: its process does not report stats"
        : "";
      const limit = replica.max_concurrency === null ? "∞" : replica.max_concurrency;
      rows.push(
        el(
          "tr",
          {
            class: `replica ${replica.state}`,
            "data-tool": tool.name,
            "data-tool-id": replica.tool_id,
            "data-state": replica.state,
            "data-pid": replica.pid ?? "",
          },
          el("td", { class: "process", text: `↳ ${replica.process || "?"}`, title: `${replica.source || ""} · tool id ${replica.tool_id} · v${replica.version || "?"}` }),
          el("td", {}, stateBadge(replica.state)),
          el("td", { class: "num", text: uptime, title: uptimeTitle }),
          el("td", { class: "num", text: replica.calls.toLocaleString() }),
          el("td", { class: "num", text: fmtPercent(replica.error_rate) }),
          el("td", { class: "num", text: replica.cancelled.toLocaleString() }),
          el("td", { class: "num", text: fmtMs(replica.p50_ms) }),
          el("td", { class: "num", text: fmtMs(replica.p99_ms) }),
          el("td", { class: "num", text: `${replica.in_flight}/${limit}` }),
        ),
      );
    }
  }
  $("fleet-body").replaceChildren(...rows);
  $("fleet-empty").hidden = rows.length > 0;
  $("fleet-empty").textContent = "No tool registered yet.";
  $("fleet-summary").textContent = state.fleet.length
    ? `${state.fleet.length} tools, ${online}/${instances} instances online`
    : "";
}

// -- latency charts ---------------------------------------------------------------------

const SVG = "http://www.w3.org/2000/svg";
const CHART_W = 600, CHART_H = 64;

function svg(tag, attributes) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, value);
  return node;
}

function mergeLatency(series) {
  for (const [tool, buckets] of Object.entries(series)) {
    let known = state.latency.get(tool);
    if (!known) state.latency.set(tool, (known = new Map()));
    for (const bucket of buckets) known.set(bucket[0], bucket);
  }
  const oldest = serverNow() - state.window;
  for (const [tool, buckets] of state.latency) {
    for (const start of buckets.keys()) if (start + state.bucket < oldest) buckets.delete(start);
    if (!buckets.size) state.latency.delete(tool);
  }
}

function segments(buckets, pick) {
  // Runs of neighbouring buckets that have a value: a gap in the calls is a gap in the line.
  const runs = [];
  let run = [], previous = null;
  for (const bucket of buckets) {
    const value = pick(bucket);
    if (value === null || value === undefined) continue;
    if (previous !== null && bucket[0] - previous > state.bucket) {
      runs.push(run);
      run = [];
    }
    run.push(bucket);
    previous = bucket[0];
  }
  if (run.length) runs.push(run);
  return runs;
}

const MIN_SPAN = 120; // seconds: a young dashboard's charts span this, not the whole window

function renderCharts() {
  const now = serverNow();
  let oldest = now;
  for (const buckets of state.latency.values()) for (const start of buckets.keys()) oldest = Math.min(oldest, start);
  const span = Math.min(state.window, Math.max(MIN_SPAN, now - oldest + state.bucket));
  const start = now - span;
  const x = (t) => (((t + state.bucket / 2 - start) / span) * CHART_W).toFixed(1);
  const charts = [];
  for (const tool of [...state.latency.keys()].sort()) {
    const buckets = [...state.latency.get(tool).values()].sort((a, b) => a[0] - b[0]);
    const top = Math.max(1, ...buckets.map((b) => b[3] ?? b[2] ?? 0)) * 1.1;
    const y = (ms) => (CHART_H - (ms / top) * (CHART_H - 4)).toFixed(1);
    const chart = svg("svg", { viewBox: `0 0 ${CHART_W} ${CHART_H}`, preserveAspectRatio: "none", class: "chart", role: "img" });
    for (const gridline of [0.5, 1]) {
      chart.append(svg("line", { x1: 0, x2: CHART_W, y1: y(top * gridline / 1.1), y2: y(top * gridline / 1.1), class: "grid" }));
    }
    for (const run of segments(buckets, (b) => b[3])) {
      const upper = run.map((b) => `${x(b[0])},${y(b[3])}`);
      const lower = run.slice().reverse().map((b) => `${x(b[0])},${y(b[2] ?? b[3])}`);
      if (run.length === 1) chart.append(svg("line", { x1: x(run[0][0]), x2: x(run[0][0]), y1: y(run[0][3]), y2: y(run[0][2] ?? run[0][3]), class: "band-line" }));
      else chart.append(svg("polygon", { points: [...upper, ...lower].join(" "), class: "band" }));
    }
    for (const run of segments(buckets, (b) => b[2])) {
      const points = run.map((b) => `${x(b[0])},${y(b[2])}`).join(" ");
      if (run.length === 1) chart.append(svg("circle", { cx: x(run[0][0]), cy: y(run[0][2]), r: 2, class: "dot" }));
      else chart.append(svg("polyline", { points, class: "p50" }));
    }
    let calls = 0, failures = 0;
    for (const bucket of buckets) {
      calls += bucket[1];
      failures += bucket[4];
      if (bucket[4] > 0) {
        chart.append(svg("rect", { x: x(bucket[0]) - 2, y: 0, width: 4, height: 5, class: "failure" }));
      }
    }
    const latest = buckets.filter((b) => b[2] !== null).at(-1);
    charts.push(
      el(
        "div",
        { class: "chart-box", "data-tool": tool },
        el(
          "div",
          { class: "chart-head" },
          el("strong", { text: tool }),
          el("span", {
            class: "muted",
            text: `${calls.toLocaleString()} calls${failures ? `, ${failures} failed` : ""}` +
              (latest ? ` · now p50 ${fmtMs(latest[2])} / p99 ${fmtMs(latest[3])} ms` : "") +
              ` · axis 0–${fmtMs(top / 1.1)} ms`,
          }),
        ),
        chart,
      ),
    );
  }
  $("charts").replaceChildren(...charts);
  $("charts-empty").hidden = charts.length > 0;
  $("charts-empty").textContent = "No call ended yet.";
}

// -- the call form ----------------------------------------------------------------------

function kindOf(schema) {
  if (!schema || typeof schema !== "object") return "json";
  if (Array.isArray(schema.enum)) return "enum";
  let type = schema.type;
  if (Array.isArray(type)) type = type.find((t) => t !== "null");
  if (!type) {
    for (const union of ["anyOf", "oneOf"]) {
      if (Array.isArray(schema[union])) {
        const options = schema[union].filter((option) => option && option.type !== "null");
        if (options.length === 1) return kindOf(options[0]);
      }
    }
  }
  if (["string", "integer", "number", "boolean"].includes(type)) return type;
  return "json";
}

function renderToolSelect() {
  const select = $("form-tool");
  const chosen = select.value;
  select.replaceChildren(...state.tools.map((tool) => el("option", { value: tool.name, text: tool.name })));
  if (state.tools.some((tool) => tool.name === chosen)) select.value = chosen;
  if (select.value !== chosen) renderFields();
  $("form-submit").disabled = state.tools.length === 0;
}

function renderFields() {
  const tool = state.tools.find((t) => t.name === $("form-tool").value);
  const schema = (tool && tool.input_schema) || {};
  const required = new Set(schema.required || []);
  $("form-description").textContent = tool ? (tool.description || "").split("\n")[0] : "";
  const fields = [];
  for (const [name, property] of Object.entries(schema.properties || {})) {
    const kind = kindOf(property);
    let input;
    if (kind === "boolean") {
      input = el("input", { type: "checkbox", checked: property.default === true });
    } else if (kind === "enum") {
      input = el("select", {}, ...property.enum.map((value) => el("option", { value: JSON.stringify(value), text: String(value) })));
      if (property.default !== undefined) input.value = JSON.stringify(property.default);
    } else if (kind === "json") {
      input = el("textarea", { rows: 2, spellcheck: false, placeholder: "JSON" });
      if (property.default !== undefined) input.value = JSON.stringify(property.default);
    } else {
      input = el("input", { type: kind === "string" ? "text" : "number", step: "any" });
      if (property.default !== undefined && property.default !== null) input.value = property.default;
    }
    input.dataset.field = name;
    input.dataset.kind = kind;
    input.dataset.required = required.has(name) ? "1" : "";
    input.name = name;
    const hint = property.description || property.title || "";
    fields.push(
      el(
        "label",
        { class: "field" },
        el("span", { class: "name", text: `${name}${required.has(name) ? " *" : ""}` }),
        input,
        el("span", { class: "muted small", text: hint }),
      ),
    );
  }
  $("form-fields").replaceChildren(...fields);
}

function formArguments() {
  const raw = $("form-raw").value.trim();
  if (raw) return JSON.parse(raw);
  const args = {};
  for (const input of $("form-fields").querySelectorAll("[data-field]")) {
    const { field, kind, required } = input.dataset;
    if (kind === "boolean") {
      args[field] = input.checked;
      continue;
    }
    const text = input.value.trim();
    if (text === "" && !required) continue;
    if (kind === "integer" || kind === "number") args[field] = text === "" ? null : Number(text);
    else if (kind === "enum" || kind === "json") args[field] = text === "" ? null : JSON.parse(text);
    else args[field] = input.value;
  }
  return args;
}

async function submitCall(event) {
  event.preventDefault();
  const box = $("form-result"), status = $("form-status"), output = $("form-output");
  box.hidden = false;
  let body;
  try {
    body = {
      tool: $("form-tool").value,
      arguments: formArguments(),
      thread_id: $("form-thread").value.trim() || null,
      timeout: Number($("form-timeout").value) || null,
    };
  } catch (error) {
    status.className = "status s-error";
    status.textContent = "invalid JSON";
    $("form-meta").textContent = "";
    output.textContent = String(error.message || error);
    return;
  }
  status.className = "status s-running";
  status.textContent = "running";
  box.dataset.status = "running";
  $("form-meta").textContent = body.tool;
  output.textContent = "";
  renderContent($("form-content"), null);
  $("form-submit").disabled = true;
  try {
    const response = await fetch("/api/call", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    const answer = await response.json();
    if (!response.ok) throw new Error(answer.error || response.statusText);
    const shown = answer.ok ? "success" : answer.status === "timeout" || answer.error_code === "timeout" ? "timeout" : answer.status === "cancelled" ? "cancelled" : "error";
    status.className = `status s-${shown}`;
    status.textContent = answer.ok ? "success" : answer.error_code || answer.status;
    $("form-meta").textContent = `${answer.tool} · ${fmtMs(answer.duration_ms)} ms · task ${answer.task_id}`;
    output.textContent = answer.ok ? pretty(answer.result) : answer.error + (answer.details ? `\n\n${pretty(answer.details)}` : "");
    renderContent($("form-content"), answer.ok ? answer.content : null);
    box.dataset.status = shown;
    box.dataset.taskId = answer.task_id;
  } catch (error) {
    status.className = "status s-error";
    status.textContent = "failed";
    output.textContent = String(error.message || error);
    box.dataset.status = "error";
  } finally {
    $("form-submit").disabled = state.tools.length === 0;
  }
}

// -- the event stream -------------------------------------------------------------------

function clock(serverTime) {
  state.offset = serverTime - Date.now() / 1000;
}

function connect() {
  const link = $("link");
  const source = new EventSource("/api/events");
  // "live" once the first snapshot is shown: an open stream has sent nothing yet.
  source.onopen = () => {
    link.dataset.state = "connecting";
    link.textContent = "loading…";
  };
  source.onerror = () => {
    const closed = source.readyState === EventSource.CLOSED;
    link.dataset.state = closed ? "closed" : "connecting";
    link.textContent = closed ? "disconnected: reload the page (or open the address with its token)" : "reconnecting…";
  };
  source.addEventListener("snapshot", (event) => {
    const data = JSON.parse(event.data);
    clock(data.server_time);
    link.dataset.state = "live";
    link.textContent = "live";
    state.callsShown = data.calls_shown;
    state.bucket = data.bucket_seconds;
    state.window = data.window_seconds;
    $("window").textContent = String(Math.round(state.window / 60));
    $("bucket").textContent = String(state.bucket);
    $("latency-legend").hidden = false;
    $("broker").textContent = `${data.broker} · ${data.register_topic}`;
    renderCounters(data.counters);
    state.rows.clear();
    state.calls.clear();
    $("calls-body").replaceChildren();
    for (const call of data.calls) upsertCall(call, false, false);
    $("calls-empty").textContent = "No call seen yet.";
    $("calls-empty").hidden = state.rows.size > 0;
    state.fleet = data.fleet;
    renderFleet();
    state.tools = data.tools;
    renderToolSelect();
    state.latency.clear();
    mergeLatency(data.latency);
    renderCharts();
    const history = $("history-card");
    if (data.history && history.hidden) {
      history.hidden = false;
      $("history-file").textContent = data.history;
      loadHistory();
    }
  });
  source.addEventListener("call", (event) => upsertCall(JSON.parse(event.data)));
  source.addEventListener("tick", (event) => {
    const data = JSON.parse(event.data);
    clock(data.server_time);
    renderCounters(data.counters);
    mergeLatency(data.latency);
    renderCharts();
  });
  source.addEventListener("fleet", (event) => {
    const data = JSON.parse(event.data);
    clock(data.server_time);
    state.fleet = data.fleet;
    renderFleet();
  });
  source.addEventListener("tools", (event) => {
    state.tools = JSON.parse(event.data);
    renderToolSelect();
  });
}

document.addEventListener("DOMContentLoaded", () => {
  $("form-tool").addEventListener("change", renderFields);
  $("call-form").addEventListener("submit", submitCall);
  $("history-form").addEventListener("submit", (event) => {
    event.preventDefault();
    loadHistory();
  });
  $("history-more").addEventListener("click", () => loadHistory(true));
  $("detail-close").addEventListener("click", () => {
    state.selected = null;
    $("detail").hidden = true;
    for (const row of document.querySelectorAll("tr.selected")) row.classList.remove("selected");
  });
  connect();
});
