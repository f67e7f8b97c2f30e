// applyDelta alone: the rules of docs/events.md "Snapshots".

import { describe, expect, it } from "vitest";
import { applyDelta, fromStored, type ConversationSnapshot } from "../src/index.js";

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
});
