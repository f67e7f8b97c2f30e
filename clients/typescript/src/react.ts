// useConversation: a React hook over openConversation, in its own subpath
// export (@convstream/client/react) so that the main entry needs no React.

import { useCallback, useEffect, useState } from "react";
import type { NatsConnection } from "@nats-io/nats-core";
import { openConversation, type Conversation, type ConversationOptions } from "./conversation.js";
import { streamingMessage, type ConversationSnapshot } from "./snapshot.js";

/** What useConversation gives a component. */
export interface UseConversation {
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
}

type HeldState = Pick<UseConversation, "conversation" | "snapshot" | "error">;

/**
 * useConversation follows conversation `id` on `nc` while the component is
 * mounted (and re-opens it when nc or id change); null nc or id follows
 * nothing. `opts` are read when it opens.
 */
export function useConversation(nc: NatsConnection | null, id: string | null, opts?: ConversationOptions): UseConversation {
  const [state, setState] = useState<HeldState>({ conversation: null, snapshot: null, error: null });
  useEffect(() => {
    setState({ conversation: null, snapshot: null, error: null });
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
        setState({ conversation: c, snapshot: c.snapshot, error: null });
        c.subscribe((snapshot) => setState((s) => ({ ...s, snapshot })));
        c.onError((error) => setState((s) => ({ ...s, error })));
      },
      (error: Error) => !gone && setState({ conversation: null, snapshot: null, error }),
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
  const isStreaming = state.snapshot ? streamingMessage(state.snapshot.flatList) !== undefined : false;
  return { ...state, isStreaming, send, stop, regenerate };
}
