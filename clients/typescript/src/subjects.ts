// Subject and bucket names (docs/events.md, "Subjects, stream, bucket");
// streams.Subjects is the Go side.

import { InvalidArgumentError } from "./errors.js";

const ID_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;

/** The default subject prefix of a worker (--subject-prefix). */
export const DEFAULT_PREFIX = "convstream";

/** validConversationId reports whether id is one subject token and one KV key. */
export function validConversationId(id: string): boolean {
  return typeof id === "string" && ID_PATTERN.test(id);
}

/** checkConversationId throws InvalidArgumentError unless id is valid. */
export function checkConversationId(id: string): void {
  if (!validConversationId(id)) {
    throw new InvalidArgumentError(`convstream: conversation id ${JSON.stringify(id)} does not match [A-Za-z0-9_-]{1,128}`);
  }
}

/** Subjects names the subjects and buckets of one deployment (a prefix). */
export class Subjects {
  readonly prefix: string;
  constructor(prefix: string = DEFAULT_PREFIX) {
    if (!/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/.test(prefix)) {
      throw new InvalidArgumentError(`convstream: subject prefix ${JSON.stringify(prefix)} is not a list of subject tokens`);
    }
    this.prefix = prefix;
  }
  events(id: string): string {
    return `${this.prefix}.events.${id}`;
  }
  /** chunks: where a reply's chunks go (the events stream holds them until the reply completes). */
  chunks(id: string): string {
    return `${this.prefix}.chunks.${id}`;
  }
  /** replies: the orchestrators' work queue of reply requests. */
  replies(id: string): string {
    return `${this.prefix}.replies.${id}`;
  }
  /** stop: the request that stops a conversation's streaming reply. */
  stop(id: string): string {
    return `${this.prefix}.stop.${id}`;
  }
  snapshots(id: string): string {
    return `${this.prefix}.snapshots.${id}`;
  }
  inference(id: string): string {
    return `${this.prefix}.inference.${id}`;
  }
  results(id: string): string {
    return `${this.prefix}.results.${id}`;
  }
  errors(id: string): string {
    return `${this.prefix}.errors.${id}`;
  }
  /** snapshotBucket: CONVSTREAM_SNAPSHOTS for the default prefix. */
  snapshotBucket(): string {
    return `${this.prefix.replaceAll(".", "_").toUpperCase()}_SNAPSHOTS`;
  }
}
