// @convstream/client: follow convstream conversations from TypeScript.

import type { NatsConnection } from "@nats-io/nats-core";
import { Client, type ClientOptions, type InferenceContextFor, type InferenceFormat, type InferOptions } from "./client.js";

export { openConversation, Conversation } from "./conversation.js";
export type { ConversationOptions, ConversationStats, ConversationError, ConversationStatus } from "./conversation.js";
export { Client } from "./client.js";
export type { ClientOptions, InferenceContextFor, InferenceFormat, InferOptions, Receipt, ReplyRequest } from "./client.js";
export { applyDelta, fromStored, messageState, readableFormat, SNAPSHOT_FORMAT, streamingMessage } from "./snapshot.js";
export type { ConversationSnapshot, MessageState } from "./snapshot.js";
export { TYPES, newEvent, encodeEvent, decodeEvent, DEFAULT_SOURCE } from "./cloudevents.js";
export type { CloudEvent } from "./cloudevents.js";
export { Subjects, DEFAULT_PREFIX, validConversationId } from "./subjects.js";
export {
  ConvstreamError,
  InvalidArgumentError,
  DecodeError,
  RejectedError,
  PipelineFailedError,
  TimeoutError,
  ClosedError,
} from "./errors.js";
export type { ConvstreamErrorCode } from "./errors.js";
export type {
  ConversationId,
  Message,
  MessageGroup,
  BranchIndicator,
  ContextNode,
  MessageNode,
  AssistantGroupNode,
  TasksNode,
  AgentCouncilNode,
  CompareNode,
  BranchNode,
  SignalCallbacksNode,
  NodeList,
  Stats,
} from "./generated/defs.js";
export type { SnapshotDeltaV1 } from "./generated/convstream.snapshot.delta.v1.js";
export type { SnapshotUpdatedV1 } from "./generated/convstream.snapshot.updated.v1.js";
export type { EventRejectedV1 } from "./generated/convstream.event.rejected.v1.js";
export type { PipelineFailedV1 } from "./generated/convstream.pipeline.failed.v1.js";
export type {
  AnthropicContentBlock,
  AnthropicMessage,
  AnthropicMessagesRequest,
  GeminiContent,
  GeminiPart,
  GeminiRequest,
  InferenceContextV1,
  OpenAIChatContentPart,
  OpenAIChatMessage,
  OpenAIChatRequest,
  OpenAIChatToolCall,
  OpenAIResponsesInputItem,
  OpenAIResponsesRequest,
} from "./generated/convstream.inference.context.v1.js";
export type { InferenceRequestedV1 } from "./generated/convstream.inference.requested.v1.js";
export type { MessageAppendedV1 } from "./generated/convstream.message.appended.v1.js";
export type { MessageUpdatedV1 } from "./generated/convstream.message.updated.v1.js";
export type { MessageDeletedV1 } from "./generated/convstream.message.deleted.v1.js";
export type { MessageChunkV1 } from "./generated/convstream.message.chunk.v1.js";
export type { MessageCompletedV1 } from "./generated/convstream.message.completed.v1.js";
export type { ReplyRequestedV1 } from "./generated/convstream.reply.requested.v1.js";
export type { GroupsUpsertedV1 } from "./generated/convstream.groups.upserted.v1.js";
export type { CloudEventEnvelope } from "./generated/cloudevent.js";

/**
 * infer asks a worker for the model-ready context of a conversation; see
 * Client.infer.
 */
export function infer<F extends InferenceFormat = InferenceFormat>(
  nc: NatsConnection,
  conversationId: string,
  opts: InferOptions<F> & ClientOptions = {},
): Promise<InferenceContextFor<F>> {
  return new Client(nc, opts).infer(conversationId, opts);
}
