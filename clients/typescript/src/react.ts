// useConversation: a React hook over openConversation, in its own subpath
// export (@convstream/client/react) so that the main entry needs no React.

import { useCallback, useEffect, useState } from "react";
import type { NatsConnection } from "@nats-io/nats-core";
import { openConversation, type Conversation, type ConversationOptions } from "./conversation.js";
import type { InferenceContextFor, InferenceFormat, InferOptions } from "./client.js";
import { streamingMessage, type ConversationSnapshot } from "./snapshot.js";

/**
 * ConversationHookStatus is what a component shows: `connecting` until the
 * conversation is open, `live` while its snapshot follows every change,
 * `resyncing` while it is read again after a missed delta or a lost
 * connection, `error` when it could not be opened (`error` says why).
 */
export type ConversationHookStatus = "connecting" | "live" | "resyncing" | "error";

/** What useConversation gives a component. */
export interface UseConversation {
  /** connecting, live, resyncing or error (ConversationHookStatus). */
  status: ConversationHookStatus;
  /** The followed conversation (for append, switchBranch, infer); null while it opens. */
  conversation: Conversation | null;
  /** Its snapshot; null until it has one. */
  snapshot: ConversationSnapshot | null;
  /** Why it could not be opened, or the worker's last rejection or failure about it. */
  error: Error | null;
  /** A reply is being written in the conversation. */
  isStreaming: boolean;
  /** send appends a user message and asks for the reply (Conversation.send). */
  send: (text: string) => Promise<void>;
  /** stop stops the reply being written (Conversation.stop). */
  stop: () => Promise<void>;
  /** regenerate asks for another reply, a new branch (Conversation.regenerate). */
  regenerate: () => Promise<void>;
  /** switchBranch shows branch `index` under `messageId` (Conversation.switchBranch); a failure lands in `error`. */
  switchBranch: (messageId: string, index: number) => Promise<void>;
  /** infer asks for the inference context (Conversation.infer); it rejects when the conversation is not open. */
  infer: <F extends InferenceFormat = InferenceFormat>(opts?: InferOptions<F>) => Promise<InferenceContextFor<F>>;
}

type HeldState = Pick<UseConversation, "conversation" | "snapshot" | "error" | "status">;

/**
 * useConversation follows conversation `id` on `nc` while the component is
 * mounted (and re-opens it when nc or id change); null nc or id follows
 * nothing. `opts` are read when it opens.
 */
export function useConversation(nc: NatsConnection | null, id: string | null, opts?: ConversationOptions): UseConversation {
  const [state, setState] = useState<HeldState>({ conversation: null, snapshot: null, error: null, status: "connecting" });
  useEffect(() => {
    setState({ conversation: null, snapshot: null, error: null, status: "connecting" });
    if (!nc || !id) return;
    let conv: Conversation | null = null;
    let gone = false;
    openConversation(nc, id, opts).then(
      (c) => {
        if (gone) {
          c.close();
          return;
        }
        conv = c;
        setState({ conversation: c, snapshot: c.snapshot, error: null, status: c.status });
        c.subscribe((snapshot) => setState((s) => ({ ...s, snapshot })));
        c.onError((error) => setState((s) => ({ ...s, error })));
        c.onStatus((status) => setState((s) => ({ ...s, status })));
      },
      (error: Error) => !gone && setState({ conversation: null, snapshot: null, error, status: "error" }),
    );
    return () => {
      gone = true;
      conv?.close();
    };
    // opts are read on open only: an object literal would re-open on every render.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [nc, id]);
  const conv = state.conversation;
  const fail = (error: Error) => setState((s) => ({ ...s, error }));
  const send = useCallback(async (text: string) => void (await conv?.send(text).catch(fail)), [conv]);
  const stop = useCallback(async () => void (await conv?.stop().catch(fail)), [conv]);
  const regenerate = useCallback(async () => void (await conv?.regenerate().catch(fail)), [conv]);
  const switchBranch = useCallback(
    async (messageId: string, index: number) => void (await conv?.switchBranch(messageId, index).catch(fail)),
    [conv],
  );
  const infer = useCallback(
    <F extends InferenceFormat = InferenceFormat>(opts?: InferOptions<F>): Promise<InferenceContextFor<F>> =>
      conv ? conv.infer(opts) : Promise.reject(new Error("conversation not open")),
    [conv],
  );
  const isStreaming = state.snapshot ? streamingMessage(state.snapshot.flatList) !== undefined : false;
  return { ...state, isStreaming, send, stop, regenerate, switchBranch, infer };
}
