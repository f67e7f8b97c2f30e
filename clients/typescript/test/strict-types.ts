// strict-types is compiled, not run: `npm run typecheck` (tsc, strict and
// noUncheckedIndexedAccess, tsconfig.json) must accept it. It uses the
// snapshot's types as a chat UI does, with no cast: a branch switcher on
// the flatList, a walk of the contextTree narrowed by node type, the
// React hook's status and bound actions, and inference contexts whose
// request is typed by the format asked for (or narrowed by `format`).

import type {
  AnthropicMessagesRequest,
  BranchNode,
  ContextNode,
  Conversation,
  ConversationSnapshot,
  InferenceContextV1,
  Message,
} from "../src/index.js";
import type { UseConversation } from "../src/react.js";

/** A switcher's label and targets for a flatList entry, or null without siblings. */
export function branchSwitcher(m: Message): { label: string; prev: number | null; next: number | null } | null {
  if (!m.branch) return null;
  const { activeBranchIndex, count } = m.branch;
  return {
    label: `${activeBranchIndex + 1}/${count}`,
    prev: activeBranchIndex > 0 ? activeBranchIndex - 1 : null,
    next: activeBranchIndex + 1 < count ? activeBranchIndex + 1 : null,
  };
}

/** The ids of the messages on the shown path of a contextTree, each node narrowed by its type. */
export function shownMessageIds(nodes: readonly ContextNode[]): string[] {
  const out: string[] = [];
  const stack: ContextNode[] = [...nodes].reverse();
  for (let n = stack.pop(); n !== undefined; n = stack.pop()) {
    switch (n.type) {
      case "message":
        out.push(n.id);
        break;
      case "assistantGroup":
      case "tasks":
        stack.push(...[...n.children].reverse());
        break;
      case "agentCouncil":
        stack.push(...[...n.members].reverse());
        break;
      case "compare": {
        const active = n.columns.find((c) => c[0]?.id === n.activeColumnId) ?? n.columns[0] ?? [];
        stack.push(...[...active].reverse());
        break;
      }
      case "branch": {
        const shown: ContextNode[] = n.branches[n.activeBranchIndex] ?? [];
        stack.push(...[...shown].reverse());
        break;
      }
      case "signalCallbacks":
        stack.push(...[...n.callbacks].reverse());
        break;
      default: {
        const never: never = n; // every node type is handled
        return never;
      }
    }
  }
  return out;
}

/** The branch points of a snapshot's tree, for a "3 versions" badge. */
export function branchPoints(s: ConversationSnapshot): BranchNode[] {
  return s.contextTree.filter((n): n is BranchNode => n.type === "branch");
}

/** What a chat view does with the hook: a status line, a branch switch, a provider call. */
export async function chatView(h: UseConversation, m: Message): Promise<string> {
  const status: string = {
    connecting: "connecting…",
    live: "",
    resyncing: "catching up…",
    error: `error: ${h.error?.message ?? ""}`,
  }[h.status];
  const sw = branchSwitcher(m);
  if (sw?.next != null && typeof m.parentId === "string") await h.switchBranch(m.parentId, sw.next);
  const ctx = await h.infer({ leafId: m.id, format: "openai.chat" });
  const body = { model: "gpt-4o", messages: ctx.messages, ...ctx.request };
  return `${status} ${JSON.stringify(body).length}`;
}

/** What a provider call reads of each format's request, with no cast. */
export async function providerCalls(conv: Conversation): Promise<string[]> {
  const out: string[] = [];
  const chat = await conv.infer({ format: "openai.chat" });
  for (const m of chat.request?.messages ?? []) {
    for (const c of m.tool_calls ?? []) out.push(`${m.role} calls ${c.function.name}(${c.function.arguments})`);
    if (m.role === "tool") out.push(`result of ${m.tool_call_id ?? "?"}`);
  }
  const anthropic = await conv.infer({ format: "anthropic.messages" });
  const body: AnthropicMessagesRequest | undefined = anthropic.request;
  out.push(`max_tokens ${body?.max_tokens ?? 0}`);
  for (const m of body?.messages ?? []) {
    const blocks = typeof m.content === "string" ? [] : m.content;
    for (const b of blocks) if (b.type === "tool_use") out.push(`${m.role} uses ${b.name ?? "?"}`);
  }
  const gemini = await conv.infer({ format: "gemini", leafId: "m1" });
  for (const c of gemini.request?.contents ?? []) {
    for (const p of c.parts) out.push(p.functionCall ? `${c.role ?? "user"} calls ${p.functionCall.name}` : (p.text ?? ""));
  }
  const responses = await conv.infer({ format: "openai.responses" });
  for (const item of responses.request?.input ?? []) {
    if (item.type === "function_call") out.push(`call ${item.call_id ?? "?"}: ${item.name ?? "?"}`);
  }
  return out;
}

/** The request of a context of any format, narrowed by its format. */
export function requestSummary(ctx: InferenceContextV1): string {
  switch (ctx.format) {
    case "openai.chat":
      return `${ctx.request?.messages.length ?? 0} chat messages`;
    case "openai.responses":
      return `${ctx.request?.input.length ?? 0} input items`;
    case "anthropic.messages":
      return `${ctx.request?.messages.length ?? 0} messages, max_tokens ${ctx.request?.max_tokens ?? 0}`;
    case "gemini":
      return `${ctx.request?.contents.length ?? 0} contents`;
    case "raw": {
      const none: undefined = ctx.request; // raw has no provider body
      return `${ctx.messages.length} raw messages${none ?? ""}`;
    }
    default: {
      const never: never = ctx; // every format is handled
      return never;
    }
  }
}
