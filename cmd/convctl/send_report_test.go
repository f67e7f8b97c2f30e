package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestSendReportsRejections: without --wait, send still waits briefly for
// the worker's verdict, reports a rejection and exits 1; --no-wait does not.
func TestSendReportsRejections(t *testing.T) {
	startWorker(t)
	code, _, errOut := convctl(t, demo, "send", "--all", "demo")
	if code != 0 || !regexp.MustCompile(`sent 4, rejected 0, in \d`).MatchString(errOut) {
		t.Fatalf("send --all: %d\n%s", code, errOut)
	}
	code, out, errOut := convctl(t, "", "send", "--type", "deleted", "--id", "nope", "demo")
	if code != 1 || !strings.Contains(errOut, "rejected: not_found") || !strings.Contains(errOut, "sent 1, rejected 1") || !strings.Contains(out, `"sequence":5`) {
		t.Fatalf("rejected send: %d\n%s\n%s", code, out, errOut)
	}
	// A message without an id.
	code, _, errOut = convctl(t, `{"role":"user","content":"hi"}`, "send", "demo")
	if code != 1 || !strings.Contains(errOut, "rejected") {
		t.Fatalf("message without id: %d\n%s", code, errOut)
	}
	code, _, errOut = convctl(t, "", "send", "--type", "deleted", "--id", "nope", "--no-wait", "demo")
	if code != 0 || !strings.Contains(errOut, "sent 1, rejected 0") {
		t.Fatalf("--no-wait: %d\n%s", code, errOut)
	}
}

// TestSendWaitIsBrief: with no worker to apply the events, send waits
// --wait-rejections, not --timeout, and says where later rejections go.
func TestSendWaitIsBrief(t *testing.T) {
	stop := startWorker(t)
	stop()
	start := time.Now()
	code, _, errOut := convctl(t, `{"id":"m1","role":"user","content":"hi","parentId":null}`, "send", "--wait-rejections", "300ms", "demo")
	if code != 0 || !strings.Contains(errOut, "not applied within 300ms") || !strings.Contains(errOut, "convctl errors demo") {
		t.Fatalf("no worker: %d\n%s", code, errOut)
	}
	if d := time.Since(start); d > 30*time.Second { // no hang; generous for a loaded machine
		t.Errorf("took %s", d)
	}
}

// TestSendSuggestsAll: a whole conversation document without --all is
// refused, naming --all, and nothing is sent.
func TestSendSuggestsAll(t *testing.T) {
	for _, in := range []string{demo, `[{"id":"u1","role":"user","content":"x"}]`} {
		code, out, errOut := convctl(t, in, "send", "demo")
		if code != 2 || !strings.Contains(errOut, "--all") || out != "" {
			t.Errorf("%.20s: %d\n%s\n%s", in, code, out, errOut)
		}
	}
}

// TestWatchExplains: events stored that no worker applied, and a subject
// prefix nothing was created under, are said as such.
func TestWatchExplains(t *testing.T) {
	stop := startWorker(t)
	stop()
	if code, _, errOut := convctl(t, `{"id":"m1","role":"user","content":"hi","parentId":null}`, "send", "--no-wait", "stored"); code != 0 {
		t.Fatalf("send: %s", errOut)
	}
	code, _, errOut := convctl(t, "", "watch", "--once", "stored")
	if code != 1 || !strings.Contains(errOut, "events stored") || !strings.Contains(errOut, "no worker has applied them") {
		t.Fatalf("watch stored: %d\n%s", code, errOut)
	}
	// Following such a conversation waits, saying why nothing comes.
	wctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	var out, werr bytes.Buffer
	if code := dispatch(wctx, []string{"watch", "stored"}, nil, &out, &werr); code != 0 || !strings.Contains(werr.String(), "waiting:") || !strings.Contains(werr.String(), "no worker has applied them") {
		t.Fatalf("watch stored, following: %d\n%s", code, werr.String())
	}
	code, _, errOut = convctl(t, "", "watch", "--once", "never")
	if code != 1 || !strings.Contains(errOut, "unknown conversation") || strings.Contains(errOut, "no worker") {
		t.Fatalf("watch unknown: %d\n%s", code, errOut)
	}
	for _, args := range [][]string{
		{"watch", "--once", "--subject-prefix", "wrong", "stored"},
		{"watch", "--subject-prefix", "wrong", "stored"},
		{"errors", "--subject-prefix", "wrong", "stored"},
		{"send", "--subject-prefix", "wrong", "--id", "x", "--type", "deleted", "stored"},
	} {
		code, _, errOut := convctl(t, "", args...)
		if code != 1 || !strings.Contains(errOut, `subject prefix "wrong"`) || !strings.Contains(errOut, "--subject-prefix") {
			t.Errorf("%v: %d\n%s", args, code, errOut)
		}
	}
}

func TestProgressBar(t *testing.T) {
	var buf bytes.Buffer
	if p := newProgress(&buf, 100); p.on {
		t.Fatal("a bar on a buffer, not a terminal")
	}
	p := &progress{w: &buf, total: 4, on: true}
	for i := 1; i <= 4; i++ {
		p.update(i)
	}
	p.clear()
	if !strings.Contains(buf.String(), "] 4/4") || !strings.Contains(buf.String(), "[==============================]") || !strings.HasSuffix(buf.String(), "\r") {
		t.Fatalf("%q", buf.String())
	}
}

// TestWatchWaitsForFirstEvent: following a conversation nothing was sent
// to yet waits for its first snapshot, then prints it.
func TestWatchWaitsForFirstEvent(t *testing.T) {
	startWorker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type result struct {
		code     int
		out, err string
	}
	done := make(chan result, 1)
	go func() {
		var out, errOut bytes.Buffer
		code := dispatch(ctx, []string{"watch", "--count", "1", "later"}, nil, &out, &errOut)
		done <- result{code, out.String(), errOut.String()}
	}()
	// The watch is following (or soon will be) before the first event:
	// what it prints must be the snapshot of that event, whenever it
	// subscribed.
	select {
	case r := <-done:
		t.Fatalf("watch returned before any event: %d\n%s", r.code, r.err)
	case <-time.After(time.Second):
	}
	if code, _, errOut := convctl(t, `{"id":"m1","role":"user","content":"hi","parentId":null}`, "send", "later"); code != 0 {
		t.Fatalf("send: %s", errOut)
	}
	r := <-done
	if r.code != 0 || !strings.Contains(r.out, `"m1"`) {
		t.Fatalf("watch: %d\nstdout %s\nstderr %s", r.code, r.out, r.err)
	}
}
