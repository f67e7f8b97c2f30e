// Errors of the client. Every error it throws or reports is a
// ConvstreamError with a `code`, so that a UI can switch on it; rejections
// and pipeline failures carry the worker's event data as published.

import type { EventRejectedV1 } from "./generated/convstream.event.rejected.v1.js";
import type { PipelineFailedV1 } from "./generated/convstream.pipeline.failed.v1.js";

/** What went wrong, as a string a UI can switch on. */
export type ConvstreamErrorCode =
  | "invalid_argument"
  | "not_cloudevent"
  | "unsupported_content_type"
  | "rejected"
  | "pipeline_failed"
  | "timeout"
  | "closed"
  | "unknown_conversation"
  | "unavailable";

/** ConvstreamError is the base of every error of this package. */
export class ConvstreamError extends Error {
  readonly code: ConvstreamErrorCode;
  constructor(code: ConvstreamErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ConvstreamError";
    this.code = code;
  }
}

/** InvalidArgumentError: a conversation id, message or option the client refuses before sending. */
export class InvalidArgumentError extends ConvstreamError {
  constructor(message: string) {
    super("invalid_argument", message);
    this.name = "InvalidArgumentError";
  }
}

/** DecodeError: a received message that is not a CloudEvent the client can read. */
export class DecodeError extends ConvstreamError {
  constructor(code: "not_cloudevent" | "unsupported_content_type", message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = "DecodeError";
  }
}

/**
 * RejectedError: the worker refused an event or an inference request
 * (convstream.event.rejected.v1, docs/events.md "Rejections"); `rejection`
 * is its data, `rejection.code` the worker's reason code.
 */
export class RejectedError extends ConvstreamError {
  readonly rejection: EventRejectedV1;
  constructor(rejection: EventRejectedV1) {
    super("rejected", `convstream: rejected (${rejection.code ?? "unknown"}): ${rejection.reason}`);
    this.name = "RejectedError";
    this.rejection = rejection;
  }
}

/**
 * PipelineFailedError: an inference pipeline failed or timed out
 * (convstream.pipeline.failed.v1); `failure` is its data.
 */
export class PipelineFailedError extends ConvstreamError {
  readonly failure: PipelineFailedV1;
  constructor(failure: PipelineFailedV1) {
    super("pipeline_failed", `convstream: ${failure.message}`);
    this.name = "PipelineFailedError";
    this.failure = failure;
  }
}

/** TimeoutError: an answer or a state the client waited for did not come in time. */
export class TimeoutError extends ConvstreamError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("timeout", message, options);
    this.name = "TimeoutError";
  }
}

/** ClosedError: the conversation (or its connection) was closed. */
export class ClosedError extends ConvstreamError {
  constructor(message = "convstream: conversation closed") {
    super("closed", message);
    this.name = "ClosedError";
  }
}
