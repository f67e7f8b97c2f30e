// The contextTree as nested lists, walked with an explicit stack (deep
// conversations must not exhaust the call stack).

import { el } from "./dom.js";

// renderTree replaces the children of root with the tree of nodes.
export function renderTree(root, nodes) {
  const top = el("ul", { class: "tree-list" });
  const stack = [[nodes, top]];
  while (stack.length) {
    const [list, ul] = stack.pop();
    for (const n of list) {
      const li = el("li", { class: `node ${n.type}`, dataset: { id: n.id } }, label(n));
      ul.append(li);
      for (const [name, kids, active] of childLists(n)) {
        const sub = el("ul", { class: "tree-list" });
        li.append(name ? el("div", { class: active ? "sub active" : "sub" }, name, sub) : sub);
        stack.push([kids, sub]);
      }
    }
  }
  root.replaceChildren(top);
}

function label(n) {
  switch (n.type) {
    case "message":
      return el("span", {}, n.id, n.tools ? el("span", { class: "dim" }, ` tools: ${n.tools.join(", ")}`) : null);
    case "branch":
      return el("span", {}, el("b", {}, "branch"), ` of ${n.parentMessageId}, active ${n.activeBranchIndex + 1}/${n.branches.length}`);
    case "compare":
      return el("span", {}, el("b", {}, "compare"), ` after ${n.messageId}, active ${n.activeColumnId || "-"}`);
    case "agentCouncil":
      return el("span", {}, el("b", {}, "council"), ` on ${n.messageId}`);
    case "signalCallbacks":
      return el("span", {}, el("b", {}, "signal callbacks"), ` from ${n.sourceToolName || n.sourceToolMessageId}`);
    default:
      return el("span", {}, el("b", {}, n.type), ` ${n.id}`);
  }
}

// childLists returns the nested node lists of n, each with a label.
function childLists(n) {
  switch (n.type) {
    case "branch":
      return n.branches.map((b, i) => [`${i === n.activeBranchIndex ? "▸ active " : ""}#${i + 1}`, b, i === n.activeBranchIndex]);
    case "compare":
      return n.columns.map((c, i) => [`column ${i + 1}`, c, c[0]?.id === n.activeColumnId]);
    case "agentCouncil":
      return [["", n.members || []]];
    case "signalCallbacks":
      return [["", n.callbacks || []]];
    default:
      return n.children ? [["", n.children]] : [];
  }
}
