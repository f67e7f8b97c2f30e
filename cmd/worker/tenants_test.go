package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
)

// tenantsFile writes a tenants file: acme and beta sharing an account,
// each with an inbox prefix and a worker and a ui user.
func tenantsFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tenants.json")
	text := `{"tenants": [
  {"prefix": "acme", "account": "SHARED", "inboxPrefix": "_INBOX_acme", "users": [
    {"user": "acme-worker", "password": "Acme-W0rker-pw", "role": "worker"},
    {"user": "acme-ui", "password": "Acme-U1-pw", "role": "ui"}]},
  {"prefix": "beta", "account": "SHARED", "inboxPrefix": "_INBOX_beta", "users": [
    {"user": "beta-ui", "password": "Beta-U1-pw", "role": "ui"}]}
]}`
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestEmbeddedTenants runs the worker of tenant acme with
// --embedded-tenants: it connects as acme's worker user under acme's
// inbox prefix (taken from the file), acme's ui user sends an event and
// reads its snapshot under the same prefix, beta's ui user cannot read
// it, an anonymous client is refused, and no password is logged.
func TestEmbeddedTenants(t *testing.T) {
	url, logs := runWorker(t, []string{"--embedded-tenants", tenantsFile(t), "--subject-prefix", "acme",
		"--nats-user", "acme-worker"}, map[string]string{"CONVSTREAM_NATS_PASSWORD": "Acme-W0rker-pw"})
	if nc, err := nats.Connect(url, nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("an anonymous client connected")
	}
	client := func(user, password, inbox, prefix string) *client.Client {
		nc, err := streams.Connect(streams.ConnConfig{URL: url, User: user, Password: password, InboxPrefix: inbox}, nats.MaxReconnects(0))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		s, _ := streams.NewSubjects(prefix)
		c, err := client.New(nc, client.WithSubjects(s))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ctx := context.Background()
	acme := client("acme-ui", "Acme-U1-pw", "_INBOX_acme", "acme")
	if _, err := acme.Send(ctx, "chat", streams.TypeMessageAppended, map[string]any{"id": "m1", "role": "user", "content": "acme only"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		s, err := acme.Snapshot(ctx, "chat")
		if err == nil && s.Version == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("acme's event not applied: %v\n%s", err, logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	beta := client("beta-ui", "Beta-U1-pw", "_INBOX_beta", "acme")
	c, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if s, err := beta.Snapshot(c, "chat"); err == nil {
		t.Fatalf("beta's ui read acme's snapshot: %+v", s)
	} else {
		t.Logf("beta's ui reading acme's snapshot: %v", err)
	}
	out := logs.String()
	for _, secret := range []string{"Acme-W0rker-pw", "Acme-U1-pw", "Beta-U1-pw"} {
		if strings.Contains(out, secret) {
			t.Errorf("secret %q in the log", secret)
		}
	}
}

// TestEmbeddedTenantsRefused: a tenants file with the worker's user not
// a worker of its prefix's tenant, no tenant of its prefix, no user at
// all, or a shared account without inbox prefixes, stops the worker
// before it starts, with a configuration error.
func TestEmbeddedTenantsRefused(t *testing.T) {
	good := tenantsFile(t)
	noInbox := filepath.Join(t.TempDir(), "tenants.json")
	if err := os.WriteFile(noInbox, []byte(`{"tenants": [
  {"prefix": "acme", "account": "SHARED", "users": [{"user": "a", "password": "p", "role": "worker"}]},
  {"prefix": "beta", "account": "SHARED", "users": [{"user": "b", "password": "p", "role": "worker"}]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a ui user", []string{"--embedded-tenants", good, "--subject-prefix", "acme", "--nats-user", "acme-ui", "--nats-password", "Acme-U1-pw"}, "not a worker"},
		{"another prefix", []string{"--embedded-tenants", good, "--subject-prefix", "gamma", "--nats-user", "acme-worker", "--nats-password", "x"}, "no tenant"},
		{"no user", []string{"--embedded-tenants", good, "--subject-prefix", "acme"}, "give the worker"},
		{"shared account, no inbox prefixes", []string{"--embedded-tenants", noInbox, "--subject-prefix", "acme", "--nats-user", "a", "--nats-password", "p"}, "inbox prefixes of their own"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--listen", "127.0.0.1:-1", "--http", "off", "--data-dir", t.TempDir()}, tc.args...)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := run(ctx, args, func(string) string { return "" }, io.Discard, nil)
			if err == nil || !errors.Is(err, streams.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("run: %v, want a configuration error saying %q", err, tc.want)
			}
			t.Log(err)
		})
	}
}
