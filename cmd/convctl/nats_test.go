package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/convstream/convstream/internal/workertest"
	"github.com/convstream/convstream/streams/worker"
)

// startWorker runs an embedded JetStream server and a worker with the
// built-in pipelines and opts (workertest.Start), and points the NATS
// flags at it through $CONVSTREAM_NATS_URL. It returns a function that
// stops the worker, leaving the server and what it stores.
func startWorker(t *testing.T, opts ...worker.Option) (stop func()) {
	t.Helper()
	run := workertest.Start(t, opts...)
	t.Setenv("CONVSTREAM_NATS_URL", run.URL)
	return run.Stop
}

// convctl runs one command and returns its status, stdout and stderr.
func convctl(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := dispatch(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

const demo = `{"messages":[
 {"id":"u1","role":"user","content":"What is NATS?","parentId":null,"createdAt":1},
 {"id":"a1","role":"assistant","content":"A messaging system.","parentId":"u1","createdAt":2},
 {"id":"a2","role":"assistant","content":"A pub/sub bus.","parentId":"u1","createdAt":3},
 {"id":"u2","role":"user","content":"And JetStream?","parentId":"a2","createdAt":4}
]}`

func TestSendWatchInfer(t *testing.T) {
	startWorker(t)

	code, out, errOut := convctl(t, demo, "send", "--all", "--wait", "demo")
	if code != 0 || strings.Count(out, "\n") != 4 {
		t.Fatalf("send --all: %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = convctl(t, "", "watch", "--once", "--flat", "demo")
	if code != 0 || !strings.Contains(out, `"version":4`) || !strings.Contains(out, "And JetStream?") || strings.Contains(out, "A messaging system.") {
		t.Fatalf("watch --once: %d\n%s\n%s", code, out, errOut)
	}

	// Switch the branch: the other assistant answer becomes active.
	code, out, errOut = convctl(t, `{"id":"u1","metadata":{"activeBranchIndex":0}}`, "send", "--type", "updated", "--binary", "--msgpack", "--wait", "demo")
	if code != 0 {
		t.Fatalf("send updated: %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = convctl(t, "", "watch", "--once", "--flat", "demo")
	if code != 0 || !strings.Contains(out, "A messaging system.") {
		t.Fatalf("after the branch switch: %s", out)
	}

	code, out, errOut = convctl(t, "", "infer", "demo", "--leaf", "u2", "--params", `{"SystemRoleInjector":{"systemRole":"Be brief."}}`)
	if code != 0 || !strings.Contains(out, `"role":"system"`) || !strings.Contains(out, "Be brief.") || !strings.Contains(out, "And JetStream?") {
		t.Fatalf("infer: %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = convctl(t, "", "infer", "--pipeline", "nope", "demo")
	if code != 1 || !strings.Contains(out, `"code":"unknown_pipeline"`) || !strings.Contains(errOut, "rejected") {
		t.Fatalf("infer unknown pipeline: %d\n%s\n%s", code, out, errOut)
	}

	// A rejected event is reported with --wait.
	code, _, errOut = convctl(t, "", "send", "--type", "deleted", "--id", "nope", "--wait", "demo")
	if code != 1 || !strings.Contains(errOut, "not_found") {
		t.Fatalf("send rejected: %d\n%s", code, errOut)
	}

	// watch follows changes from the stored snapshot on.
	type result struct {
		code int
		out  string
	}
	watched := make(chan result, 1)
	go func() {
		var out, errOut bytes.Buffer
		code := dispatch(context.Background(), []string{"watch", "--count", "2", "demo"}, nil, &out, &errOut)
		watched <- result{code, out.String() + errOut.String()}
	}()
	time.Sleep(100 * time.Millisecond)
	if code, out, errOut := convctl(t, "", "send", "--type", "deleted", "--id", "a1", "demo"); code != 0 {
		t.Fatalf("send deleted: %s %s", out, errOut)
	}
	select {
	case r := <-watched:
		if r.code != 0 || strings.Count(r.out, "\n") != 2 || !strings.Contains(r.out, `"version":7`) {
			// Versions are event sequences: 5 applied, the 6th rejected, the delete is 7.
			t.Fatalf("watch: %d\n%s", r.code, r.out)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("watch printed nothing")
	}
}

func TestSendUsage(t *testing.T) {
	for _, args := range [][]string{
		{"send"},
		{"send", "bad id"},
		{"send", "--id", "x", "demo", "file.json"},
		{"watch"},
		{"infer", "a", "b"},
		{"infer", "--params", "{not json", "demo"},
	} {
		if code, _, _ := convctl(t, "", args...); code != 2 {
			t.Errorf("%v: status %d, want 2", args, code)
		}
	}
	t.Setenv("CONVSTREAM_NATS_URL", "nats://127.0.0.1:1")
	if code, _, errOut := convctl(t, `{"id":"x"}`, "send", "--timeout", "500ms", "demo"); code != 1 || !strings.Contains(errOut, "connect") {
		t.Errorf("unreachable NATS: %d %s", code, errOut)
	}
}
