// Snapshot state of one conversation. Events on P.snapshots.<id> are
// applied by type; today the worker publishes full snapshots
// (convstream.snapshot.updated.v1). A delta event type (data with version
// and baseVersion) is added by registering its handler with `on`: it gets
// the current snapshot and the event data, and returns the next snapshot,
// or null when it cannot apply it (a gap), which makes the view reload the
// snapshot from the bucket.

import { TYPES } from "./cloudevents.js";

export class SnapshotState {
  constructor() {
    this.snapshot = null;
    this.handlers = new Map();
    this.on(TYPES.snapshotUpdated, (_current, data) => data);
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
