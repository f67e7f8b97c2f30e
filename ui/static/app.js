// The viewer: connects to NATS over WebSocket, loads the snapshot of the
// conversation named by the URL (?c=ID or #ID) from the snapshot bucket,
// follows P.snapshots.<id>, and renders it. Branch switches are published
// as convstream.message.updated.v1 events; the view changes when the
// resulting snapshot arrives.

import { connect } from "./vendor/nats.js";
import { TYPES, decode, encode, newEvent } from "./cloudevents.js";
import { SnapshotState } from "./snapshots.js";
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
  constructor(nc, config, conversationId) {
    this.nc = nc;
    this.js = nc.jetstream();
    this.id = conversationId;
    this.subject = (kind) => `${config.prefix}.${kind}.${conversationId}`;
    this.bucket = config.bucket;
    this.state = new SnapshotState();
  }

  // start subscribes first, then reads the bucket, so no snapshot falls
  // between the two; older versions are dropped by the state.
  async start() {
    const sub = this.nc.subscribe(this.subject("snapshots"));
    this.kv = await this.js.views.kv(this.bucket, { bindOnly: true });
    await this.reload();
    this.watchStored();
    (async () => {
      for await (const msg of sub) {
        let ev;
        try {
          ev = decode(msg);
        } catch (err) {
          console.warn("snapshot subject: ", err);
          continue;
        }
        const outcome = this.state.apply(ev);
        if (outcome === "changed") this.render();
        else if (outcome === "gap") await this.reload();
      }
    })();
  }

  // watchStored follows the stored snapshot: deltas carry no contextTree,
  // so the tree panel takes it from each store (at most one per
  // --snapshot-interval); a store ahead of the deltas replaces the view.
  async watchStored() {
    const watch = await this.kv.watch({ key: this.id });
    for await (const entry of watch) {
      if (entry.operation !== "PUT") continue;
      let stored;
      try {
        stored = entry.json();
      } catch (err) {
        console.warn("stored snapshot: ", err);
        continue;
      }
      if (this.state.replace(stored)) {
        this.render();
      } else if (this.state.updateTree(stored)) {
        this.renderTree();
      }
    }
  }

  async reload() {
    const entry = await this.kv.get(this.id);
    if (!entry || entry.operation !== "PUT") {
      setStatus("empty", `no snapshot of ${this.id} yet`);
      return;
    }
    if (this.state.replace(entry.json())) this.render();
  }

  render() {
    const s = this.state.snapshot;
    $("empty").hidden = true;
    $("infer").disabled = false;
    const list = $("transcript");
    renderFlatList(list, s.flatList || [], (entry, index) => this.switchBranch(entry, index));
    list.dataset.version = String(s.version);
    this.renderTree();
    $("version").textContent = `${this.id} · version ${s.version} · sequence ${s.sequence}`;
    setStatus("live", "live");
  }

  // renderTree shows the contextTree held; its data-version is the version
  // of the stored snapshot it came from.
  renderTree() {
    const tree = $("tree");
    renderTree(tree, this.state.snapshot.contextTree || []);
    tree.dataset.version = String(this.state.treeVersion || 0);
  }

  // switchBranch sets metadata.activeBranchIndex on the branch's parent.
  async switchBranch(entry, index) {
    const ev = newEvent(TYPES.messageUpdated, this.id,
      { id: entry.parentId, metadata: { activeBranchIndex: index } });
    const { payload, headers } = encode(ev);
    try {
      setStatus("busy", `switching ${entry.parentId} to branch ${index + 1}`);
      await this.js.publish(this.subject("events"), payload, { msgID: ev.id, headers });
    } catch (err) {
      setStatus("error", `branch switch failed: ${err.message}`);
    }
  }

  // infer asks the worker what the default pipeline would send to a model
  // for the active path.
  async infer() {
    const out = $("inference");
    out.textContent = "…";
    out.dataset.state = "busy";
    const ev = newEvent(TYPES.inferenceRequested, this.id, { conversationId: this.id, pipeline: "default" });
    const { payload, headers } = encode(ev);
    try {
      const reply = decode(await this.nc.request(this.subject("inference"), payload, { timeout: 10000, headers }));
      out.replaceChildren(inferenceView(reply));
      out.dataset.state = reply.type === TYPES.inferenceContext ? "done" : "error";
    } catch (err) {
      out.textContent = `inference request failed: ${err.message}`;
      out.dataset.state = "error";
    }
  }
}

function inferenceView(reply) {
  const box = document.createElement("div");
  const d = reply.data || {};
  if (reply.type !== TYPES.inferenceContext) {
    box.className = "error";
    box.textContent = `${reply.type}: ${d.message || d.reason || JSON.stringify(d)}`;
    return box;
  }
  const stats = d.stats || {};
  const head = document.createElement("p");
  head.textContent = `${(d.messages || []).length} messages · version ${d.version} · ${Number(stats.totalDurationMs || 0).toFixed(2)} ms`;
  const msgs = document.createElement("ol");
  msgs.className = "ctx-messages";
  for (const m of d.messages || []) {
    const li = document.createElement("li");
    const role = document.createElement("b");
    role.textContent = m.role;
    const text = typeof m.content === "string" ? m.content : JSON.stringify(m.content);
    li.append(role, " ", text.length > 240 ? text.slice(0, 240) + "…" : text);
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
    const options = { servers: url, name: "convstream-ui" };
    // Replies (KV reads, the watch, inference) come under the tenant's
    // own inbox prefix where tenants share a NATS account.
    if (config.inboxPrefix) options.inboxPrefix = config.inboxPrefix;
    const nc = await connect(options);
    const viewer = new Viewer(nc, config, id);
    $("infer").addEventListener("click", () => viewer.infer());
    await viewer.start();
    nc.closed().then((err) => setStatus("error", err ? `disconnected: ${err.message}` : "disconnected"));
  } catch (err) {
    setStatus("error", err.message);
  }
}

main();
