// The client of one deployment: publishes message events to the events
// stream (with Nats-Msg-Id, so JetStream stores a retried event once) and
// asks for inference contexts. Conversation (conversation.ts) follows one
// conversation's snapshot on top of it.

import { errors as natsErrors, type NatsConnection } from "@nats-io/nats-core";
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import { DEFAULT_SOURCE, TYPES, decodeEvent, encodeEvent, newEvent } from "./cloudevents.js";
import { ConvstreamError, InvalidArgumentError, PipelineFailedError, RejectedError, TimeoutError } from "./errors.js";
import { Subjects, checkConversationId } from "./subjects.js";
import type { EventRejectedV1 } from "./generated/convstream.event.rejected.v1.js";
import type { InferenceContextV1 } from "./generated/convstream.inference.context.v1.js";
import type { PipelineFailedV1 } from "./generated/convstream.pipeline.failed.v1.js";
import type { Message, MessageGroup } from "./generated/defs.js";

/** ClientOptions name the deployment the client talks to. */
export interface ClientOptions {
  /** Subject prefix of the workers (--subject-prefix); default "convstream". */
  prefix?: string;
  /** Snapshot bucket; default derived from the prefix (CONVSTREAM_SNAPSHOTS). */
  bucket?: string;
  /** CloudEvent source of the events published; default "urn:convstream:client". */
  source?: string;
  /** How long infer waits for its answer, in ms; default 10,000. */
  requestTimeout?: number;
}

/** Receipt tells where an event was stored: its id and its events-stream sequence. */
export interface Receipt {
  readonly eventId: string;
  /** The events-stream sequence; the snapshot's `sequence` reaches it once the worker took the event into account. */
  readonly sequence: number;
  /** True when JetStream had the event already (a retry within the duplicate window). */
  readonly duplicate: boolean;
}

/** InferenceFormat names the shape of an inference context's request: a provider's, or raw. */
export type InferenceFormat = InferenceContextV1["format"];

/**
 * InferenceContextFor is the inference context of format F: its `request`
 * typed as that provider's body (OpenAIChatRequest, OpenAIResponsesRequest,
 * AnthropicMessagesRequest, GeminiRequest; none for raw). For the whole
 * union, InferenceContextV1, `format` narrows it.
 */
export type InferenceContextFor<F extends InferenceFormat> = Extract<InferenceContextV1, { format: F }>;

/** InferOptions of an inference request (docs/events.md, "Inference"). */
export interface InferOptions<F extends InferenceFormat = InferenceFormat> {
  /** The message the context ends at; absent: the active path. */
  leafId?: string;
  /** The provider format of the answer, which types the context's request; absent: openai.chat. */
  format?: F;
  /** The pipeline spec; absent: "default". */
  pipeline?: string;
  /** Per-processor configuration merged over the spec's. */
  params?: Record<string, Record<string, unknown>>;
  /** How long to wait for the answer, in ms; default the client's requestTimeout. */
  timeout?: number;
}

/** ReplyRequest says what reply to write (docs/events.md, "Live replies"). */
export interface ReplyRequest {
  /** The message replied to; absent: the leaf of the active path. */
  userMessageId?: string;
  /** The reply's parent when not userMessageId. */
  parentId?: string;
  /** The reply's id; absent: the orchestrator chooses. */
  messageId?: string;
  /** builtin, openai:<model>, ...; absent: the orchestrator's default. */
  model?: string;
  pipeline?: string;
  params?: Record<string, unknown>;
}

/** Client publishes events and asks for inference contexts for any conversation. */
export class Client {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly subjects: Subjects;
  readonly bucket: string;
  readonly source: string;
  readonly requestTimeout: number;

  constructor(nc: NatsConnection, opts: ClientOptions = {}) {
    this.nc = nc;
    this.js = jetstream(nc);
    this.subjects = new Subjects(opts.prefix);
    this.bucket = opts.bucket ?? this.subjects.snapshotBucket();
    this.source = opts.source ?? DEFAULT_SOURCE;
    this.requestTimeout = opts.requestTimeout ?? 10_000;
  }

  /** publish stores one event of a conversation, with its id as Nats-Msg-Id. */
  async publish(conversationId: string, type: string, data: Record<string, unknown>): Promise<Receipt> {
    checkConversationId(conversationId);
    const ev = newEvent(type, conversationId, data, this.source);
    const { payload, headers } = encodeEvent(ev);
    const ack = await this.js.publish(this.subjects.events(conversationId), payload, { msgID: ev.id, headers });
    return { eventId: ev.id, sequence: ack.seq, duplicate: ack.duplicate };
  }

  /**
   * requestReply asks an orchestrator for an assistant's reply
   * (convstream.reply.requested.v1 into the replies stream): to
   * `userMessageId`, as a child of `parentId` when given.
   */
  async requestReply(conversationId: string, req: ReplyRequest = {}): Promise<Receipt> {
    checkConversationId(conversationId);
    const data = { ...req, conversationId };
    const ev = newEvent(TYPES.replyRequested, conversationId, data, this.source);
    const { payload, headers } = encodeEvent(ev);
    const ack = await this.js.publish(this.subjects.replies(conversationId), payload, { msgID: ev.id, headers });
    return { eventId: ev.id, sequence: ack.seq, duplicate: ack.duplicate };
  }

  /**
   * stop asks the orchestrator writing message `messageId` to stop: the
   * message ends as stopped with what was written. It throws a
   * ConvstreamError with code "unavailable" when no orchestrator answers.
   */
  async stop(conversationId: string, messageId: string, timeout = this.requestTimeout): Promise<void> {
    checkConversationId(conversationId);
    checkMessageId(messageId);
    const ev = newEvent(TYPES.replyStop, conversationId, { id: messageId }, this.source);
    const { payload, headers } = encodeEvent(ev);
    try {
      await this.nc.request(this.subjects.stop(conversationId), payload, { timeout, headers });
    } catch (err) {
      throw new ConvstreamError("unavailable", `convstream: stop ${messageId}: ${(err as Error).message}`, { cause: err });
    }
  }

  /** sendChunk stores the next chunk of a streaming message (convstream.message.chunk.v1), for a writer of replies. */
  async sendChunk(conversationId: string, chunk: { id: string; seq: number; text?: string; reasoning?: string }): Promise<Receipt> {
    checkConversationId(conversationId);
    checkMessageId(chunk?.id);
    const ev = newEvent(TYPES.messageChunk, conversationId, chunk, this.source);
    const { payload, headers } = encodeEvent(ev);
    const ack = await this.js.publish(this.subjects.chunks(conversationId), payload, { msgID: ev.id, headers });
    return { eventId: ev.id, sequence: ack.seq, duplicate: ack.duplicate };
  }

  /** complete ends a streaming message with its final fields, the whole content included (convstream.message.completed.v1). */
  complete(conversationId: string, done: { id: string; status: "done" | "stopped" | "interrupted" | "error"; content: string } & Record<string, unknown>): Promise<Receipt> {
    checkMessageId(done?.id);
    return this.publish(conversationId, TYPES.messageCompleted, done);
  }

  /** append adds a message (convstream.message.appended.v1); its string id is required. */
  append(conversationId: string, message: Message): Promise<Receipt> {
    checkMessageId(message?.id);
    return this.publish(conversationId, TYPES.messageAppended, message);
  }

  /**
   * update merges a JSON merge patch (RFC 7386) into a message
   * (convstream.message.updated.v1): null deletes a field, objects merge.
   */
  update(conversationId: string, messageId: string, patch: Record<string, unknown>): Promise<Receipt> {
    checkMessageId(messageId);
    if (!patch || typeof patch !== "object" || Array.isArray(patch)) {
      throw new InvalidArgumentError("convstream: a patch is an object");
    }
    if ("id" in patch && patch["id"] !== messageId) {
      throw new InvalidArgumentError("convstream: a patch cannot change the message id");
    }
    return this.publish(conversationId, TYPES.messageUpdated, { ...patch, id: messageId });
  }

  /** remove deletes a message (convstream.message.deleted.v1); its children become roots. */
  remove(conversationId: string, messageId: string): Promise<Receipt> {
    checkMessageId(messageId);
    return this.publish(conversationId, TYPES.messageDeleted, { id: messageId });
  }

  /** upsertGroup adds a message group or replaces the one with its id (convstream.groups.upserted.v1). */
  upsertGroup(conversationId: string, group: MessageGroup): Promise<Receipt> {
    checkMessageId(group?.id);
    return this.publish(conversationId, TYPES.groupsUpserted, group);
  }

  /**
   * switchBranch makes `index` the active branch among the children of
   * message `messageId`: an update of its metadata.activeBranchIndex, as
   * the viewer's ‹ › buttons do.
   */
  switchBranch(conversationId: string, messageId: string, index: number): Promise<Receipt> {
    if (!Number.isInteger(index) || index < 0) {
      throw new InvalidArgumentError(`convstream: branch index ${index} is not a non-negative integer`);
    }
    return this.update(conversationId, messageId, { metadata: { activeBranchIndex: index } });
  }

  /**
   * infer asks a worker for the model-ready context of a conversation. It
   * throws RejectedError (unknown conversation or leaf, bad pipeline or
   * params), PipelineFailedError, TimeoutError, or a ConvstreamError with
   * code "unavailable" when no worker answers. With a `format`, the
   * context's request is typed as that format's body.
   */
  async infer<F extends InferenceFormat = InferenceFormat>(
    conversationId: string,
    opts: InferOptions<F> = {},
  ): Promise<InferenceContextFor<F>> {
    checkConversationId(conversationId);
    const data: Record<string, unknown> = { conversationId };
    if (opts.leafId !== undefined) data["leafId"] = opts.leafId;
    if (opts.format !== undefined) data["format"] = opts.format;
    if (opts.pipeline !== undefined) data["pipeline"] = opts.pipeline;
    if (opts.params !== undefined) data["params"] = opts.params;
    const ev = newEvent(TYPES.inferenceRequested, conversationId, data, this.source);
    const { payload, headers } = encodeEvent(ev);
    const timeout = opts.timeout ?? this.requestTimeout;
    let reply;
    try {
      reply = await this.nc.request(this.subjects.inference(conversationId), payload, { headers, timeout });
    } catch (err) {
      throw requestError(err, timeout);
    }
    const out = decodeEvent(reply);
    switch (out.type) {
      case TYPES.inferenceContext:
        return out.data as InferenceContextFor<F>;
      case TYPES.pipelineFailed:
        throw new PipelineFailedError(out.data as PipelineFailedV1);
      case TYPES.eventRejected:
        throw new RejectedError(out.data as EventRejectedV1);
      default:
        throw new ConvstreamError("not_cloudevent", `convstream: unexpected inference reply ${out.type}`);
    }
  }
}

function checkMessageId(id: unknown): void {
  if (typeof id !== "string" || id === "") {
    throw new InvalidArgumentError("convstream: a message needs a non-empty string id");
  }
}

function requestError(err: unknown, timeout: number): Error {
  if (err instanceof natsErrors.NoRespondersError || (err instanceof natsErrors.RequestError && err.isNoResponders())) {
    return new ConvstreamError("unavailable", "convstream: no worker answers inference requests", { cause: err });
  }
  if (err instanceof natsErrors.TimeoutError || (err instanceof Error && err.name === "TimeoutError")) {
    return new TimeoutError(`convstream: no inference answer within ${timeout} ms`, { cause: err });
  }
  return err instanceof Error ? err : new Error(String(err));
}
