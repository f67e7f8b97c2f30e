// Following one conversation (docs/events.md, "Following a conversation"):
// subscribe to its deltas first, then read the stored snapshot, apply each
// delta whose base is the version held, and on a gap (or a reconnect, which
// may have lost deltas) go on from the bucket. A core subscription to the
// bucket's key subject ($KV.<bucket>.<id>, where every write of the
// snapshot is published) brings every stored snapshot without a consumer:
// it ends a gap as soon as the bucket has caught up (the bucket is up to
// --snapshot-max-interval behind the deltas) and brings the contextTree,
// which deltas do not carry. A ui user may create no consumer
// (streams.UIClientPermissions), so none is needed.

import type { Msg, NatsConnection, Subscription } from "@nats-io/nats-core";
import { Kvm, type KV } from "@nats-io/kv";
import {
  Client,
  type ClientOptions,
  type InferenceContextFor,
  type InferenceFormat,
  type InferOptions,
  type Receipt,
  type ReplyRequest,
} from "./client.js";
import { TYPES, decodeEvent } from "./cloudevents.js";
import { ClosedError, ConvstreamError, InvalidArgumentError, PipelineFailedError, RejectedError, TimeoutError } from "./errors.js";
import { applyDelta, fromStored, readableFormat, streamingMessage, type ConversationSnapshot } from "./snapshot.js";
import { checkConversationId } from "./subjects.js";
import type { EventRejectedV1 } from "./generated/convstream.event.rejected.v1.js";
import type { InferenceContextV1 } from "./generated/convstream.inference.context.v1.js";
import type { PipelineFailedV1 } from "./generated/convstream.pipeline.failed.v1.js";
import type { SnapshotDeltaV1 } from "./generated/convstream.snapshot.delta.v1.js";
import type { SnapshotUpdatedV1 } from "./generated/convstream.snapshot.updated.v1.js";
import type { Message, MessageGroup } from "./generated/defs.js";

/** newMessageId returns a fresh message id. */
function newMessageId(prefix: string): string {
  return `${prefix}_${globalThis.crypto.randomUUID()}`;
}

/** ConversationOptions: the client's, plus how the conversation is followed. */
export interface ConversationOptions extends ClientOptions {
  /**
   * How many deltas that arrived after a gap are kept, by base version, to
   * be applied on top of the stored snapshot that ends the gap; default 1,024.
   */
  maxPendingDeltas?: number;
}

/** ConversationStats count what the follower did, for tests and dashboards. */
export interface ConversationStats {
  /** Deltas applied to the snapshot held. */
  deltas: number;
  /** Deltas whose base was not the version held. */
  gaps: number;
  /** Stored snapshots that replaced the one held (the first one included). */
  resyncs: number;
  /** Reconnections of the NATS connection seen (each one reads the bucket again). */
  reconnects: number;
}

/** A problem the worker reported about this conversation. */
export type ConversationError = RejectedError | PipelineFailedError;

/**
 * ConversationStatus is how current the snapshot held is: `live` while
 * deltas apply to it, `resyncing` while the stored snapshot is read again
 * after a missed delta or a lost connection (the snapshot held is shown
 * meanwhile).
 */
export type ConversationStatus = "live" | "resyncing";

type Listener = (s: ConversationSnapshot) => void;
type ErrorListener = (e: ConversationError) => void;

interface Waiter {
  receipt: Receipt;
  resolve: (s: ConversationSnapshot) => void;
  reject: (e: Error) => void;
  timer: ReturnType<typeof setTimeout>;
}

const RECENT_REJECTIONS = 64;

/**
 * openConversation follows a conversation: it resolves once subscribed
 * and the stored snapshot (if any) is read. Close it when done.
 */
export async function openConversation(
  nc: NatsConnection,
  conversationId: string,
  opts: ConversationOptions = {},
): Promise<Conversation> {
  checkConversationId(conversationId);
  const c = new Conversation(new Client(nc, opts), conversationId, opts);
  try {
    await c.start();
  } catch (err) {
    c.close();
    throw err;
  }
  return c;
}

/**
 * Conversation is one followed conversation: its snapshot (flatList and
 * contextTree) as a value, a subscribe callback and an async iterator, the
 * worker's rejections and failures about it, and the events that change it.
 */
export class Conversation implements AsyncIterable<ConversationSnapshot> {
  readonly id: string;
  readonly client: Client;
  readonly stats: ConversationStats = { deltas: 0, gaps: 0, resyncs: 0, reconnects: 0 };

  private current: ConversationSnapshot | null = null;
  private kv: KV | null = null;
  private subs: Subscription[] = [];
  private stopStatus: (() => void) | null = null;
  private listeners = new Set<Listener>();
  private errorListeners = new Set<ErrorListener>();
  private pending = new Map<number, SnapshotDeltaV1>();
  private maxPending: number;
  private waiters = new Set<Waiter>();
  private rejections: EventRejectedV1[] = [];
  private reading = false;
  private closed = false;
  private closeListeners = new Set<() => void>();

  constructor(client: Client, id: string, opts: ConversationOptions = {}) {
    this.client = client;
    this.id = id;
    this.maxPending = opts.maxPendingDeltas ?? 1024;
  }

  /** snapshot is the state held: null until the conversation has one. */
  get snapshot(): ConversationSnapshot | null {
    return this.current;
  }
  /** flatList of the snapshot held (empty before the first). */
  get flatList(): readonly Message[] {
    return this.current?.flatList ?? [];
  }
  /** contextTree of the last stored snapshot seen. */
  get contextTree(): ConversationSnapshot["contextTree"] {
    return this.current?.contextTree ?? [];
  }
  /** version of the snapshot held; 0 before the first. */
  get version(): number {
    return this.current?.version ?? 0;
  }

  /** @internal start subscribes, then reads the bucket (so no delta falls between). */
  async start(): Promise<void> {
    const { nc, subjects } = this.client;
    this.subs.push(
      nc.subscribe(subjects.snapshots(this.id), { callback: (err, msg) => void (err || this.onSnapshotMsg(msg)) }),
      nc.subscribe(subjects.errors(this.id), { callback: (err, msg) => void (err || this.onProblemMsg(msg)) }),
      nc.subscribe(subjects.results(this.id), { callback: (err, msg) => void (err || this.onProblemMsg(msg)) }),
      nc.subscribe(`$KV.${this.client.bucket}.${this.id}`, { callback: (err, msg) => void (err || this.onKeyMsg(msg)) }),
    );
    await nc.flush();
    // The first read's failure is the caller's: a bucket that is missing
    // (no worker with this prefix) or unreadable (permissions).
    try {
      this.kv = await new Kvm(nc).open(this.client.bucket, { bindOnly: true });
      const e = await this.kv.get(this.id);
      if (e && e.operation === "PUT") this.onStored(e.json<SnapshotUpdatedV1>());
    } catch (err) {
      throw new ConvstreamError("unavailable", `convstream: snapshot bucket ${this.client.bucket}: ${(err as Error).message}`, { cause: err });
    }
    this.followStatus();
  }

  /**
   * subscribe calls fn with every new snapshot (and at once with the one
   * held, if any); it returns the function that unsubscribes.
   */
  subscribe(fn: Listener): () => void {
    this.listeners.add(fn);
    if (this.current) fn(this.current);
    return () => this.listeners.delete(fn);
  }

  /** status says whether the snapshot held is live or being read again (ConversationStatus). */
  get status(): ConversationStatus {
    return this.resyncs > 0 ? "resyncing" : "live";
  }

  /** onStatus calls fn with each change of status; it returns the function that stops it. */
  onStatus(fn: (s: ConversationStatus) => void): () => void {
    this.statusListeners.add(fn);
    return () => this.statusListeners.delete(fn);
  }

  private resyncs = 0;
  private statusListeners = new Set<(s: ConversationStatus) => void>();

  // resyncAfter reads the stored snapshot again after a gap or a lost
  // connection, saying `resyncing` until the read ends.
  private resyncAfter(): void {
    if (this.resyncs++ === 0) for (const fn of this.statusListeners) fn("resyncing");
    void this.read()
      .catch(() => {})
      .finally(() => {
        if (--this.resyncs === 0 && !this.closed) for (const fn of this.statusListeners) fn("live");
      });
  }

  /** onError calls fn with each rejection or pipeline failure of this conversation; it returns the function that stops it. */
  onError(fn: ErrorListener): () => void {
    this.errorListeners.add(fn);
    return () => this.errorListeners.delete(fn);
  }

  /**
   * The async iterator yields the snapshot held (if any), then each new
   * one; a slow reader gets the latest, not every step. It ends when the
   * conversation is closed.
   */
  [Symbol.asyncIterator](): AsyncIterator<ConversationSnapshot> {
    let latest: ConversationSnapshot | null = this.current;
    let wake: (() => void) | null = null;
    const unsubscribe = this.subscribe((s) => {
      latest = s;
      wake?.();
    });
    const onClose = () => wake?.();
    this.closeListeners.add(onClose);
    const done = (): IteratorResult<ConversationSnapshot> => {
      unsubscribe();
      this.closeListeners.delete(onClose);
      return { done: true, value: undefined };
    };
    return {
      next: async () => {
        while (!latest && !this.closed) {
          await new Promise<void>((r) => (wake = r));
          wake = null;
        }
        if (this.closed) return done();
        const value = latest!;
        latest = null;
        return { done: false, value };
      },
      return: async () => done(),
    };
  }

  /**
   * applied resolves with the snapshot once the worker has taken the
   * receipt's event into account (the snapshot's sequence reaches it), or
   * rejects with its RejectedError, or a TimeoutError after timeout ms
   * (default 10,000).
   */
  applied(receipt: Receipt, timeout = 10_000): Promise<ConversationSnapshot> {
    if (this.closed) return Promise.reject(new ClosedError());
    const rejected = this.rejections.find((r) => matches(r, receipt));
    if (rejected) return Promise.reject(new RejectedError(rejected));
    if (this.current && this.current.sequence >= receipt.sequence) return Promise.resolve(this.current);
    return new Promise((resolve, reject) => {
      const w: Waiter = {
        receipt,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.waiters.delete(w);
          reject(new TimeoutError(`convstream: event ${receipt.eventId} (sequence ${receipt.sequence}) not applied within ${timeout} ms`));
        }, timeout),
      };
      this.waiters.add(w);
    });
  }

  append(message: Message): Promise<Receipt> {
    return this.client.append(this.id, message);
  }
  update(messageId: string, patch: Record<string, unknown>): Promise<Receipt> {
    return this.client.update(this.id, messageId, patch);
  }
  remove(messageId: string): Promise<Receipt> {
    return this.client.remove(this.id, messageId);
  }
  upsertGroup(group: MessageGroup): Promise<Receipt> {
    return this.client.upsertGroup(this.id, group);
  }
  /** streaming is the message of the flatList being written, if any. */
  get streaming(): Message | undefined {
    return streamingMessage(this.flatList);
  }
  /** isStreaming: a message of the flatList is being written. */
  get isStreaming(): boolean {
    return this.streaming !== undefined;
  }

  /**
   * send appends a user message with `text` after the last message of the
   * active path and asks for the assistant's reply to it; it resolves with
   * the user message's id once both are stored.
   */
  async send(text: string, opts: Omit<ReplyRequest, "userMessageId" | "parentId"> & { id?: string } = {}): Promise<string> {
    const { id: given, ...req } = opts;
    const id = given ?? newMessageId("msg");
    const last = this.flatList[this.flatList.length - 1];
    await this.append({ id, role: "user", content: text, parentId: last?.id ?? null, createdAt: Date.now() });
    await this.client.requestReply(this.id, { ...req, userMessageId: id });
    return id;
  }

  /** stop stops the reply being written, if any; it resolves with the stopped message's id. */
  async stop(): Promise<string | undefined> {
    const m = this.streaming;
    if (!m) return undefined;
    await this.client.stop(this.id, m.id);
    return m.id;
  }

  /**
   * regenerate asks for another reply to the message the last assistant
   * message of the active path answers: a new branch beside it (its
   * parent's activeBranchIndex moves to the new reply once written).
   */
  async regenerate(opts: Omit<ReplyRequest, "userMessageId" | "parentId"> = {}): Promise<void> {
    const list = this.flatList;
    for (let i = list.length - 1; i >= 0; i--) {
      const m = list[i]!;
      if (m.role === "assistant" && typeof m.parentId === "string") {
        // The new reply becomes the active branch as soon as it is
        // written: its index is the count of the replies before it.
        const branch = m["branch"] as { count?: number } | undefined;
        await this.switchBranch(m.parentId, typeof branch?.count === "number" ? branch.count : 1);
        await this.client.requestReply(this.id, { ...opts, userMessageId: m.parentId, parentId: m.parentId });
        return;
      }
    }
    throw new InvalidArgumentError("convstream: no assistant message to regenerate");
  }

  /** switchBranch makes `index` the active branch among the children of `messageId`. */
  switchBranch(messageId: string, index: number): Promise<Receipt> {
    return this.client.switchBranch(this.id, messageId, index);
  }
  infer<F extends InferenceFormat = InferenceFormat>(opts: InferOptions<F> = {}): Promise<InferenceContextFor<F>> {
    return this.client.infer(this.id, opts);
  }

  /** resync reads the stored snapshot again (a newer one replaces the one held). */
  async resync(): Promise<void> {
    await this.read();
  }

  /** close stops following; the connection stays open. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const s of this.subs) s.unsubscribe();
    this.subs = [];
    this.stopStatus?.();
    for (const w of this.waiters) {
      clearTimeout(w.timer);
      w.reject(new ClosedError());
    }
    this.waiters.clear();
    for (const fn of this.closeListeners) fn();
    this.listeners.clear();
  }

  private onSnapshotMsg(msg: Parameters<typeof decodeEvent>[0]): void {
    let ev;
    try {
      ev = decodeEvent(msg);
    } catch {
      return; // not ours to read: the snapshot subject carries only the worker's events
    }
    if (ev.type === TYPES.snapshotUpdated) {
      this.onStored(ev.data as SnapshotUpdatedV1);
      return;
    }
    if (ev.type !== TYPES.snapshotDelta) return;
    const d = ev.data as SnapshotDeltaV1;
    if (!d || typeof d.version !== "number") return;
    if (d.version <= this.version) {
      // Stale (covered), or an event taken into account without a change
      // (an identical append): only the sequence moves on.
      this.advanceSequence(d.version, d.sequence ?? d.version);
      return;
    }
    const next = applyDelta(this.current, d);
    if (next) {
      this.stats.deltas++;
      this.set(next);
      this.drainPending();
      return;
    }
    // A gap: keep the delta for after the stored snapshot, and read it.
    this.stats.gaps++;
    if (this.pending.size < this.maxPending) this.pending.set(d.baseVersion, d);
    this.resyncAfter();
  }

  private onStored(s: SnapshotUpdatedV1): void {
    // A snapshot of a newer format than this client reads is left as a
    // malformed one is (readableFormat).
    if (!s || typeof s.version !== "number" || !Array.isArray(s.flatList) || !readableFormat(s)) return;
    if (!this.current || s.version > this.current.version) {
      this.stats.resyncs++;
      this.set(fromStored(s));
      this.drainPending();
    } else if (s.version > this.current.treeVersion && Array.isArray(s.contextTree)) {
      // Deltas moved the flatList on since this store; its tree is still the newest.
      this.set({ ...this.current, contextTree: s.contextTree, treeVersion: s.version });
    } else {
      this.advanceSequence(s.version, s.sequence);
    }
  }

  // advanceSequence takes the sequence of a snapshot of the version held
  // (events after it that changed nothing, or were rejected), so that
  // applied() learns they were taken into account.
  private advanceSequence(version: number, sequence: number): void {
    const c = this.current;
    if (c && version === c.version && typeof sequence === "number" && sequence > c.sequence) {
      this.set({ ...c, sequence });
    }
  }

  private drainPending(): void {
    for (;;) {
      const d = this.pending.get(this.version);
      if (!d) break;
      this.pending.delete(this.version);
      const next = applyDelta(this.current, d);
      if (!next) break;
      this.stats.deltas++;
      this.set(next);
    }
    for (const base of this.pending.keys()) if (base < this.version) this.pending.delete(base);
  }

  private set(s: ConversationSnapshot): void {
    this.current = s;
    for (const w of this.waiters) {
      if (s.sequence >= w.receipt.sequence) {
        clearTimeout(w.timer);
        this.waiters.delete(w);
        w.resolve(s);
      }
    }
    for (const fn of this.listeners) {
      try {
        fn(s);
      } catch (err) {
        queueMicrotask(() => {
          throw err;
        });
      }
    }
  }

  private onProblemMsg(msg: Parameters<typeof decodeEvent>[0]): void {
    let ev;
    try {
      ev = decodeEvent(msg);
    } catch {
      return;
    }
    let err: ConversationError;
    if (ev.type === TYPES.eventRejected) {
      const r = ev.data as EventRejectedV1;
      this.rejections.push(r);
      if (this.rejections.length > RECENT_REJECTIONS) this.rejections.shift();
      err = new RejectedError(r);
      for (const w of this.waiters) {
        if (matches(r, w.receipt)) {
          clearTimeout(w.timer);
          this.waiters.delete(w);
          w.reject(err);
        }
      }
    } else if (ev.type === TYPES.pipelineFailed) {
      err = new PipelineFailedError(ev.data as PipelineFailedV1);
    } else {
      return;
    }
    for (const fn of this.errorListeners) fn(err);
  }

  // read gets the stored snapshot; reads do not overlap (the key's
  // subscription brings any store that lands meanwhile).
  private async read(): Promise<void> {
    if (this.reading || !this.kv || this.closed) return;
    this.reading = true;
    try {
      const e = await this.kv.get(this.id);
      if (e && e.operation === "PUT") this.onStored(e.json<SnapshotUpdatedV1>());
    } catch {
      // The bucket away (a reconnect under way): the next write, the next
      // gap or the reconnect reads again.
    } finally {
      this.reading = false;
    }
  }

  // onKeyMsg takes a write of the stored snapshot, as published on the
  // key's subject; a delete or purge (an erasure) carries a KV-Operation
  // header and no snapshot.
  private onKeyMsg(msg: Msg): void {
    if (msg.headers?.get("KV-Operation")) return;
    try {
      this.onStored(msg.json<SnapshotUpdatedV1>());
    } catch {
      // not a snapshot: skipped, as the Go follower does
    }
  }

  // followStatus reads the bucket after each reconnect: core NATS deltas
  // published while disconnected are lost, and without a later delta no
  // gap would show it.
  private followStatus(): void {
    const statuses = this.client.nc.status();
    // The library's iterator has stop(); the type says only AsyncIterable.
    this.stopStatus = () => (statuses as { stop?: () => void }).stop?.();
    void (async () => {
      for await (const s of statuses) {
        if (this.closed) break;
        if (s.type === "reconnect") {
          this.stats.reconnects++;
          this.resyncAfter();
        }
      }
    })().catch(() => {});
  }
}

function matches(r: EventRejectedV1, receipt: Receipt): boolean {
  return r.eventId === receipt.eventId || r.sequence === receipt.sequence;
}
