// The viewer: connects to NATS over WebSocket, follows the conversation
// named by the URL (?c=ID or #ID) with @convstream/client (the stored
// snapshot, then its deltas, made up from the bucket after a gap or a
// reconnect) and renders it. Branch switches are published as
// convstream.message.updated.v1 events; the view changes when the
// resulting snapshot arrives. The composer sends a user message and asks
// an orchestrator for the reply (convstream.reply.requested.v1), which
// streams in as the chunks' append deltas arrive; stop and regenerate act
// on the reply being written and on the last one. Bundled into ../static/viewer.js by `make ui`
// (clients/typescript/scripts/build-viewer.mjs).

import { wsconnect } from "@nats-io/nats-core";
import { openConversation, PipelineFailedError, RejectedError } from "@convstream/client";
import { renderFlatList } from "./render.js";
import { renderTree } from "./tree.js";

const $ = (id) => document.getElementById(id);
const ID_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;

function conversationFromURL() {
  const q = new URLSearchParams(location.search).get("c");
  const id = q || decodeURIComponent(location.hash.slice(1));
  return ID_PATTERN.test(id) ? id : "";
}

// websocketURL: ?ws=URL, else config.json's URL, else this host with its port.
function websocketURL(config) {
  const fromQuery = new URLSearchParams(location.search).get("ws");
  if (fromQuery) return fromQuery;
  if (config.websocketUrl) return config.websocketUrl;
  if (config.websocketPort) {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    return `${scheme}://${location.hostname}:${config.websocketPort}`;
  }
  throw new Error("no NATS WebSocket listener configured: start the worker with --websocket, or add ?ws=URL");
}

function setStatus(state, text) {
  const s = $("status");
  s.dataset.state = state;
  s.textContent = text;
}

class Viewer {
  constructor(conversation) {
    this.conv = conversation;
    this.id = conversation.id;
    this.shown = { version: -1, treeVersion: -1 };
  }

  // start renders each snapshot the conversation holds: a new flatList
  // version redraws the transcript, a newer stored contextTree the tree.
  start() {
    if (!this.conv.snapshot) setStatus("empty", `no snapshot of ${this.id} yet`);
    $("composer").hidden = false;
    this.conv.subscribe((s) => {
      if (s.version !== this.shown.version) this.render(s);
      else if (s.treeVersion !== this.shown.treeVersion) this.renderTree(s);
    });
    this.conv.onError((err) => setStatus("error", errorText(err)));
  }

  render(s) {
    $("empty").hidden = true;
    $("infer").disabled = false;
    $("composer").hidden = false;
    const streaming = this.conv.isStreaming;
    $("stop").disabled = !streaming;
    $("regenerate").disabled = streaming || !s.flatList.some((e) => e.role === "assistant");
    $("send").disabled = streaming;
    const list = $("transcript");
    renderFlatList(list, s.flatList, (entry, index) => this.switchBranch(entry, index));
    list.dataset.version = String(s.version);
    this.shown.version = s.version;
    this.renderTree(s);
    $("version").textContent = `${this.id} · version ${s.version} · sequence ${s.sequence}`;
    setStatus("live", "live");
  }

  // renderTree shows the contextTree held; its data-version is the version
  // of the stored snapshot it came from.
  renderTree(s) {
    const tree = $("tree");
    renderTree(tree, s.contextTree);
    tree.dataset.version = String(s.treeVersion);
    this.shown.treeVersion = s.treeVersion;
  }

  // switchBranch sets metadata.activeBranchIndex on the branch's parent.
  async switchBranch(entry, index) {
    try {
      setStatus("busy", `switching ${entry.parentId} to branch ${index + 1}`);
      await this.conv.switchBranch(entry.parentId, index);
    } catch (err) {
      setStatus("error", `branch switch failed: ${err.message}`);
    }
  }

  // send appends the composer's text as a user message and asks for the
  // reply.
  async send() {
    const box = $("message");
    const text = box.value.trim();
    if (!text) return;
    try {
      setStatus("busy", "sending");
      box.value = "";
      await this.conv.send(text);
      setStatus("live", "live");
    } catch (err) {
      box.value = text;
      setStatus("error", `send failed: ${errorText(err)}`);
    }
  }

  async stop() {
    try {
      await this.conv.stop();
    } catch (err) {
      setStatus("error", `stop failed: ${errorText(err)}`);
    }
  }

  async regenerate() {
    try {
      await this.conv.regenerate();
    } catch (err) {
      setStatus("error", `regenerate failed: ${errorText(err)}`);
    }
  }

  // infer asks the worker what the default pipeline would send to a model
  // for the active path.
  async infer() {
    const out = $("inference");
    out.textContent = "…";
    out.dataset.state = "busy";
    try {
      const ctx = await this.conv.infer({ pipeline: "default" });
      out.replaceChildren(inferenceView(ctx));
      out.dataset.state = "done";
    } catch (err) {
      out.replaceChildren(errorView(err));
      out.dataset.state = "error";
    }
  }
}

function errorText(err) {
  if (err instanceof RejectedError) return `rejected (${err.rejection.code}): ${err.rejection.reason}`;
  if (err instanceof PipelineFailedError) return err.failure.message;
  return err.message;
}

function errorView(err) {
  const box = document.createElement("div");
  box.className = "error";
  box.textContent = errorText(err);
  return box;
}

// contextMessageText is one line for a message of an inference context,
// whatever its shape: text content, content parts (text, images, files),
// tool calls with or without text, a tool's result, images beside it, or
// nothing at all.
function contextMessageText(m) {
  const out = [];
  const c = m.content;
  if (typeof c === "string") {
    if (c) out.push(c);
  } else if (Array.isArray(c)) {
    for (const p of c) {
      if (typeof p === "string") out.push(p);
      else if (p && typeof p.text === "string") out.push(p.text);
      else if (p && (p.type === "image_url" || p.type === "image")) out.push("[image]");
      else if (p && p.type) out.push(`[${p.type}]`);
    }
  } else if (c != null) {
    out.push(JSON.stringify(c));
  }
  const images = (m.imageList || []).length;
  if (images) out.push(`[${images} image${images > 1 ? "s" : ""}]`);
  for (const t of m.tools || m.tool_calls || []) {
    const name = t.apiName || t.name || t.function?.name || t.identifier || "tool";
    out.push(`→ ${name}(${typeof t.arguments === "string" ? t.arguments : JSON.stringify(t.arguments ?? t.function?.arguments ?? "")})`);
  }
  if (m.tool_call_id || m.tool_call_id === "") out.unshift(`[result of ${m.tool_call_id}]`);
  return out.join(" ") || "(no content)";
}

function inferenceView(d) {
  const box = document.createElement("div");
  const stats = d.stats || {};
  const head = document.createElement("p");
  head.textContent = `${(d.messages || []).length} messages · version ${d.version} · ${Number(stats.totalDurationMs || 0).toFixed(2)} ms`;
  const msgs = document.createElement("ol");
  msgs.className = "ctx-messages";
  for (const m of d.messages || []) {
    const li = document.createElement("li");
    const role = document.createElement("b");
    role.textContent = m.role ?? "?";
    const text = contextMessageText(m);
    li.append(role, " ", text.length > 240 ? text.slice(0, 240) + "…" : text);
    li.dataset.role = String(m.role ?? "");
    msgs.append(li);
  }
  const table = document.createElement("table");
  table.className = "durations";
  for (const p of stats.processorDurations || []) {
    const row = table.insertRow();
    row.insertCell().textContent = p.name;
    row.insertCell().textContent = `${Number(p.durationMs).toFixed(3)} ms`;
  }
  box.append(head, msgs, table);
  return box;
}

async function main() {
  const id = conversationFromURL();
  $("conversation").value = id;
  $("open").addEventListener("submit", (e) => {
    e.preventDefault();
    location.search = `?c=${encodeURIComponent($("conversation").value)}`;
  });
  window.addEventListener("hashchange", () => location.reload());
  if (!id) return;
  try {
    const config = await (await fetch("config.json")).json();
    const url = websocketURL(config);
    setStatus("busy", `connecting to ${url}`);
    const options = { servers: url, name: "convstream-ui", maxReconnectAttempts: -1 };
    // Replies (KV reads, inference) come under the tenant's
    // own inbox prefix where tenants share a NATS account.
    if (config.inboxPrefix) options.inboxPrefix = config.inboxPrefix;
    const nc = await wsconnect(options);
    const conv = await openConversation(nc, id, { prefix: config.prefix, bucket: config.bucket, source: "urn:convstream:ui" });
    const viewer = new Viewer(conv);
    $("infer").addEventListener("click", () => viewer.infer());
    $("composer").addEventListener("submit", (e) => {
      e.preventDefault();
      viewer.send();
    });
    $("stop").addEventListener("click", () => viewer.stop());
    $("regenerate").addEventListener("click", () => viewer.regenerate());
    viewer.start();
    nc.closed().then((err) => setStatus("error", err ? `disconnected: ${err.message}` : "disconnected"));
    for await (const st of nc.status()) {
      if (st.type === "disconnect") setStatus("busy", "disconnected, reconnecting");
      else if (st.type === "reconnect") setStatus("live", "live");
    }
  } catch (err) {
    setStatus("error", err.message);
  }
}

main();
