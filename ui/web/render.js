// Rendering of a snapshot's flatList: one <li class="entry"> per entry, in
// order, with data-id set to the entry's id. Each role has its renderer;
// unknown roles get a plain bubble.

import { el } from "./dom.js";

// renderFlatList replaces the children of list with the entries.
// onBranch(entry, index) is called when the branch switcher is used.
export function renderFlatList(list, flatList, onBranch) {
  list.replaceChildren(...flatList.map((entry) => renderEntry(entry, onBranch)));
}

const renderers = {
  user: (e) => bubble(e),
  assistant: (e) => bubble(e, messageBody(e)),
  assistantGroup: (e) => group(e),
  supervisor: (e) => group(e, "supervisor"),
  compare: (e) => compare(e),
  tasks: (e) => tasks(e.tasks, "tasks"),
  groupTasks: (e) => tasks(e.tasks, "group tasks"),
  task: (e) => tasks([e], "task"),
  taskCallback: (e) => taskCallback(e),
  compressedGroup: (e) => compressed(e),
};

function renderEntry(entry, onBranch) {
  const render = renderers[entry.role] || ((e) => bubble(e));
  const dataset = { id: entry.id };
  if (entry.streamStatus) dataset.stream = entry.streamStatus;
  return el("li", { class: `entry role-${entry.role}`, dataset },
    render(entry),
    entry.streamStatus && entry.streamStatus !== "done" && entry.streamStatus !== "streaming"
      ? el("span", { class: "stream-status" }, entry.streamStatus)
      : null,
    entry.branch ? branchSwitcher(entry, onBranch) : null);
}

// branchSwitcher is ‹ n/count ›; it switches the parent's active branch.
function branchSwitcher(entry, onBranch) {
  const { activeBranchIndex: active, count } = entry.branch;
  const index = Number.isInteger(active) ? active : count; // fractional: a branch being created
  const canSwitch = entry.parentId != null && count > 1;
  const go = (to) => () => onBranch(entry, to);
  return el("div", { class: "branch", "aria-label": "branches" },
    el("button", { type: "button", class: "branch-prev", title: "previous branch",
      disabled: !canSwitch || index <= 0, onclick: go(index - 1) }, "‹"),
    el("span", { class: "branch-label" }, `${Math.min(index + 1, count)}/${count}`),
    el("button", { type: "button", class: "branch-next", title: "next branch",
      disabled: !canSwitch || index >= count - 1, onclick: go(index + 1) }, "›"));
}

function who(m) {
  return [m.role, m.agentId, m.model].filter(Boolean).join(" · ");
}

function bubble(m, body = messageBody(m)) {
  return el("div", { class: `bubble ${m.role}` },
    el("div", { class: "who" }, who(m), el("span", { class: "mid" }, m.id)),
    body);
}

// messageBody is a message's reasoning, content and tool calls.
function messageBody(m) {
  return [
    m.reasoning && m.reasoning.content
      ? el("details", { class: "reasoning" }, el("summary", {}, "reasoning"), el("div", { class: "text" }, m.reasoning.content))
      : null,
    m.content ? el("div", { class: "text" }, textOf(m.content)) : null,
    Array.isArray(m.tools) && m.tools.length ? el("ul", { class: "tools" }, m.tools.map(toolCall)) : null,
  ];
}

function textOf(content) {
  return typeof content === "string" ? content : JSON.stringify(content);
}

function toolCall(t) {
  const name = [t.identifier, t.apiName || (t.function && t.function.name)].filter(Boolean).join(" / ");
  const args = t.arguments ?? (t.function && t.function.arguments);
  return el("li", { class: "tool", dataset: { id: t.id } },
    el("div", { class: "tool-name" }, "⚙ ", name || t.id),
    args ? el("code", { class: "tool-args" }, args) : null,
    t.result
      ? el("div", { class: "tool-result" }, el("span", { class: "label" }, "result"), textOf(t.result.content ?? ""))
      : el("div", { class: "tool-result pending" }, "no result yet"));
}

// group is an assistantGroup (or supervisor): one bubble whose children
// blocks are the assistant turns with their tools, council and callbacks.
function group(g, badge) {
  return el("div", { class: `bubble group ${badge || "assistant"}` },
    el("div", { class: "who" }, badge ? el("span", { class: "badge" }, badge) : null, who(g),
      el("span", { class: "mid" }, g.id)),
    (g.children || []).map((c) => el("div", { class: "block", dataset: { id: c.id } },
      messageBody(c),
      Array.isArray(c.council) ? council(c.council) : null)),
    Array.isArray(g.taskCompletions) && g.taskCompletions.length
      ? el("div", { class: "completions" }, el("div", { class: "label" }, "task completions"),
        g.taskCompletions.map((c) => el("div", { class: "text" }, textOf(c.content))))
      : null,
    Array.isArray(g.signalCallbacks) ? g.signalCallbacks.map(signalCallbacks) : null);
}

function council(members) {
  return el("div", { class: "council" },
    el("div", { class: "label" }, `council · ${members.length} members`),
    el("div", { class: "columns" }, members.map((m) => bubble(m))));
}

function signalCallbacks(s) {
  return el("div", { class: "signal", dataset: { id: s.sourceToolMessageId } },
    el("div", { class: "label" }, `↩ signal callbacks from ${s.sourceToolName || "tool"} (${s.sourceToolCallId || ""})`),
    (s.callbacks || []).map((c) => el("div", { class: "block" }, messageBody(c))));
}

function compare(c) {
  return el("div", { class: "compare" },
    el("div", { class: "label" }, "compare"),
    el("div", { class: "columns" }, (c.columns || []).map((col) => {
      const active = col.some((m) => m.id === c.activeColumnId);
      return el("div", { class: `column${active ? " active" : ""}` },
        col.map((m) => m.role === "assistantGroup" ? group(m) : bubble(m)));
    })));
}

function tasks(list, label) {
  return el("div", { class: "tasks" },
    el("div", { class: "label" }, `${label} · ${list.length}`),
    list.map((t) => {
      const d = t.taskDetail || {};
      const title = d.title || (t.metadata && (t.metadata.taskTitle || t.metadata.instruction)) || t.id;
      return el("details", { class: "task", dataset: { id: t.id } },
        el("summary", {}, el("span", { class: `status ${d.status || ""}` }, d.status || "task"), " ", title),
        el("div", { class: "text" }, textOf(t.content || "")));
    }));
}

function taskCallback(m) {
  const cb = (m.metadata && m.metadata.taskCallback) || {};
  return el("div", { class: "callback" },
    el("div", { class: "label" }, `task callback ${cb.taskId || ""} ${cb.reason ? "· " + cb.reason : ""}`),
    el("div", { class: "text" }, textOf(m.content || "")));
}

function compressed(m) {
  const n = (m.compressedMessages || []).length;
  return el("details", { class: "compressed" },
    el("summary", {}, `${n} earlier messages compressed`),
    el("div", { class: "text" }, textOf(m.content || "")));
}
