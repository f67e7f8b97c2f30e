// @vitest-environment happy-dom
// useConversation in a React tree (happy-dom's document), against the real
// worker over TCP: it renders the snapshot as it changes and closes the
// conversation on unmount.

import { afterAll, beforeAll, expect, it } from "vitest";
import { act, createElement } from "react";
import { createRoot } from "react-dom/client";
import type { NatsConnection } from "@nats-io/nats-core";
import { useConversation, type UseConversation } from "../src/react.js";
import { connectTo, newId, until } from "./helpers.js";

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

let nc: NatsConnection;
beforeAll(async () => {
  nc = await connectTo("tcp");
});
afterAll(async () => {
  await nc?.close();
});

it("renders the conversation as it changes and closes it on unmount", async () => {
  let seen: Pick<UseConversation, "conversation" | "snapshot" | "error" | "isStreaming" | "status"> = {
    conversation: null,
    snapshot: null,
    error: null,
    isStreaming: false,
    status: "connecting",
  };
  const statuses: string[] = [];
  function Transcript({ id }: { id: string }) {
    seen = useConversation(nc, id);
    if (statuses[statuses.length - 1] !== seen.status) statuses.push(seen.status);
    const entries = seen.snapshot?.flatList ?? [];
    return createElement("ol", null, ...entries.map((e) => createElement("li", { key: e.id }, String(e["content"]))));
  }
  const host = document.createElement("div");
  document.body.append(host);
  const root = createRoot(host);
  const id = newId("react");
  await act(async () => root.render(createElement(Transcript, { id })));
  await until("the conversation open", () => seen.conversation !== null);
  expect(statuses).toEqual(["connecting", "live"]);
  const conv = seen.conversation!;
  await act(async () => {
    await conv.applied(await conv.append({ id: "u1", role: "user", content: "hello", parentId: null }));
    await conv.applied(await conv.append({ id: "a1", role: "assistant", content: "hi there", parentId: "u1" }));
  });
  await until("the rendered transcript", () => host.querySelectorAll("li").length === 2);
  expect([...host.querySelectorAll("li")].map((li) => li.textContent)).toEqual(["hello", "hi there"]);
  // A reply being written: isStreaming while chunks grow its text, not after its completion.
  await act(async () => {
    await conv.applied(await conv.append({ id: "u2", role: "user", content: "more", parentId: "a1" }));
    await conv.applied(await conv.append({ id: "a2", role: "assistant", content: "", parentId: "u2", streamStatus: "streaming" }));
    await conv.applied(await conv.client.sendChunk(id, { id: "a2", seq: 1, text: "one " }));
  });
  await until("the streaming reply", () => seen.isStreaming && host.querySelectorAll("li")[3]?.textContent === "one ");
  await act(async () => {
    await conv.applied(await conv.client.complete(id, { id: "a2", status: "done", content: "one two" }));
  });
  await until("the finished reply", () => !seen.isStreaming && host.querySelectorAll("li")[3]?.textContent === "one two");
  await act(async () => root.unmount());
  await expect(conv.applied({ eventId: "x", sequence: Number.MAX_SAFE_INTEGER, duplicate: false })).rejects.toMatchObject({ code: "closed" });
});
