// openConversation against a real worker (global-setup.ts), over TCP and
// WebSocket: snapshots equal the Go side's Parse for conformance
// conversations, a branch switch round-trips, deltas lost to an outage are
// made up from the bucket, rejections and inference come back typed.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NatsConnection } from "@nats-io/nats-core";
import { openConversation, RejectedError, InvalidArgumentError, type Conversation } from "../src/index.js";
import { Proxy, connectTo, corpus, hostPort, newId, parse, send, serverOf, settled, transports, until, type Case } from "./helpers.js";

// The viewer's browser test case (ui/browser_test.go): groups, tools,
// compare columns, a supervisor, tasks, and a message with two branches.
const BRANCH_CASE = "normal-s2-0019";

function cases(transport: string): Case[] {
  const ref = corpus("reference-suite");
  const normal = corpus("generated-normal");
  const noise = corpus("generated-noise");
  // Over TCP every reference case and a sample of the generated ones;
  // over WebSocket a sample of each (the wire below is the same).
  const step = transport === "tcp" ? 1 : 5;
  return [
    ...ref.filter((_, i) => i % step === 0),
    ...normal.filter((_, i) => i % (10 * step) === 0),
    ...noise.filter((_, i) => i % (10 * step) === 0),
  ];
}

describe.each(transports)("openConversation over %s", (transport) => {
  let nc: NatsConnection;
  beforeAll(async () => {
    nc = await connectTo(transport);
  });
  afterAll(async () => {
    await nc?.close();
  });

  it("follows conformance conversations to the flatList and contextTree Parse gives", async () => {
    const all = cases(transport);
    const want = parse(all.map((c) => c.input));
    const opened: Conversation[] = [];
    try {
      // Open before sending: the follower starts from nothing and builds
      // the flatList from deltas, the contextTree from the bucket.
      const convs = await Promise.all(all.map(() => openConversation(nc, newId("conf"))));
      opened.push(...convs);
      const problems: string[] = [];
      convs.forEach((c, i) => c.onError((e) => problems.push(`${all[i]!.name}: ${e.message}`)));
      const receipts = await Promise.all(convs.map((c, i) => send(c, all[i]!.input)));
      await Promise.all(convs.map((c, i) => c.applied(receipts[i]!, 30_000)));
      await Promise.all(convs.map((c) => settled(c)));
      expect(problems).toEqual([]);
      for (const [i, c] of convs.entries()) {
        expect(c.flatList, all[i]!.name).toEqual(want[i]!.flatList);
        expect(c.contextTree, all[i]!.name).toEqual(want[i]!.contextTree);
        expect(c.stats.gaps, all[i]!.name).toBe(0);
      }
      // A follower opened afterwards starts from the stored snapshot.
      const late = await openConversation(nc, convs[0]!.id);
      opened.push(late);
      expect(late.version).toBe(convs[0]!.version);
      expect(late.flatList).toEqual(want[0]!.flatList);
      expect(late.contextTree).toEqual(want[0]!.contextTree);
    } finally {
      for (const c of opened) c.close();
    }
  });

  it("round-trips a branch switch", async () => {
    const c = corpus("generated-normal").find((x) => x.name === BRANCH_CASE)!;
    const conv = await openConversation(nc, newId("branch"));
    try {
      await conv.applied(await send(conv, c.input));
      const entry = conv.flatList.find((e) => e["branch"]) as unknown as { parentId: string; branch: { activeBranchIndex: number; count: number } };
      expect(entry, "an entry with a branch switcher").toBeDefined();
      const next = (entry.branch.activeBranchIndex + 1) % entry.branch.count;
      const updates: number[] = [];
      const stop = conv.subscribe((s) => updates.push(s.version));
      const r = await conv.switchBranch(entry.parentId, next);
      await conv.applied(r);
      await settled(conv);
      stop();

      const input = structuredClone(c.input);
      const parent = input.messages.find((m) => m.id === entry.parentId)!;
      parent.metadata = { ...(parent.metadata ?? {}), activeBranchIndex: next };
      const [want] = parse([input]);
      expect(conv.flatList).toEqual(want!.flatList);
      expect(conv.contextTree).toEqual(want!.contextTree);
      const switched = conv.flatList.find((e) => e.parentId === entry.parentId && e["branch"]) as unknown as typeof entry;
      expect(switched.branch.activeBranchIndex).toBe(next);
      expect(updates.length).toBeGreaterThan(1);
    } finally {
      conv.close();
    }
  });

  it("makes up deltas lost to an outage from the bucket", async () => {
    const proxy = new Proxy(hostPort(serverOf(transport)));
    await proxy.listen();
    const viaProxy = transport === "tcp" ? `127.0.0.1:${proxy.port}` : `ws://127.0.0.1:${proxy.port}`;
    const flaky = await connectTo(transport, viaProxy, { reconnectTimeWait: 100, maxReconnectAttempts: -1, reconnectJitter: 0 });
    const id = newId("gap");
    const a = await openConversation(flaky, id);
    const b = await openConversation(nc, id);
    try {
      const input: Case["input"] = { messages: [] };
      const add = async (n: number) => {
        let last;
        for (let i = 0; i < n; i++) {
          const m = { id: `m${input.messages.length}`, role: i % 2 ? "assistant" : "user", content: `turn ${input.messages.length}`, parentId: input.messages.at(-1)?.id ?? null };
          input.messages.push(m);
          last = await b.append(m);
        }
        return last!;
      };
      await a.applied(await add(3));
      const before = { version: a.version, resyncs: a.stats.resyncs };

      proxy.cut();
      await b.applied(await add(4));
      await settled(b);
      expect(a.version, "no delta crosses the outage").toBe(before.version);

      proxy.restore();
      // One more event after the outage: its delta's base is a version the
      // follower never saw.
      const last = await add(1);
      await a.applied(last, 30_000);
      await b.applied(last);
      const [want] = parse([input]);
      expect(a.flatList).toEqual(want!.flatList);
      expect(a.version).toBe(b.version);
      expect(a.stats.resyncs).toBeGreaterThan(before.resyncs);
      console.log(`${transport} outage: follower stats ${JSON.stringify(a.stats)}`);
      await settled(a);
      expect(a.contextTree).toEqual(want!.contextTree);
    } finally {
      a.close();
      b.close();
      await flaky.close();
      await proxy.close();
    }
  });

  // TCP only: the proxy reads the plain NATS protocol, not WebSocket frames.
  if (transport === "tcp") it("resyncs after deltas lost on a link that stays up (a gap)", async () => {
    const proxy = new Proxy(hostPort(serverOf("tcp")), true);
    await proxy.listen();
    const lossy = await connectTo("tcp", `127.0.0.1:${proxy.port}`);
    const id = newId("lossy");
    const a = await openConversation(lossy, id);
    const b = await openConversation(nc, id);
    try {
      const input: Case["input"] = { messages: [] };
      const add = async (n: number) => {
        let last;
        for (let i = 0; i < n; i++) {
          const m = { id: `m${input.messages.length}`, role: i % 2 ? "assistant" : "user", content: `turn ${input.messages.length}`, parentId: input.messages.at(-1)?.id ?? null };
          input.messages.push(m);
          last = await b.append(m);
        }
        return last!;
      };
      await a.applied(await add(3));
      const before = { version: a.version, gaps: a.stats.gaps, reconnects: a.stats.reconnects };
      // Lose the deltas and the stored snapshots' writes (the key's
      // subject) of this conversation.
      const subject = a.client.subjects.snapshots(id);
      const key = `$KV.${a.client.bucket}.${id}`;
      const watch = (t: string[]) => t[1] === key;
      proxy.drop = (t) => t[1] === subject || watch(t);
      await b.applied(await add(4));
      await settled(b);
      expect(a.version, "the deltas were lost").toBe(before.version);
      // Deltas flow again; the key's writes stay lost, so only the read the gap
      // makes can catch up. The next delta's base is a version the
      // follower never saw.
      proxy.drop = watch;
      const last = await add(1);
      await a.applied(last, 30_000);
      proxy.drop = null;
      const [want] = parse([input]);
      expect(a.flatList).toEqual(want!.flatList);
      expect(a.version).toBe(b.version);
      expect(a.stats.gaps).toBeGreaterThan(before.gaps);
      expect(a.stats.reconnects).toBe(before.reconnects);
      expect(proxy.dropped).toBeGreaterThan(0);
      await settled(b);
      await a.resync(); // the tree of the last store, whose write was lost
      expect(a.contextTree).toEqual(want!.contextTree);
      console.log(`lossy link: dropped ${proxy.dropped} messages; follower stats ${JSON.stringify(a.stats)}`);
    } finally {
      a.close();
      b.close();
      await lossy.close();
      await proxy.close();
    }
  });

  it("reports rejections typed, to the event's waiter and to onError", async () => {
    const conv = await openConversation(nc, newId("reject"));
    try {
      const errors: unknown[] = [];
      conv.onError((e) => errors.push(e));
      await conv.applied(await conv.append({ id: "m1", role: "user", content: "hello", parentId: null }));
      const r = await conv.append({ id: "m1", role: "user", content: "something else", parentId: null });
      const err = await conv.applied(r).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RejectedError);
      expect((err as RejectedError).rejection.code).toBe("exists");
      expect((err as RejectedError).rejection.eventId).toBe(r.eventId);
      await until("onError", () => errors.length > 0);
      expect(errors[0]).toBeInstanceOf(RejectedError);

      // An identical append is taken into account without a change.
      const again = await conv.append({ id: "m1", role: "user", content: "hello", parentId: null });
      const s = await conv.applied(again);
      expect(s.sequence).toBeGreaterThanOrEqual(again.sequence);
      expect(s.flatList.map((e) => e.id)).toEqual(["m1"]);

      const missing = await conv.update("nope", { content: "x" });
      await expect(conv.applied(missing)).rejects.toMatchObject({ code: "rejected", rejection: { code: "not_found" } });
      expect(() => conv.switchBranch("m1", -1)).toThrow(InvalidArgumentError);
      await expect(openConversation(nc, "not a valid id")).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(openConversation(nc, "x", { prefix: "nobody.here" })).rejects.toMatchObject({ code: "unavailable" });
    } finally {
      conv.close();
    }
  });

  it("asks for the inference context", async () => {
    const conv = await openConversation(nc, newId("infer"));
    try {
      await conv.append({ id: "u1", role: "user", content: "hello", parentId: null });
      await conv.append({ id: "a1", role: "assistant", content: "hi", parentId: "u1" });
      const r = await conv.append({ id: "u2", role: "user", content: "again", parentId: "a1" });
      await conv.applied(r);
      const all = await conv.infer();
      expect(all.conversationId).toBe(conv.id);
      // The default pipeline adds a system message (the date) first.
      const chat = (ms: Record<string, unknown>[]) => ms.filter((m) => m["role"] !== "system").map((m) => m["content"]);
      expect(chat(all.messages)).toEqual(["hello", "hi", "again"]);
      expect(all.version).toBe(conv.version);
      const upTo = await conv.infer({ leafId: "a1" });
      expect(chat(upTo.messages)).toEqual(["hello", "hi"]);
      await expect(conv.infer({ leafId: "missing" })).rejects.toMatchObject({ code: "rejected", rejection: { code: "not_found" } });
    } finally {
      conv.close();
    }
  });

  it("ends its async iterator on close and yields the latest snapshot", async () => {
    const conv = await openConversation(nc, newId("iter"));
    const seen: number[] = [];
    const done = (async () => {
      for await (const s of conv) seen.push(s.flatList.length);
    })();
    const r1 = await conv.append({ id: "m1", role: "user", content: "a", parentId: null });
    await conv.applied(r1);
    await until("the iterator", () => seen.includes(1));
    const r2 = await conv.append({ id: "m2", role: "assistant", content: "b", parentId: "m1" });
    await conv.applied(r2);
    await until("the iterator", () => seen.includes(2));
    conv.close();
    await done;
    expect(seen.at(-1)).toBe(2);
  });
});
