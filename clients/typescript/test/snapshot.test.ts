// applyDelta alone: the rules of docs/events.md "Snapshots".

import { describe, expect, it } from "vitest";
import { applyDelta, fromStored, readableFormat, SNAPSHOT_FORMAT, type ConversationSnapshot } from "../src/index.js";

const m = (id: string) => ({ id, role: "user", content: id });
const base: ConversationSnapshot = fromStored({
  conversationId: "c",
  version: 7,
  sequence: 7,
  flatList: [m("a"), m("b"), m("c")],
  contextTree: [{ id: "a", type: "message" }],
});
const delta = (o: Partial<Parameters<typeof applyDelta>[1]>) => ({
  conversationId: "c", version: 9, baseVersion: 7, sequence: 9, from: 2, length: 3, flatList: [m("x")], ...o,
});

describe("applyDelta", () => {
  it("keeps the base up to from, then the entries carried, and the tree held", () => {
    const next = applyDelta(base, delta({}))!;
    expect(next.flatList.map((e) => e.id)).toEqual(["a", "b", "x"]);
    expect(next.version).toBe(9);
    expect(next.contextTree).toBe(base.contextTree);
    expect(next.treeVersion).toBe(7);
    expect(base.flatList.map((e) => e.id)).toEqual(["a", "b", "c"]);
  });
  it("refuses another base (a gap)", () => {
    expect(applyDelta(base, delta({ baseVersion: 8 }))).toBeNull();
    expect(applyDelta(null, delta({}))).toBeNull();
  });
  it("applies a delta from 0 to any base", () => {
    expect(applyDelta(null, delta({ from: 0, length: 1, baseVersion: 3 }))!.flatList.map((e) => e.id)).toEqual(["x"]);
  });
  it("keeps the end of the base after the entries carried", () => {
    const next = applyDelta(base, delta({ from: 1, keep: 1, length: 3, flatList: [m("y")] }))!;
    expect(next.flatList.map((e) => e.id)).toEqual(["a", "y", "c"]);
    expect(applyDelta(base, delta({ from: 0, keep: 2, length: 3, flatList: [m("z")] }))!.flatList.map((e) => e.id)).toEqual(["z", "b", "c"]);
    expect(applyDelta(null, delta({ from: 0, keep: 1, length: 2 }))).toBeNull();
    expect(applyDelta(base, delta({ from: 2, keep: 2, length: 5 }))).toBeNull();
  });
  it("refuses a malformed delta", () => {
    expect(applyDelta(base, delta({ length: 4 }))).toBeNull();
    expect(applyDelta(base, delta({ from: 5, length: 6 }))).toBeNull();
    expect(applyDelta(base, delta({ from: -1 }))).toBeNull();
  });
  it("deletes off the path: from = length, nothing carried", () => {
    expect(applyDelta(base, delta({ from: 2, length: 2, flatList: [] }))!.flatList.map((e) => e.id)).toEqual(["a", "b"]);
  });
  it("refuses a delta without entries that appends nothing", () => {
    expect(applyDelta(base, { version: 9, baseVersion: 7, length: 3 })).toBeNull();
  });
  it("applies a chunk's lean delta (version, baseVersion, length, append) to its base only", () => {
    const chunk = { version: 9, baseVersion: 7, length: 3, append: [{ i: 1, id: "b", f: "content" as const, t: "+more" }] };
    const next = applyDelta(base, chunk)!;
    expect(next.flatList.map((e) => e.content)).toEqual(["a", "b+more", "c"]);
    expect(next.flatList[0]).toBe(base.flatList[0]);
    expect([next.conversationId, next.version, next.sequence]).toEqual(["c", 9, 9]);
    expect(applyDelta(base, { ...chunk, baseVersion: 8 })).toBeNull();
    expect(applyDelta(base, { ...chunk, length: 4 })).toBeNull();
    expect(applyDelta(null, chunk)).toBeNull();
    expect(applyDelta(base, { ...chunk, append: [{ i: 1, id: "a", f: "content" as const, t: "x" }] })).toBeNull();
  });
});

describe("readableFormat", () => {
  const stored = { conversationId: "c", version: 7, sequence: 7, flatList: [], contextTree: [] };
  it("reads a snapshot without a format (format 1) and one of this client's format", () => {
    expect(readableFormat(stored)).toBe(true);
    expect(readableFormat({ ...stored, format: SNAPSHOT_FORMAT })).toBe(true);
  });
  it("refuses a newer format", () => {
    expect(readableFormat({ ...stored, format: SNAPSHOT_FORMAT + 1 })).toBe(false);
  });
});
