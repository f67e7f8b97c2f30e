package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDoctor: the report and its exit status for a healthy conversation, a
// stale branch index and bad input; --fix prints the repaired document,
// which the doctor then finds healthy.
func TestDoctor(t *testing.T) {
	healthy := `[{"id":"u1","role":"user","content":"q","createdAt":1},{"id":"a1","parentId":"u1","role":"assistant","content":"a","createdAt":2}]`
	code, out, errs := run(t, healthy, "doctor")
	if code != 0 {
		t.Fatalf("healthy: exit %d: %s", code, errs)
	}
	var rep struct {
		HiddenCount int `json:"hiddenCount"`
		Findings    []struct {
			Kind   string         `json:"kind"`
			Repair map[string]any `json:"repair"`
		} `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.HiddenCount != 0 || len(rep.Findings) != 0 {
		t.Fatalf("healthy: %v %s", err, out)
	}

	stale := `{"messages":[
		{"id":"u1","role":"user","content":"q","createdAt":0,"metadata":{"activeBranchIndex":2}},
		{"id":"a1","parentId":"u1","role":"assistant","content":"first try","createdAt":10},
		{"id":"a2","parentId":"u1","role":"assistant","content":"second try","createdAt":100}]}`
	code, out, errs = run(t, stale, "doctor")
	if code != 3 {
		t.Fatalf("stale index: exit %d, want 3: %s", code, errs)
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.HiddenCount != 2 || len(rep.Findings) != 1 ||
		rep.Findings[0].Kind != "stale-branch-index" || rep.Findings[0].Repair["index"] != float64(1) {
		t.Fatalf("stale index: %v %s", err, out)
	}

	code, fixed, errs := run(t, stale, "doctor", "--fix")
	if code != 3 {
		t.Fatalf("--fix: exit %d, want 3: %s", code, errs)
	}
	var doc struct {
		Messages []map[string]any `json:"messages"`
		Groups   []any            `json:"messageGroups"`
	}
	if err := json.Unmarshal([]byte(fixed), &doc); err != nil || len(doc.Messages) != 3 || doc.Groups == nil {
		t.Fatalf("--fix: %v %s", err, fixed)
	}
	if md := doc.Messages[0]["metadata"].(map[string]any); md["activeBranchIndex"] != float64(1) {
		t.Fatalf("--fix: metadata %v", md)
	}
	if code, out, errs := run(t, fixed, "doctor"); code != 0 {
		t.Fatalf("repaired document: exit %d: %s %s", code, out, errs)
	}

	code, _, errs = run(t, `{"nope":1}`, "doctor")
	if code != 1 || !strings.Contains(errs, "convctl doctor") {
		t.Fatalf("bad input: exit %d, stderr %q", code, errs)
	}
	if code, _, _ = run(t, ``, "doctor", "a", "b"); code != 2 {
		t.Fatalf("two files: exit %d, want 2", code)
	}
}

// TestDoctorAsksTheWorker sends a conversation whose branch index hides
// its replies, then asks the worker for its diagnosis.
func TestDoctorAsksTheWorker(t *testing.T) {
	startWorker(t)
	doc := `{"messages":[{"id":"u1","role":"user","content":"hi","createdAt":1,"metadata":{"activeBranchIndex":2}},` +
		`{"id":"a1","role":"assistant","content":"one","parentId":"u1","createdAt":2},` +
		`{"id":"a2","role":"assistant","content":"two","parentId":"u1","createdAt":3}]}`
	if code, _, errs := convctl(t, doc, "send", "--all", "--wait", "doc"); code != 0 {
		t.Fatalf("send: %d %s", code, errs)
	}
	code, out, errs := convctl(t, "", "doctor", "--conversation", "doc")
	if code != doctorFindings || !strings.Contains(out, `"stale-branch-index"`) {
		t.Fatalf("doctor --conversation: exit %d\n%s\n%s", code, out, errs)
	}
	if code, _, errs := convctl(t, "", "doctor", "--conversation", "never-seen"); code != doctorBadInput || !strings.Contains(errs, "not_found") {
		t.Errorf("unknown conversation: exit %d %s", code, errs)
	}
}
