// CloudEvents over NATS, structured mode JSON (docs/events.md): the
// envelope the worker reads, and the decoding of what it publishes.

import { headers, nuid } from "./vendor/nats.js";

export const TYPES = {
  messageUpdated: "convstream.message.updated.v1",
  snapshotUpdated: "convstream.snapshot.updated.v1",
  snapshotDelta: "convstream.snapshot.delta.v1",
  inferenceRequested: "convstream.inference.requested.v1",
  inferenceContext: "convstream.inference.context.v1",
  pipelineFailed: "convstream.pipeline.failed.v1",
  eventRejected: "convstream.event.rejected.v1",
};

const SOURCE = "urn:convstream:ui";
const CE_JSON = "application/cloudevents+json";
const enc = new TextEncoder();
const dec = new TextDecoder();

// newEvent returns a CloudEvent 1.0 about a conversation.
export function newEvent(type, conversationId, data) {
  return {
    specversion: "1.0",
    id: nuid.next(),
    source: SOURCE,
    type,
    conversationid: conversationId,
    time: new Date().toISOString(),
    datacontenttype: "application/json",
    data,
  };
}

// encode returns the payload and headers of an event in structured mode.
export function encode(ev) {
  const h = headers();
  h.set("content-type", CE_JSON);
  return { payload: enc.encode(JSON.stringify(ev)), headers: h };
}

// decode reads a received message as a CloudEvent, in either mode; data is
// parsed JSON. It throws on anything else.
export function decode(msg) {
  const h = msg.headers;
  const ct = (h && h.get("content-type")) || "";
  if (ct.startsWith("application/cloudevents")) {
    const ev = JSON.parse(dec.decode(msg.data));
    if (ev.data === undefined && ev.data_base64 !== undefined) {
      throw new Error("binary data (msgpack) is not supported by the viewer");
    }
    return ev;
  }
  if (h && h.get("ce-type")) {
    const ev = {};
    for (const [k, v] of h) {
      const key = k.toLowerCase();
      if (key.startsWith("ce-")) ev[key.slice(3)] = decodeURIComponent(v[0]);
    }
    ev.datacontenttype = ct || "application/json";
    ev.data = msg.data.length ? JSON.parse(dec.decode(msg.data)) : null;
    return ev;
  }
  throw new Error("not a CloudEvent");
}
