package conversation

import (
	"strings"
	"testing"
)

// signalChain is upstream's shape: u1 → W (a background tool call) → toolW
// → the turns a stdout signal woke. extra holds those turns.
func signalChain(extra string) string {
	return `[
	{"content":"go","createdAt":0,"id":"u1","role":"user","updatedAt":0},
	{"agentId":"a","content":"两个探查 agent 在跑","createdAt":100,"id":"W","parentId":"u1","role":"assistant","updatedAt":100,
	 "tools":[{"apiName":"Bash","arguments":"{}","id":"bashwait","identifier":"claude-code","type":"default"}]},
	{"content":"Command running in background","createdAt":110,"id":"toolW","parentId":"W","role":"tool","tool_call_id":"bashwait","updatedAt":110},` + extra + `]`
}

func signalMetaJSON(promoted bool) string {
	s := `{"signal":{"sequence":1,"sourceToolCallId":"bashwait","sourceToolName":"Bash","type":"tool-stdout"}`
	if promoted {
		s += `,"signalPromoted":true`
	}
	return s + "}"
}

// callbackIDs returns the ids in signalCallbacks[].callbacks[] of the first
// assistantGroup of a rendered flat list.
func callbackIDs(flat []any) []string {
	var out []string
	for _, e := range flat {
		g, _ := e.(map[string]any)
		if g["role"] != "assistantGroup" {
			continue
		}
		blocks, _ := g["signalCallbacks"].([]any)
		for _, b := range blocks {
			bm, _ := b.(map[string]any)
			cbs, _ := bm["callbacks"].([]any)
			for _, c := range cbs {
				if cm, ok := c.(map[string]any); ok {
					id, _ := cm["id"].(string)
					out = append(out, id)
				}
			}
		}
		break
	}
	return out
}

// TestParseSignalTurnWithProse ports upstream
// transformation/__tests__/signalTurnWithProse.pipeline.test.ts (there run
// on FlatListBuilder alone, here through Parse): a toolless turn tagged
// with a signal whose writer marked it metadata.signalPromoted is an
// answer on the main chain, not a callback.
//
// The 2026-08-23 reference, which Parse follows, does not read
// signalPromoted: a promoted turn is a callback like any other signal turn.
// Where that changes the outcome, the subtest asserts Parse's (the
// reference's) result and names upstream's.
func TestParseSignalTurnWithProse(t *testing.T) {
	plan := func(promoted bool, parent string) string {
		return `{"agentId":"a","content":"PLANMARKER 探查回来了，方案可以落到文件级","createdAt":120,"id":"PLAN","metadata":` + signalMetaJSON(promoted) + `,"parentId":"toolW","role":"assistant","updatedAt":120},
		{"agentId":"a","content":"TAILMARKER 开做，先切分支","createdAt":130,"id":"NEXT","parentId":"` + parent + `","role":"assistant","updatedAt":130}`
	}
	t.Run("renders a promoted answer on the main chain and keeps the following turn", func(t *testing.T) {
		flat, text := renderedFlat(t, parseDoc(t, signalChain(plan(true, "PLAN"))))
		if !strings.Contains(text, "PLANMARKER") {
			t.Fatalf("PLAN not rendered: %s", text)
		}
		// Upstream: PLAN is not among the callbacks, and TAILMARKER (NEXT,
		// under PLAN) is rendered. Reference: PLAN is a callback and NEXT,
		// which hangs off a callback turn, is not rendered.
		if cbs := callbackIDs(flat); len(cbs) != 1 || cbs[0] != "PLAN" {
			t.Fatalf("callbacks %v, want the reference's [PLAN]", cbs)
		}
		if strings.Contains(text, "TAILMARKER") {
			t.Fatalf("NEXT rendered; the reference drops it: %s", text)
		}
	})
	t.Run("keeps a toolless, UNPROMOTED signal note as a callback", func(t *testing.T) {
		flat, _ := renderedFlat(t, parseDoc(t, signalChain(
			`{"agentId":"a","content":"（计时器到点了，没有新信息。）","createdAt":120,"id":"NOTE","metadata":`+signalMetaJSON(false)+`,"parentId":"toolW","role":"assistant","updatedAt":120}`)))
		if cbs := callbackIDs(flat); len(cbs) != 1 || cbs[0] != "NOTE" {
			t.Fatalf("callbacks %v, want [NOTE]", cbs)
		}
	})
	t.Run("does not drop the continuation for a legacy UNPROMOTED answer (no regression)", func(t *testing.T) {
		flat, text := renderedFlat(t, parseDoc(t, signalChain(plan(false, "W"))))
		if !strings.Contains(text, "TAILMARKER") {
			t.Fatalf("NEXT dropped: %s", text)
		}
		if cbs := callbackIDs(flat); !strings.Contains(strings.Join(cbs, ","), "PLAN") {
			t.Fatalf("callbacks %v, want PLAN among them", cbs)
		}
	})
}
