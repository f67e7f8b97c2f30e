// CloudEvents over NATS (docs/events.md, "CloudEvents"): the envelope the
// client publishes (structured mode, JSON) and the decoding of what the
// worker publishes (structured JSON; binary mode with JSON data is read
// too). The worker publishes no msgpack, so msgpack data is refused with a
// DecodeError rather than decoded by a dependency nobody needs.

import { headers, nuid, type Msg, type MsgHdrs } from "@nats-io/nats-core";
import { DecodeError } from "./errors.js";
import { TYPES } from "./generated/types.js";

/** The event types of the wire contract (generated from schemas/). */
export { TYPES };

/** A CloudEvent 1.0 about a conversation, with its data parsed. */
export interface CloudEvent<T = unknown> {
  specversion: "1.0";
  id: string;
  source: string;
  type: string;
  conversationid?: string;
  time?: string;
  datacontenttype?: string;
  traceparent?: string;
  tracestate?: string;
  data: T;
  [attribute: string]: unknown;
}

/** The CloudEvent source the client names unless told otherwise. */
export const DEFAULT_SOURCE = "urn:convstream:client";

const CE_JSON = "application/cloudevents+json";
const enc = new TextEncoder();
const dec = new TextDecoder("utf-8", { fatal: true });

/** newEvent returns a CloudEvent 1.0 about a conversation, with a fresh id. */
export function newEvent<T>(type: string, conversationId: string, data: T, source = DEFAULT_SOURCE): CloudEvent<T> {
  return {
    specversion: "1.0",
    id: nuid.next(),
    source,
    type,
    conversationid: conversationId,
    time: new Date().toISOString(),
    datacontenttype: "application/json",
    data,
  };
}

/** encodeEvent returns the payload and headers of an event in structured mode. */
export function encodeEvent(ev: CloudEvent): { payload: Uint8Array; headers: MsgHdrs } {
  const h = headers();
  h.set("content-type", CE_JSON);
  return { payload: enc.encode(JSON.stringify(ev)), headers: h };
}

function parseJSON(bytes: Uint8Array, what: string): unknown {
  try {
    return JSON.parse(dec.decode(bytes));
  } catch (err) {
    throw new DecodeError("not_cloudevent", `convstream: ${what} is not JSON: ${(err as Error).message}`, { cause: err });
  }
}

function isJSONType(ct: string): boolean {
  const base = ct.split(";")[0]!.trim().toLowerCase();
  return base === "" || base === "application/json" || base.endsWith("+json");
}

/**
 * decodeEvent reads a received message as a CloudEvent, in either content
 * mode. It throws a DecodeError for anything else.
 */
export function decodeEvent(msg: Pick<Msg, "data" | "headers">): CloudEvent {
  const h = msg.headers;
  const ct = h?.get("content-type") ?? "";
  if (ct.toLowerCase().startsWith("application/cloudevents")) {
    const ev = parseJSON(msg.data, "a structured CloudEvent") as CloudEvent;
    if (!ev || typeof ev !== "object" || typeof ev.type !== "string" || typeof ev.id !== "string") {
      throw new DecodeError("not_cloudevent", "convstream: structured CloudEvent without type or id");
    }
    if (ev.data === undefined && ev["data_base64"] !== undefined) {
      throw new DecodeError("unsupported_content_type", `convstream: ${ev.datacontenttype ?? "binary"} data is not supported`);
    }
    return ev;
  }
  if (h && h.get("ce-type")) {
    if (!isJSONType(ct)) {
      throw new DecodeError("unsupported_content_type", `convstream: ${ct} data is not supported`);
    }
    const ev: Record<string, unknown> = {};
    for (const key of h.keys()) {
      const k = key.toLowerCase();
      if (k.startsWith("ce-")) ev[k.slice(3)] = decodeURIComponent(h.get(key));
    }
    ev["datacontenttype"] = ct || "application/json";
    ev["data"] = msg.data.length ? parseJSON(msg.data, "CloudEvent data") : null;
    return ev as CloudEvent;
  }
  throw new DecodeError("not_cloudevent", "convstream: not a CloudEvent (no content-type or ce-type header)");
}
