// Starting a worker process for a test: free loopback ports, and waiting
// until it is ready (global-setup.ts, roles.test.ts).

import type { ChildProcess } from "node:child_process";
import { createServer } from "node:net";

/** freePort returns a loopback TCP port that was free when asked. */
export function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once("error", fail);
    s.listen(0, "127.0.0.1", () => {
      const addr = s.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      s.close(() => ok(port));
    });
  });
}

/** waitReady waits until url answers 200 (the worker's /readyz); it fails when child exits first or deadline passes. */
export async function waitReady(url: string, child: ChildProcess, deadline: number): Promise<void> {
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`worker exited with ${child.exitCode} before it was ready`);
    try {
      const res = await fetch(url);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`worker not ready at ${url}`);
}
