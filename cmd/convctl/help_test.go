package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestHelpEverywhere checks that -h, -help and --help print usage and exit
// 0 for convctl itself and for every command, as `convctl help COMMAND`
// does, while a real usage error still exits 2.
func TestHelpEverywhere(t *testing.T) {
	run := func(args ...string) (int, string) {
		var out, errOut bytes.Buffer
		code := dispatch(context.Background(), args, strings.NewReader(""), &out, &errOut)
		return code, out.String() + errOut.String()
	}
	for _, h := range []string{"-h", "-help", "--help"} {
		if code, out := run(h); code != 0 || !strings.Contains(out, "usage: convctl") {
			t.Errorf("convctl %s: exit %d, output %q", h, code, out)
		}
		for name := range commands() {
			code, out := run(name, h)
			if code != 0 || !strings.Contains(out, "usage: convctl "+name) {
				t.Errorf("convctl %s %s: exit %d, output %q", name, h, code, out)
			}
		}
	}
	for name := range commands() {
		if code, out := run("help", name); code != 0 || !strings.Contains(out, "usage: convctl "+name) {
			t.Errorf("convctl help %s: exit %d, output %q", name, code, out)
		}
	}
	if code, _ := run("send", "--no-such-flag"); code != 2 {
		t.Errorf("convctl send --no-such-flag: exit %d, want 2", code)
	}
	if code, _ := run("no-such-command"); code != 2 {
		t.Errorf("convctl no-such-command: exit %d, want 2", code)
	}
}

// TestVersion checks that --version prints the build's version and exits 0.
func TestVersion(t *testing.T) {
	for _, v := range []string{"--version", "-version", "version"} {
		var out, errOut bytes.Buffer
		code := dispatch(context.Background(), []string{v}, nil, &out, &errOut)
		if code != 0 || !strings.HasPrefix(out.String(), "convctl ") || !strings.Contains(out.String(), "go1.") {
			t.Errorf("convctl %s: exit %d, stdout %q, stderr %q", v, code, out.String(), errOut.String())
		}
	}
}

// TestNoServerSaysWhatToDo: with no NATS server at the URL, send, watch
// and infer name the URL and say how to get one (they printed nats's bare
// "no servers available for connection").
func TestNoServerSaysWhatToDo(t *testing.T) {
	for _, args := range [][]string{{"watch", "c1"}, {"infer", "c1"}, {"send", "--id", "m1", "--type", "deleted", "c1"}} {
		var out, errOut bytes.Buffer
		args = append(args, "--nats-url", "nats://127.0.0.1:1", "--timeout", "2s")
		code := dispatch(context.Background(), args, strings.NewReader(""), &out, &errOut)
		msg := errOut.String()
		if code == 0 || !strings.Contains(msg, "nats://127.0.0.1:1") || !strings.Contains(msg, "make run") || !strings.Contains(msg, "--nats-url") {
			t.Errorf("convctl %v: exit %d, stderr %q", args, code, msg)
		}
	}
}

// TestInferWithoutWorker: infer against a server no worker serves (here a
// wrong --subject-prefix) says so and names the prefix, instead of nats's
// bare "no responders available for request".
func TestInferWithoutWorker(t *testing.T) {
	startWorker(t)
	code, _, errOut := convctl(t, "", "infer", "--subject-prefix", "elsewhere", "--timeout", "5s", "c1")
	if code != 1 || !strings.Contains(errOut, "no worker serves inference") || !strings.Contains(errOut, `"elsewhere"`) {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}
