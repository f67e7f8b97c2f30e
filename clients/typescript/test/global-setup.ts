// globalSetup builds the worker and convctl from the repository (the Go
// side under test) and starts one worker with an embedded NATS server on
// free loopback ports, TCP and WebSocket, in a fresh data directory. The
// tests reach it through inject("worker").

import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { TestProject } from "vitest/node";
import { freePort, waitReady } from "./worker-process.js";

export interface WorkerInfo {
  natsUrl: string;
  wsUrl: string;
  httpUrl: string;
  convctl: string;
  /** worker is the worker binary, for tests that start one of their own. */
  worker: string;
}

declare module "vitest" {
  export interface ProvidedContext {
    worker: WorkerInfo;
  }
}

const repo = resolve(import.meta.dirname, "..", "..", "..");

let child: ChildProcess | undefined;
let tmp: string | undefined;

export async function setup(project: TestProject): Promise<void> {
  tmp = mkdtempSync(join(tmpdir(), "convstream-ts-"));
  const worker = join(tmp, "worker");
  const convctl = join(tmp, "convctl");
  // go build caches: a second run costs little.
  execFileSync("go", ["build", "-o", worker, "./cmd/worker"], { cwd: repo, stdio: "inherit" });
  execFileSync("go", ["build", "-o", convctl, "./cmd/convctl"], { cwd: repo, stdio: "inherit" });
  const [nats, ws, http] = [await freePort(), await freePort(), await freePort()];
  child = spawn(
    worker,
    [
      "--data-dir", join(tmp, "data"),
      "--listen", `127.0.0.1:${nats}`,
      "--websocket", `127.0.0.1:${ws}`,
      "--http", `127.0.0.1:${http}`,
      "--log-level", "warn",
      // The live test starts its screens between a reply's start and its first
      // chunk, which on a loaded machine can take longer than the default.
      "--reply-idle-timeout", "2m",
      "--log-format", "text",
    ],
    { stdio: ["ignore", "inherit", "inherit"] },
  );
  await waitReady(`http://127.0.0.1:${http}/readyz`, child, Date.now() + 60_000);
  project.provide("worker", {
    natsUrl: `127.0.0.1:${nats}`,
    wsUrl: `ws://127.0.0.1:${ws}`,
    httpUrl: `http://127.0.0.1:${http}`,
    convctl,
    worker,
  });
}

export async function teardown(): Promise<void> {
  if (child && child.exitCode === null) {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const exited = new Promise((r) => child!.once("exit", r));
    child.kill("SIGTERM");
    await Promise.race([exited, new Promise((r) => (timer = setTimeout(r, 15_000)))]);
    clearTimeout(timer);
    if (child.exitCode === null) child.kill("SIGKILL");
  }
  if (tmp) rmSync(tmp, { recursive: true, force: true });
}
