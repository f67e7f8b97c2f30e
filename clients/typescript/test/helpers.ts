// Test helpers: connections to the worker started by global-setup.ts over
// TCP or WebSocket, the conformance corpus, and convctl parse (the Go
// side's Parse) for expected snapshots.

import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer, connect as tcpConnect, type Server, type Socket } from "node:net";
import { join, resolve } from "node:path";
import { gunzipSync } from "node:zlib";
import { inject } from "vitest";
import WebSocket from "ws";
import { wsconnect, type NatsConnection, type ConnectionOptions } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import type { Conversation, Receipt, Message, MessageGroup, ContextNode } from "../src/index.js";

// Node 20 has no global WebSocket; nats-core's wsconnect uses the global.
if (typeof (globalThis as { WebSocket?: unknown }).WebSocket === "undefined") {
  (globalThis as { WebSocket?: unknown }).WebSocket = WebSocket;
}

export type Transport = "tcp" | "ws";
export const transports: Transport[] = ["tcp", "ws"];

/** serverOf returns host:port (TCP) or the ws:// URL of the worker's server. */
export function serverOf(transport: Transport): string {
  const w = inject("worker");
  return transport === "tcp" ? w.natsUrl : w.wsUrl;
}

export function connectTo(transport: Transport, server = serverOf(transport), opts: Partial<ConnectionOptions> = {}): Promise<NatsConnection> {
  const o = { servers: server, name: `convstream-client-test-${transport}`, ...opts };
  return transport === "tcp" ? connect(o) : wsconnect(o);
}

let seq = 0;
/** newId returns a conversation id of its own for each test. */
export function newId(prefix: string): string {
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${seq++}`;
}

export interface Case {
  name: string;
  input: { messages: Message[]; messageGroups?: MessageGroup[] };
}

const corpusDir = resolve(import.meta.dirname, "..", "..", "..", "conversation", "testdata", "conformance");

/** corpus returns the cases of one conformance file (e.g. "reference-suite"). */
export function corpus(file: string): Case[] {
  const text = gunzipSync(readFileSync(join(corpusDir, `${file}.jsonl.gz`))).toString("utf8");
  return text
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => {
      const c = JSON.parse(l);
      return { name: c.name, input: c.input };
    });
}

export interface Parsed {
  flatList: Message[];
  contextTree: ContextNode[];
}

/** parse runs convctl parse (conversation.Parse) over inputs, in one process. */
export function parse(inputs: Case["input"][]): Parsed[] {
  const lines = inputs.map((input, i) => JSON.stringify({ name: String(i), input })).join("\n") + "\n";
  const out = execFileSync(inject("worker").convctl, ["parse", "--jsonl"], { input: lines, maxBuffer: 1 << 28 });
  return out
    .toString("utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => {
      const r = JSON.parse(l);
      if (r.error) throw new Error(`convctl parse ${r.name}: ${r.error}`);
      return { flatList: r.output.flatList, contextTree: r.output.contextTree };
    });
}

/** send publishes a conversation as convctl send --all does: groups, then messages. */
export async function send(conv: Conversation, input: Case["input"]): Promise<Receipt> {
  let last: Receipt | undefined;
  for (const g of input.messageGroups ?? []) last = await conv.upsertGroup(g);
  for (const m of input.messages) last = await conv.append(m);
  if (!last) throw new Error("empty conversation");
  return last;
}

/** until polls cond every 20 ms until it holds, or throws after timeout ms. */
export async function until(what: string, cond: () => boolean, timeout = 20_000): Promise<void> {
  const end = Date.now() + timeout;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** settled waits until the conversation's contextTree is from its flatList's version (the bucket caught up). */
export function settled(conv: Conversation, timeout = 20_000): Promise<void> {
  return until(`${conv.id} stored at version ${conv.version}`, () => conv.snapshot !== null && conv.snapshot.treeVersion === conv.version, timeout);
}

/**
 * Proxy forwards TCP connections to a port; cut() drops every connection
 * and refuses new ones until restore(): a network outage for the clients
 * behind it, with the server and the worker untouched. With `lossy`, it
 * reads the NATS protocol the server sends (TCP only) and, while `drop`
 * is set, drops the messages (MSG, HMSG) whose control line it matches:
 * a link that loses some messages while the connection stays up.
 */
export class Proxy {
  private server: Server;
  private sockets = new Set<Socket>();
  private down = false;
  port = 0;
  drop: ((controlLine: string[]) => boolean) | null = null;
  dropped = 0;

  constructor(private target: { host: string; port: number }, lossy = false) {
    this.server = createServer((client) => {
      if (this.down) {
        client.destroy();
        return;
      }
      const upstream = tcpConnect(this.target.port, this.target.host);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on("close", () => this.sockets.delete(s));
        s.on("error", () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream);
      if (lossy) this.filter(upstream, client);
      else upstream.pipe(client);
    });
  }

  // filter forwards the server's protocol frame by frame, leaving out the
  // messages drop matches.
  private filter(from: Socket, to: Socket): void {
    let buf = Buffer.alloc(0);
    from.on("data", (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      const out: Buffer[] = [];
      for (;;) {
        const eol = buf.indexOf("\r\n");
        if (eol < 0) break;
        const line = buf.subarray(0, eol).toString("latin1");
        const tokens = line.split(" ");
        let size = eol + 2;
        if (tokens[0] === "MSG" || tokens[0] === "HMSG") {
          size += Number(tokens[tokens.length - 1]) + 2;
          if (buf.length < size) break;
          if (this.drop?.(tokens)) {
            this.dropped++;
            buf = buf.subarray(size);
            continue;
          }
        }
        out.push(buf.subarray(0, size));
        buf = buf.subarray(size);
      }
      if (out.length) to.write(Buffer.concat(out));
    });
    from.on("end", () => to.end());
  }

  listen(): Promise<void> {
    return new Promise((ok) =>
      this.server.listen(0, "127.0.0.1", () => {
        const a = this.server.address();
        this.port = typeof a === "object" && a ? a.port : 0;
        ok();
      }),
    );
  }

  cut(): void {
    this.down = true;
    for (const s of this.sockets) s.destroy();
  }

  restore(): void {
    this.down = false;
  }

  close(): Promise<void> {
    this.cut();
    return new Promise((ok) => this.server.close(() => ok()));
  }
}

/** hostPort splits "127.0.0.1:4222" or "ws://127.0.0.1:4223". */
export function hostPort(server: string): { host: string; port: number } {
  const u = new URL(server.includes("://") ? server : `nats://${server}`);
  return { host: u.hostname, port: Number(u.port) };
}
