// Snapshot state of one conversation. Events on P.snapshots.<id> are
// applied by type: the worker publishes deltas
// (convstream.snapshot.delta.v1, applyDelta below) and stores full
// snapshots (convstream.snapshot.updated.v1) in the bucket. A handler
// registered with `on` gets the current snapshot and the event data, and
// returns the next snapshot, or null when it cannot apply it (a gap), which
// makes the view reload the snapshot from the bucket.

import { TYPES } from "./cloudevents.js";

export class SnapshotState {
  constructor() {
    this.snapshot = null;
    this.handlers = new Map();
    this.on(TYPES.snapshotUpdated, (_current, data) => data);
    this.on(TYPES.snapshotDelta, applyDelta);
  }

  // on registers the handler of an event type: (current, data) → next | null.
  on(type, handler) {
    this.handlers.set(type, handler);
  }

  get version() {
    return this.snapshot ? this.snapshot.version : 0;
  }

  // replace sets a full snapshot (from the bucket) unless it is older
  // than the one held; it returns whether the state changed.
  replace(snapshot) {
    if (!snapshot || snapshot.version <= this.version) return false;
    this.snapshot = snapshot;
    this.treeVersion = snapshot.version;
    return true;
  }

  // updateTree takes the contextTree of a stored snapshot that is not newer
  // than the one held (deltas moved the flat list on since) unless the tree
  // held is already from a later store; it returns whether it changed.
  updateTree(stored) {
    if (!this.snapshot || !stored || !Array.isArray(stored.contextTree)) return false;
    if ((stored.version || 0) <= (this.treeVersion || 0)) return false;
    this.snapshot = { ...this.snapshot, contextTree: stored.contextTree };
    this.treeVersion = stored.version;
    return true;
  }

  // apply applies one event: "changed", "stale" (not newer), "ignored"
  // (a type without handler) or "gap" (the handler could not apply it).
  apply(ev) {
    const handler = this.handlers.get(ev.type);
    if (!handler) return "ignored";
    const data = ev.data || {};
    if (typeof data.version === "number" && data.version <= this.version) return "stale";
    const next = handler(this.snapshot, data);
    if (!next) return "gap";
    this.snapshot = next;
    return "changed";
  }
}

// applyDelta applies a snapshot delta (docs/events.md): the flatList of
// baseVersion kept up to `from`, then the entries carried; a delta from 0
// carries the whole list and applies to any base. Deltas carry no
// contextTree: the one held is kept until the next reload from the bucket.
export function applyDelta(current, d) {
  if (!Array.isArray(d.flatList) || !Number.isInteger(d.from) || d.from < 0) return null;
  if (d.from > 0 && (!current || current.version !== d.baseVersion)) return null;
  const base = (current && current.flatList) || [];
  if (d.from > base.length || d.from + d.flatList.length !== d.length) return null;
  return {
    ...(current || { contextTree: [] }),
    conversationId: d.conversationId,
    version: d.version,
    sequence: d.sequence,
    flatList: base.slice(0, d.from).concat(d.flatList),
  };
}
