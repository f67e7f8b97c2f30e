package conversation

import (
	"maps"
	"math"
	"strings"
)

// Virtual messages: the flat list shows some runs of messages as one entry
// (an assistant run with its tools, compare columns, a fan of tasks, a
// supervisor's reply). They are plain JSON objects built here.

// nonEmptyList is JavaScript's `v && v.length > 0` for a JSON value.
func nonEmptyList(v any) bool {
	switch t := v.(type) {
	case []any:
		return len(t) > 0
	case string:
		return t != ""
	}
	return false
}

// orEmpty is JavaScript's `v || ”`.
func orEmpty(v any) any {
	if truthy(v) {
		return v
	}
	return ""
}

// nullishEmpty is JavaScript's `v ?? ”` for a field that may be absent.
func nullishEmpty(v any, present bool) any {
	if !present || v == nil {
		return ""
	}
	return v
}

// jsMin and jsMax are Math.min and Math.max: NaN wins.
func jsMin(xs []float64) float64 {
	r := math.Inf(1)
	for _, x := range xs {
		if math.IsNaN(x) {
			return x
		}
		if x < r {
			r = x
		}
	}
	return r
}

func jsMax(xs []float64) float64 {
	r := math.Inf(-1)
	for _, x := range xs {
		if math.IsNaN(x) {
			return x
		}
		if x > r {
			r = x
		}
	}
	return r
}

// contentBlock builds the content block of one assistant step: its text,
// attachments, reasoning, usage and the metadata that is not usage.
func contentBlock(vc *viewCache, m *Message) map[string]any {
	names := [...]string{"content", "error", "fileList", "imageList", "metadata", "performance", "reasoning", "usage"}
	f := vc.pick(m, names[:])
	metaUsage, metaPerf := splitMetadata(f["metadata"])
	b := map[string]any{"content": orEmpty(f["content"]), "id": m.ID()}
	copyAttachments(b, f)
	if b["performance"] == nil && metaPerf != nil {
		b["performance"] = metaPerf
	}
	if b["usage"] == nil && metaUsage != nil {
		b["usage"] = metaUsage
	}
	if truthy(f["metadata"]) {
		if other := otherMetadata(f["metadata"]); len(other) > 0 {
			b["metadata"] = other
		}
	}
	return b
}

// copyAttachments copies to a content block what a message carries besides
// its text: a truthy error, reasoning, usage and performance, and non-empty
// file and image lists.
func copyAttachments(b, f map[string]any) {
	for _, k := range [...]string{"error", "performance", "reasoning", "usage"} {
		if truthy(f[k]) {
			b[k] = f[k]
		}
	}
	for _, k := range [...]string{"fileList", "imageList"} {
		if nonEmptyList(f[k]) {
			b[k] = f[k]
		}
	}
}

// toolsWithResults attaches each tool call of an assistant to its result.
func toolsWithResults(vc *viewCache, m *Message, results map[key]*Message) []any {
	calls, _ := vc.pick(m, []string{"tools"})["tools"].([]any)
	// The fields of a tool result read below.
	resultFields := [...]string{"content", "error", "pluginError", "pluginIntervention", "pluginState"}
	out := make([]any, 0, len(calls))
	for _, call := range calls {
		obj, ok := call.(map[string]any)
		if !ok {
			out = append(out, call)
			continue
		}
		tm := results[keyOf(obj, "id")]
		if tm == nil {
			out = append(out, call)
			continue
		}
		tf := vc.pick(tm, resultFields[:])
		result := map[string]any{"content": orEmpty(tf["content"]), "id": tm.ID()}
		if truthy(tf["error"]) {
			result["error"] = tf["error"]
		}
		if truthy(tf["pluginError"]) {
			result["error"] = tf["pluginError"]
		}
		if truthy(tf["pluginState"]) {
			result["state"] = tf["pluginState"]
		}
		joined := make(map[string]any, len(obj)+3)
		maps.Copy(joined, obj)
		delete(joined, "intervention")
		if v, ok := tf["pluginIntervention"]; ok {
			joined["intervention"] = v
		}
		joined["result"] = result
		joined["result_msg_id"] = tm.ID()
		out = append(out, joined)
	}
	return out
}

// assistantGroupMessage builds the virtual message of an assistant run.
func (w *flatWalker) assistantGroupMessage(chain, tools []int32, blocks []signalBlock, completions []int32, council []any) map[string]any {
	ix := w.ix
	if len(chain) == 0 {
		// Only reachable when the run's head was already shown; the result
		// is the empty group the reference builds in that case.
		return map[string]any{"children": []any{}, "content": "", "role": "assistantGroup"}
	}
	results := make(map[key]*Message, len(tools))
	for _, t := range tools {
		tm := ix.msg(t)
		if tm.toolCallID().truthy() {
			results[tm.toolCallID()] = tm
		}
	}

	children := make([]map[string]any, 0, len(chain)+1)
	for _, a := range chain {
		am := ix.msg(a)
		b := contentBlock(ix.views, am)
		if withResults := toolsWithResults(ix.views, am, results); len(withResults) > 0 {
			b["tools"] = withResults
		}
		children = append(children, b)
	}
	first := ix.msg(chain[0])
	if len(council) > 1 {
		children = append(children, map[string]any{"content": "", "council": council, "id": "council-" + first.ID()})
	}

	usage, perf := aggregateMetadata(children)
	groupMeta := map[string]any{}
	for _, c := range children {
		if md, ok := c["metadata"].(map[string]any); ok {
			maps.Copy(groupMeta, md)
		}
	}
	if len(groupMeta) > 0 {
		if md, ok := children[0]["metadata"].(map[string]any); ok {
			maps.Copy(md, groupMeta)
		} else {
			children[0]["metadata"] = maps.Clone(groupMeta)
		}
		for _, c := range children[1:] {
			delete(c, "metadata")
		}
	}

	out := ix.views.object(first)
	childList := make([]any, len(children))
	for i, c := range children {
		childList[i] = c
	}
	out["children"] = childList
	out["content"] = ""
	supervisor := first.flags&flagSupervisor != 0
	if supervisor {
		out["role"] = "supervisor"
	} else {
		out["role"] = "assistantGroup"
	}
	delete(out, "imageList")
	delete(out, "metadata")
	delete(out, "reasoning")
	delete(out, "tools")
	if perf != nil {
		out["performance"] = perf
	}
	if usage != nil {
		out["usage"] = usage
	}
	if len(groupMeta) > 0 {
		out["metadata"] = groupMeta
	}
	if supervisor {
		md := maps.Clone(groupMeta)
		md["isSupervisor"] = true
		md["orchestrationRole"] = "supervisor"
		out["metadata"] = md
	}

	if len(blocks) > 0 {
		list := make([]any, 0, len(blocks))
		for _, bl := range blocks {
			cbs := make([]any, 0, len(bl.callbacks))
			for _, c := range bl.callbacks {
				cm := ix.msg(c)
				cf := ix.views.view(cm)
				content, has := cf["content"]
				cb := map[string]any{"content": nullishEmpty(content, has), "id": cm.ID()}
				if v := cf["model"]; v != nil {
					cb["model"] = v
				}
				if v := cf["provider"]; v != nil {
					cb["provider"] = v
				}
				if s := cm.signal(); s != nil && s.hasSequenceRaw {
					cb["sequence"] = s.sequenceRaw
				}
				cbs = append(cbs, cb)
			}
			entry := map[string]any{"callbacks": cbs, "sourceToolMessageId": ix.msg(bl.source).ID()}
			if bl.first.hasSourceCall {
				entry["sourceToolCallId"] = bl.first.sourceToolCall
			}
			if bl.first.hasSourceName {
				entry["sourceToolName"] = bl.first.sourceToolName
			}
			list = append(list, entry)
		}
		out["signalCallbacks"] = list
	}

	if len(completions) > 0 {
		list := make([]any, 0, len(completions))
		for _, c := range completions {
			cm := ix.msg(c)
			f := ix.views.view(cm)
			content, has := f["content"]
			b := map[string]any{"content": nullishEmpty(content, has), "id": cm.ID()}
			copyAttachments(b, f)
			list = append(list, b)
		}
		out["taskCompletions"] = list
	}
	return out
}

// supervisorMessage builds the virtual message of a supervisor's reply
// without tools: its content moves into a single child block.
func supervisorMessage(vc *viewCache, m *Message) map[string]any {
	b := contentBlock(vc, m)
	out := vc.object(m)
	meta := out["metadata"]
	out["children"] = []any{b}
	out["content"] = ""
	out["role"] = "supervisor"
	delete(out, "imageList")
	delete(out, "metadata")
	delete(out, "reasoning")
	delete(out, "tools")
	if p, ok := b["performance"]; ok {
		out["performance"] = p
	}
	if u, ok := b["usage"]; ok {
		out["usage"] = u
	}
	md := map[string]any{"isSupervisor": true, "orchestrationRole": "supervisor"}
	if truthy(meta) {
		maps.Copy(md, otherMetadata(meta))
	}
	out["metadata"] = md
	return out
}

// withBranch returns a copy of fields that carries a branch indicator.
func withBranch(fields map[string]any, count, active int) map[string]any {
	out := make(map[string]any, len(fields)+1)
	maps.Copy(out, fields)
	out["branch"] = map[string]any{"activeBranchIndex": float64(active), "count": float64(count)}
	return out
}

// spanOf returns Math.min of createdAt and Math.max of updatedAt over msgs.
func (w *flatWalker) spanOf(msgs []int32) (created, updated any) {
	cs := make([]float64, len(msgs))
	us := make([]float64, len(msgs))
	for i, m := range msgs {
		cs[i] = w.ix.msg(m).createdAt
		us[i] = w.ix.msg(m).updatedAt
	}
	return jsNumber(jsMin(cs)), jsNumber(jsMax(us))
}

// compareFromGroup builds the compare message of a message group's members.
func (w *flatWalker) compareFromGroup(g *MessageGroup, members []int32) map[string]any {
	cols := make([]any, len(members))
	out := map[string]any{"content": "", "role": "compare"}
	for i, m := range members {
		mm := w.ix.msg(m)
		cols[i] = []any{w.ix.views.view(mm)}
		if _, set := out["activeColumnId"]; !set && mm.flags&flagActiveColumn != 0 {
			out["activeColumnId"] = mm.ID()
		}
	}
	out["columns"] = cols
	out["createdAt"], out["updatedAt"] = w.spanOf(members)
	extra := map[string]any{}
	if v, ok := g.fields["mode"]; ok {
		extra["groupMode"] = v
	}
	if v, ok := g.fields["parentMessageId"]; ok {
		extra["parentMessageId"] = v
	}
	out["extra"] = extra
	if v, ok := g.fields["id"]; ok {
		out["id"] = v
	}
	return out
}

// tasksMessage builds the virtual message of several tasks spawned from
// parent p: "tasks" when one agent runs them, "groupTasks" for several.
func (w *flatWalker) tasksMessage(p int32, tasks []int32, role string) map[string]any {
	sorted := append([]int32(nil), tasks...)
	w.col.sortByCreated(sorted)
	ids := make([]string, len(sorted))
	list := make([]any, len(sorted))
	for i, t := range sorted {
		w.processed.add(t)
		ids[i] = w.ix.msg(t).ID()
		list[i] = w.ix.views.view(w.ix.msg(t))
	}
	parentID := w.ix.msg(p).ID()
	out := map[string]any{
		"content": "",
		"extra":   map[string]any{"parentMessageId": parentID},
		"id":      role + "-" + parentID + "-" + strings.Join(ids, "-"),
		"role":    role,
		"tasks":   list,
	}
	out["createdAt"], out["updatedAt"] = w.spanOf(sorted)
	return out
}
