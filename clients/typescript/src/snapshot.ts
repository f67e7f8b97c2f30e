// The snapshot of a conversation as a client holds it, and the pure
// application of a delta (docs/events.md, "Snapshots"). ui/static's viewer
// and the Go follower (streams.View.Apply) do the same.

import type { SnapshotDeltaV1 } from "./generated/convstream.snapshot.delta.v1.js";
import type { SnapshotUpdatedV1 } from "./generated/convstream.snapshot.updated.v1.js";
import type { ContextNode, Message } from "./generated/defs.js";

/**
 * ConversationSnapshot is what a client shows: the flatList of `version`
 * and the contextTree of the last stored snapshot (`treeVersion`; deltas
 * carry no tree, so it may be older than the flatList).
 */
export interface ConversationSnapshot {
  readonly conversationId: string;
  readonly version: number;
  readonly sequence: number;
  readonly flatList: readonly Message[];
  readonly contextTree: readonly ContextNode[];
  readonly treeVersion: number;
}

/**
 * SNAPSHOT_FORMAT is the newest form of a stored snapshot this client reads
 * (its `format` field; absent is 1). A snapshot of a newer format, written
 * by a later release of the worker, is not read rather than misread
 * (docs/events.md, "Versions").
 */
export const SNAPSHOT_FORMAT = 1;

/** readableFormat says whether this client reads the stored snapshot's format. */
export function readableFormat(s: SnapshotUpdatedV1): boolean {
  const f = s.format ?? 1;
  return Number.isInteger(f) && f >= 0 && f <= SNAPSHOT_FORMAT;
}

/** fromStored returns the snapshot of a stored value (convstream.snapshot.updated.v1). */
export function fromStored(s: SnapshotUpdatedV1): ConversationSnapshot {
  return {
    conversationId: s.conversationId,
    version: s.version,
    sequence: s.sequence,
    flatList: s.flatList,
    contextTree: s.contextTree,
    treeVersion: s.version,
  };
}

/**
 * applyDelta returns the snapshot a delta leads to, or null when it does
 * not apply to `current` (a gap: its base is another version) or is
 * malformed. The flatList of baseVersion is kept up to `from`, then the
 * entries carried follow, then the last `keep` entries of the base; a delta
 * from 0 without `keep` applies to any base. The contextTree held is kept.
 */
export function applyDelta(current: ConversationSnapshot | null, d: SnapshotDeltaV1): ConversationSnapshot | null {
  if (Array.isArray(d.append) && d.append.length > 0) return applyAppend(current, d);
  const keep = d.keep ?? 0;
  const { from, flatList: carried, conversationId, sequence } = d;
  if (!Array.isArray(carried) || typeof from !== "number" || !Number.isInteger(from) || from < 0 || !Number.isInteger(keep) || keep < 0) return null;
  if (typeof conversationId !== "string" || typeof sequence !== "number") return null;
  if ((from > 0 || keep > 0) && (!current || current.version !== d.baseVersion)) return null;
  const base = current?.flatList ?? [];
  if (from + keep > base.length || from + carried.length + keep !== d.length) return null;
  let flatList: Message[];
  if (from === 0 && keep === 0) {
    flatList = carried;
  } else {
    flatList = base.slice(0, from);
    for (const e of carried) flatList.push(e);
    for (const e of base.slice(base.length - keep)) flatList.push(e);
  }
  return {
    conversationId,
    version: d.version,
    sequence,
    flatList,
    contextTree: current?.contextTree ?? [],
    treeVersion: current?.treeVersion ?? 0,
  };
}

/**
 * applyAppend applies the delta of a reply's chunk: its texts added at the
 * end of the content (or reasoning.content) of the entries it names. Only
 * those entries are copied: a chunk costs its text, not the list. Such a
 * delta carries no conversationId, sequence, from or flatList: it applies
 * to its baseVersion only, and its sequence is its version.
 */
function applyAppend(current: ConversationSnapshot | null, d: SnapshotDeltaV1): ConversationSnapshot | null {
  if (!current || current.version !== d.baseVersion || d.length !== current.flatList.length) return null;
  const flatList = current.flatList.slice();
  for (const a of d.append ?? []) {
    const e = flatList[a.i];
    if (!e || e.id !== a.id || typeof a.t !== "string") return null;
    if (a.f === "content") {
      flatList[a.i] = { ...e, content: (typeof e["content"] === "string" ? e["content"] : "") + a.t };
    } else if (a.f === "reasoning") {
      const r = e["reasoning"] && typeof e["reasoning"] === "object" ? (e["reasoning"] as Record<string, unknown>) : {};
      const prev = typeof r["content"] === "string" ? r["content"] : "";
      flatList[a.i] = { ...e, reasoning: { ...r, content: prev + a.t } };
    } else {
      return null;
    }
  }
  return { ...current, version: d.version, sequence: d.sequence ?? d.version, flatList };
}

/** The state of a message as a reply: "done" for an ordinary message. */
export type MessageState = "streaming" | "done" | "stopped" | "interrupted" | "error";

/** messageState says whether a message is being written, or how its writing ended. */
export function messageState(m: Message): MessageState {
  const s = m.streamStatus;
  return s === "streaming" || s === "stopped" || s === "interrupted" || s === "error" ? s : "done";
}

/** streamingMessage returns the flatList's message being written, if any (the last one). */
export function streamingMessage(flatList: readonly Message[]): Message | undefined {
  for (let i = flatList.length - 1; i >= 0; i--) {
    if (flatList[i]!.streamStatus === "streaming") return flatList[i];
  }
  return undefined;
}
