// openConversation under the ui role (streams.UIClientPermissions), where
// two tenants share a NATS account: the follower works without creating a
// consumer, and the ui user cannot create one, so it cannot have the
// server deliver onto the other tenant's subjects.

import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import type { NatsConnection } from "@nats-io/nats-core";
import { jetstreamManager } from "@nats-io/jetstream";
import { openConversation } from "../src/index.js";
import { connectTo, newId, settled, until } from "./helpers.js";
import { freePort, waitReady } from "./worker-process.js";

const users = {
  worker: { user: "acme-worker", pass: "acme-worker-pw" },
  ui: { user: "acme-ui", pass: "acme-ui-pw" },
  betaUI: { user: "beta-ui", pass: "beta-ui-pw" },
};

let child: ChildProcess | undefined;
let tmp = "";
let url = "";

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "convstream-roles-"));
  const tenants = join(tmp, "tenants.json");
  writeFileSync(
    tenants,
    JSON.stringify({
      tenants: [
        {
          prefix: "acme",
          account: "SHARED",
          inboxPrefix: "_INBOX_acme",
          users: [
            { user: users.worker.user, password: users.worker.pass, role: "worker" },
            { user: users.ui.user, password: users.ui.pass, role: "ui" },
          ],
        },
        { prefix: "beta", account: "SHARED", inboxPrefix: "_INBOX_beta", users: [{ user: users.betaUI.user, password: users.betaUI.pass, role: "ui" }] },
      ],
    }),
  );
  const [nats, http] = [await freePort(), await freePort()];
  url = `127.0.0.1:${nats}`;
  child = spawn(
    inject("worker").worker,
    [
      "--data-dir", join(tmp, "data"),
      "--listen", url,
      "--http", `127.0.0.1:${http}`,
      "--embedded-tenants", tenants,
      "--subject-prefix", "acme",
      "--nats-user", users.worker.user,
      "--log-level", "warn",
      "--log-format", "text",
    ],
    { stdio: ["ignore", "inherit", "inherit"], env: { ...process.env, CONVSTREAM_NATS_PASSWORD: users.worker.pass } },
  );
  await waitReady(`http://127.0.0.1:${http}/readyz`, child, Date.now() + 60_000);
}, 90_000);

afterAll(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((r) => child!.once("exit", r));
    child.kill("SIGTERM");
    await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
    if (child.exitCode === null) child.kill("SIGKILL");
  }
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

function login(who: { user: string; pass: string }, inboxPrefix: string): Promise<NatsConnection> {
  return connectTo("tcp", url, { user: who.user, pass: who.pass, inboxPrefix, maxReconnectAttempts: 0 });
}

it("follows a conversation as a ui user without a consumer, and may create none", async () => {
  const ui = await login(users.ui, "_INBOX_acme");
  const admin = await login(users.worker, "_INBOX_acme");
  const beta = await login(users.betaUI, "_INBOX_beta");
  const errors: string[] = [];
  void (async () => {
    for await (const s of ui.status()) if (s.type === "error") errors.push(String((s as { error?: unknown }).error));
  })();
  try {
    const id = newId("ui-role");
    const conv = await openConversation(ui, id, { prefix: "acme" });
    try {
      const m1 = await conv.append({ id: "m1", role: "user", content: "hello", parentId: null });
      await conv.applied(m1);
      await conv.applied(await conv.append({ id: "m2", role: "assistant", content: "hi", parentId: "m1" }));
      // The contextTree comes only with a stored snapshot, on the key's subject.
      await settled(conv, 30_000);
      expect(conv.flatList.map((m) => m.id)).toEqual(["m1", "m2"]);
      expect(conv.contextTree.length).toBeGreaterThan(0);
      const jsm = await jetstreamManager(admin);
      const info = await jsm.streams.info("KV_ACME_SNAPSHOTS");
      expect(info.state.consumer_count, "consumers on the snapshot bucket while a ui follows").toBe(0);
      expect(errors, "permission errors while following").toEqual([]);
    } finally {
      conv.close();
    }

    // A push consumer of the ui's own bucket aimed at the other tenant's
    // deltas: refused, and nothing reaches the other tenant.
    const received: string[] = [];
    const sub = beta.subscribe("beta.snapshots.>", {
      callback: (_, m) => {
        received.push(m.subject);
      },
    });
    await beta.flush();
    const create = ui
      .request(
        "$JS.API.CONSUMER.CREATE.KV_ACME_SNAPSHOTS",
        JSON.stringify({ stream_name: "KV_ACME_SNAPSHOTS", config: { deliver_subject: "beta.snapshots.victim", ack_policy: "none", deliver_policy: "all" } }),
        { timeout: 2_000 },
      )
      .then((m) => `answered: ${m.string()}`, (e: unknown) => `refused: ${String(e)}`);
    const outcome = await create;
    expect(outcome).toMatch(/^refused/);
    await until("the refusal reported", () => errors.some((e) => /permission/i.test(e)), 10_000);
    await new Promise((r) => setTimeout(r, 500));
    expect(received, "deliveries onto the other tenant's subjects").toEqual([]);
    const info = await (await jetstreamManager(admin)).streams.info("KV_ACME_SNAPSHOTS");
    expect(info.state.consumer_count).toBe(0);
    sub.unsubscribe();
  } finally {
    await ui.close();
    await admin.close();
    await beta.close();
  }
}, 120_000);
