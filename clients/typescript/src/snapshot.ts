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
  const keep = d.keep ?? 0;
  if (!Array.isArray(d.flatList) || !Number.isInteger(d.from) || d.from < 0 || !Number.isInteger(keep) || keep < 0) return null;
  if ((d.from > 0 || keep > 0) && (!current || current.version !== d.baseVersion)) return null;
  const base = current?.flatList ?? [];
  if (d.from + keep > base.length || d.from + d.flatList.length + keep !== d.length) return null;
  let flatList: Message[];
  if (d.from === 0 && keep === 0) {
    flatList = d.flatList;
  } else {
    flatList = base.slice(0, d.from);
    for (const e of d.flatList) flatList.push(e);
    for (const e of base.slice(base.length - keep)) flatList.push(e);
  }
  return {
    conversationId: d.conversationId,
    version: d.version,
    sequence: d.sequence,
    flatList,
    contextTree: current?.contextTree ?? [],
    treeVersion: current?.treeVersion ?? 0,
  };
}
