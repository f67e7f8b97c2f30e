// Live replies against the real worker: a 4,000-token reply written in
// 1,000 chunks reaches every screen (TypeScript ones from the start, joined
// at chunk 500, closed at chunk 600 and opened again at chunk 700; a Go one,
// convctl watch, the Go client's Follow, from the start) with no gap or
// duplicate, and each ends on the same final text.

import { spawn } from "node:child_process";
import { afterAll, beforeAll, expect, inject, it, onTestFinished } from "vitest";
import type { NatsConnection } from "@nats-io/nats-core";
import { Client, applyDelta, messageState, openConversation, type Conversation, type ConversationSnapshot } from "../src/index.js";
import { connectTo, newId, until } from "./helpers.js";

let nc: NatsConnection;
beforeAll(async () => {
  nc = await connectTo("tcp");
});
afterAll(async () => {
  await nc?.close();
});

const chunkText = (i: number) => `w${i} x${i} y${i} z${i} `;

// screen records the texts a conversation's message "a1" showed.
function screen(conv: Conversation): { texts: string[]; states: string[] } {
  const s = { texts: [] as string[], states: [] as string[] };
  conv.subscribe((snap: ConversationSnapshot) => {
    const m = snap.flatList.find((e) => e.id === "a1");
    if (m) {
      s.texts.push(String(m["content"] ?? ""));
      s.states.push(messageState(m));
    }
  });
  return s;
}

function checkGrowth(name: string, texts: string[], final: string): void {
  let prev = "";
  for (const [i, t] of texts.entries()) {
    if (!final.startsWith(t)) throw new Error(`${name}: text ${i} (${t.length} bytes) does not begin the final text`);
    if (!t.startsWith(prev)) throw new Error(`${name}: text ${i} shrank from ${prev.length} to ${t.length}`);
    prev = t;
  }
  expect(prev, name).toBe(final);
}

it("streams a 1,000-chunk reply to every screen with no gap or duplicate", async () => {
  const id = newId("live");
  const client = new Client(nc);
  await client.append(id, { id: "u1", role: "user", content: "a long story", parentId: null });
  const first = await openConversation(nc, id);
  await first.applied(await client.append(id, { id: "a1", role: "assistant", content: "", parentId: "u1", streamStatus: "streaming" }));
  expect(first.isStreaming).toBe(true);
  const a = screen(first);
  // The Go screen: convctl watch --flat prints the flatList after each delta.
  const goTexts: string[] = [];
  const goStates: string[] = [];
  const watch = spawn(inject("worker").convctl, ["watch", "--flat", "--nats-url", `nats://${inject("worker").natsUrl}`, id]);
  onTestFinished(() => {
    watch.kill(); // also when the test fails: a watch left running outlives the suite
  });
  let pendingLine = "";
  watch.stdout.on("data", (buf: Buffer) => {
    const lines = (pendingLine + buf.toString("utf8")).split("\n");
    pendingLine = lines.pop() ?? "";
    for (const l of lines) {
      if (!l.trim()) continue;
      const v = JSON.parse(l) as { flatList: { id: string; content?: string; streamStatus?: string }[] };
      const m = v.flatList.find((e) => e.id === "a1");
      if (m) {
        goTexts.push(m.content ?? "");
        goStates.push(m.streamStatus ?? "done");
      }
    }
  });
  await until("the Go screen", () => goTexts.length > 0);
  let reconnecting: Conversation | null = await openConversation(nc, id);
  const c1 = screen(reconnecting);
  let joined: Conversation | null = null;
  let reconnected: Conversation | null = null;
  let b: ReturnType<typeof screen> | null = null;
  let c2: ReturnType<typeof screen> | null = null;
  let final = "";
  for (let i = 1; i <= 1000; i++) {
    if (i === 500) {
      joined = await openConversation(nc, id);
      b = screen(joined);
    } else if (i === 600) {
      reconnecting!.close();
      reconnecting = null;
    } else if (i === 700) {
      reconnected = await openConversation(nc, id);
      c2 = screen(reconnected);
    }
    final += chunkText(i);
    await client.sendChunk(id, { id: "a1", seq: i, text: chunkText(i) });
  }
  const done = await client.complete(id, { id: "a1", status: "done", content: final, finishReason: "stop" });
  for (const conv of [first, joined!, reconnected!]) await conv.applied(done, 60_000);
  for (const [name, s] of [["first", a], ["joined", b!], ["reconnected", c2!]] as const) {
    await until(`${name} done`, () => s.states[s.states.length - 1] === "done");
    checkGrowth(name, s.texts, final);
    expect(s.texts.length, name).toBeGreaterThan(3);
  }
  await until("the Go screen done", () => goStates[goStates.length - 1] === "done", 60_000);
  watch.kill();
  checkGrowth("Go (convctl watch)", goTexts, final);
  expect(goTexts.length).toBeGreaterThan(3);
  checkGrowth("before reconnecting", c1.texts, c1.texts[c1.texts.length - 1] ?? "");
  expect(final.startsWith(c1.texts[c1.texts.length - 1] ?? "")).toBe(true);
  expect(first.isStreaming).toBe(false);
  for (const conv of [first, joined!, reconnected!]) conv.close();
}, 120_000);

it("applies an append delta only to its base version and entry", () => {
  const base: ConversationSnapshot = {
    conversationId: "c",
    version: 4,
    sequence: 4,
    flatList: [{ id: "u1", content: "hi" }, { id: "a1", content: "he", streamStatus: "streaming" }],
    contextTree: [],
    treeVersion: 4,
  };
  const d = { conversationId: "c", version: 5, baseVersion: 4, sequence: 5, from: 2, length: 2, flatList: [], append: [{ i: 1, id: "a1", f: "content" as const, t: "llo" }] };
  const next = applyDelta(base, d)!;
  expect(next.flatList[1]!["content"]).toBe("hello");
  expect(next.flatList[0]).toBe(base.flatList[0]);
  expect(applyDelta(next, d)).toBeNull(); // a duplicate: its base is gone
  expect(applyDelta(base, { ...d, append: [{ i: 0, id: "a1", f: "content" as const, t: "x" }] })).toBeNull();
  const r = applyDelta(base, { ...d, append: [{ i: 1, id: "a1", f: "reasoning" as const, t: "think" }] })!;
  expect((r.flatList[1]!["reasoning"] as { content: string }).content).toBe("think");
});
