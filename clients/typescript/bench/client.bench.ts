// What following a long conversation costs the client in Node: applying a
// delta to the snapshot of a 1,716-message conversation (its flatList is
// the active path: 27 entries), and a resync (the stored snapshot read
// from the bucket and decoded). Against the worker global-setup.ts starts;
// `npm run bench`. The conversation is shared/bench/conversation-1716.jsonl
// (CONVSTREAM_BENCH_FILE overrides it).

import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { afterAll, bench, describe } from "vitest";
import type { NatsConnection } from "@nats-io/nats-core";
import { Kvm, type KV } from "@nats-io/kv";
import { applyDelta, fromStored, openConversation, type Conversation, type ConversationSnapshot, type SnapshotDeltaV1, type SnapshotUpdatedV1 } from "../src/index.js";
import { connectTo, newId, send, settled, type Case } from "../test/helpers.js";

const file = process.env["CONVSTREAM_BENCH_FILE"] ?? resolve(import.meta.dirname, "..", "..", "..", "..", "shared", "bench", "conversation-1716.jsonl");

let nc: NatsConnection;
let conv: Conversation;
let kv: KV;
let snap: ConversationSnapshot;
let stored: Uint8Array;
let append: SnapshotDeltaV1;
let middle: SnapshotDeltaV1;
let label = "";

const setup = async () => {
  if (conv) return;
  const c = JSON.parse(readFileSync(file, "utf8").split("\n")[0]!) as Case;
  nc = await connectTo("tcp");
  conv = await openConversation(nc, newId("bench"));
  await conv.applied(await send(conv, c.input), 120_000);
  await settled(conv, 60_000);
  snap = conv.snapshot!;
  kv = await new Kvm(nc).open(conv.client.bucket);
  stored = (await kv.get(conv.id))!.value;
  const n = snap.flatList.length;
  const entry = { id: "bench-new", role: "user", content: "one more turn", parentId: snap.flatList[n - 1]!.id };
  append = { conversationId: conv.id, version: snap.version + 1, baseVersion: snap.version, sequence: snap.sequence + 1, from: n, length: n + 1, flatList: [entry] };
  const half = Math.floor(n / 2);
  middle = { ...append, from: half, length: n, flatList: snap.flatList.slice(half) as SnapshotDeltaV1["flatList"] };
  label = `${c.name}: ${c.input.messages.length} messages`;
  console.log(`${label}, flatList ${n} entries, stored snapshot ${stored.length} bytes`);
};

// Top-level: vitest bench does not wait for beforeAll before it measures.
await setup();

describe(label, () => {
  afterAll(async () => {
    conv?.close();
    await nc?.close();
  });

  bench(`applyDelta: an append (1 entry carried onto ${snap.flatList.length})`, () => {
    if (!applyDelta(snap, append)) throw new Error("delta refused");
  });

  bench(`applyDelta: a branch switch half way (${middle.flatList?.length ?? 0} of ${snap.flatList.length} entries carried)`, () => {
    if (!applyDelta(snap, middle)) throw new Error("delta refused");
  });

  bench(`resync, decode only: the stored snapshot (${stored.length} bytes of JSON) to a snapshot`, () => {
    fromStored(JSON.parse(new TextDecoder().decode(stored)) as SnapshotUpdatedV1);
  });

  bench("resync: KV get over TCP + decode (what a gap costs)", async () => {
    const e = await kv.get(conv.id);
    fromStored(e!.json<SnapshotUpdatedV1>());
  });
});
