// strict-types is compiled, not run: `npm run typecheck` (tsc, strict and
// noUncheckedIndexedAccess, tsconfig.json) must accept it. It uses the
// snapshot's types as a chat UI does, with no cast: a branch switcher on
// the flatList, a walk of the contextTree narrowed by node type, and the
// React hook's status and bound actions.

import type { BranchNode, ContextNode, ConversationSnapshot, Message } from "../src/index.js";
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
