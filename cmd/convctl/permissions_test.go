package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/convstream/convstream/internal/workertest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/natsembed"
	"github.com/convstream/convstream/streams/worker"
)

// TestPermissionsCommand: convctl permissions prints each role's
// permissions as streams generates them, and a tenants file's accounts
// as configuration nats-server reads; bad arguments are usage errors.
func TestPermissionsCommand(t *testing.T) {
	s, _ := streams.NewSubjects("acme")
	for _, role := range streams.Roles {
		code, out, errOut := convctl(t, "", "permissions", "--role", string(role), "--subject-prefix", "acme", "--inbox-prefix", "_INBOX_acme")
		p, _ := streams.PermissionsFor(role, s, streams.WithInboxPrefix("_INBOX_acme"))
		want, _ := streams.ConfigJSON(p)
		if code != 0 || strings.TrimSpace(out) != string(want) {
			t.Fatalf("%s: %d\n%s\n%s\nwant %s", role, code, out, errOut, want)
		}
		if !strings.Contains(out, `"_INBOX_acme.>"`) || strings.Contains(out, `"_INBOX.>"`) || strings.Contains(out, `\u003e`) {
			t.Errorf("%s: inbox: %s", role, out)
		}
		_, granted, _ := convctl(t, "", "permissions", "--role", string(role), "--subject-prefix", "acme", "--erase")
		if mayErase := strings.Contains(out, `"acme.erase.*"`) || strings.Contains(out, `"acme.>"`); mayErase != (role == streams.RoleWorker) {
			t.Errorf("%s: may erase %v without --erase: %s", role, mayErase, out)
		}
		if !strings.Contains(granted, `"acme.erase.*"`) && !strings.Contains(granted, `"acme.>"`) {
			t.Errorf("%s --erase: may not erase: %s", role, granted)
		}
	}
	path := filepath.Join(t.TempDir(), "tenants.json")
	if err := os.WriteFile(path, []byte(`{"tenants": [
  {"prefix": "acme", "users": [{"user": "acme-ui", "password": "pw", "role": "ui", "erase": true}, {"user": "acme-worker", "password": "pw", "role": "worker"}]},
  {"prefix": "beta", "users": [{"nkey": "UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4", "role": "orchestrator"}]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := convctl(t, "", "permissions", "--tenants", path)
	if code != 0 {
		t.Fatalf("--tenants: %d %s", code, errOut)
	}
	if !strings.Contains(out, `"acme.erase.*"`) || strings.Contains(out, `"beta.erase.*"`) {
		t.Errorf("--tenants: the erase right is acme-ui's only:\n%s", out)
	}
	opts := &server.Options{}
	if err := opts.ProcessConfigString(out); err != nil {
		t.Fatalf("nats-server refuses the accounts: %v\n%s", err, out)
	}
	if len(opts.Users) != 2 || len(opts.Nkeys) != 1 || len(opts.Accounts) != 2 {
		t.Fatalf("accounts %d, users %d, nkeys %d:\n%s", len(opts.Accounts), len(opts.Users), len(opts.Nkeys), out)
	}
	for _, args := range [][]string{
		{"permissions"},
		{"permissions", "--role", "admin"},
		{"permissions", "--role", "ui", "--tenants", path},
		{"permissions", "--role", "ui", "--inbox-prefix", "_INBOX.>"},
		{"permissions", "--role", "ui", "--subject-prefix", "a b"},
	} {
		if code, _, _ := convctl(t, "", args...); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
}

// TestInboxPrefixFlag runs a worker of tenant acme in an account shared
// with beta and requires convctl, as acme's orchestrator and ui users, to
// send and read with --nats-inbox-prefix _INBOX_acme (or its variable),
// and to fail without it: replies under "_INBOX" are not theirs to read.
func TestInboxPrefixFlag(t *testing.T) {
	tenants := []natsembed.Tenant{
		{Prefix: "acme", Account: "SHARED", InboxPrefix: "_INBOX_acme", Users: []natsembed.TenantUser{
			{User: "acme-worker", Password: "w-pw", Role: streams.RoleWorker},
			{User: "acme-orch", Password: "o-pw", Role: streams.RoleOrchestrator},
			{User: "acme-ui", Password: "u-pw", Role: streams.RoleUI}}},
		{Prefix: "beta", Account: "SHARED", InboxPrefix: "_INBOX_beta", Users: []natsembed.TenantUser{
			{User: "beta-ui", Password: "b-pw", Role: streams.RoleUI}}},
	}
	ns := workertest.Server(t, natsembed.Config{Tenants: tenants})
	nc, err := streams.Connect(streams.ConnConfig{URL: ns.ClientURL(), User: "acme-worker", Password: "w-pw", InboxPrefix: "_INBOX_acme"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	s, _ := streams.NewSubjects("acme")
	workertest.Run(t, nc, worker.WithSubjects(s))
	base := []string{"--nats-url", ns.ClientURL(), "--subject-prefix", "acme", "--timeout", "3s"}
	as := func(user, password string, extra ...string) []string {
		return append(append([]string{"--nats-user", user, "--nats-password", password}, base...), extra...)
	}
	code, out, errOut := convctl(t, demo, append([]string{"send", "--all", "--wait", "demo"}, as("acme-orch", "o-pw", "--nats-inbox-prefix", "_INBOX_acme")...)...)
	if code != 0 {
		t.Fatalf("send as acme's orchestrator: %d\n%s\n%s", code, out, errOut)
	}
	t.Setenv("CONVSTREAM_NATS_INBOX_PREFIX", "_INBOX_acme")
	code, out, errOut = convctl(t, "", append([]string{"watch", "--once", "--flat", "demo"}, as("acme-ui", "u-pw")...)...)
	if code != 0 || !strings.Contains(out, `"version":4`) {
		t.Fatalf("watch as acme's ui: %d\n%s\n%s", code, out, errOut)
	}
	t.Setenv("CONVSTREAM_NATS_INBOX_PREFIX", "")
	if code, out, errOut = convctl(t, "", append([]string{"watch", "--once", "demo"}, as("acme-ui", "u-pw")...)...); code == 0 {
		t.Fatalf("watch without the inbox prefix worked: %s", out)
	}
	t.Logf("without --nats-inbox-prefix: %s", strings.TrimSpace(errOut))
	if code, out, errOut = convctl(t, "", append([]string{"watch", "--once", "demo"}, as("beta-ui", "b-pw", "--nats-inbox-prefix", "_INBOX_beta")...)...); code == 0 {
		t.Fatalf("beta's ui read acme's snapshot: %s", out)
	}
	t.Logf("beta's ui: %s", strings.TrimSpace(errOut))
}
