package natsembed

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/nats-io/nats-server/v2/server"
)

// TestCheckTenants: each mistake in a tenants list is a configuration
// error naming its place; a good list becomes accounts nats-server reads,
// each with JetStream, and LoadTenants refuses unknown fields.
func TestCheckTenants(t *testing.T) {
	user := func(name string, role streams.Role) TenantUser {
		return TenantUser{User: name, Password: name + "-pw", Role: role}
	}
	good := func() []Tenant {
		return []Tenant{
			{Prefix: "acme", Users: []TenantUser{user("a-w", streams.RoleWorker), user("a-u", streams.RoleUI)}},
			{Prefix: "beta.eu", Users: []TenantUser{user("b-o", streams.RoleOrchestrator)}},
		}
	}
	for _, tc := range []struct {
		want   string
		change func([]Tenant) []Tenant
	}{
		{"none declared", func([]Tenant) []Tenant { return nil }},
		{"tenants[1].limits: negative", func(l []Tenant) []Tenant { l[1].Limits = &TenantLimits{MaxConsumers: -1}; return l }},
		{"tenants[1].limits: tenants[0] declares the limits of account S already", func(l []Tenant) []Tenant {
			l[0].Account, l[1].Account, l[0].InboxPrefix, l[1].InboxPrefix = "S", "S", "_INBOX_a", "_INBOX_b"
			l[0].Limits, l[1].Limits = &TenantLimits{MaxStreams: 5}, &TenantLimits{MaxStreams: 6}
			return l
		}},
		{"tenants[0].prefix", func(l []Tenant) []Tenant { l[0].Prefix = "a b"; return l }},
		{"tenants[1].account", func(l []Tenant) []Tenant { l[1].Account = "$SYS"; return l }},
		{"tenants[0].inboxPrefix", func(l []Tenant) []Tenant { l[0].InboxPrefix = "_INBOX.>"; return l }},
		{"tenants[0].users: none", func(l []Tenant) []Tenant { l[0].Users = nil; return l }},
		{"tenants[0].users[1].role", func(l []Tenant) []Tenant { l[0].Users[1].Role = "admin"; return l }},
		{"tenants[1].users[0]: needs a user and a password", func(l []Tenant) []Tenant { l[1].Users[0].Password = ""; return l }},
		{"tenants[1].users[0].nkey", func(l []Tenant) []Tenant { l[1].Users[0] = TenantUser{NKey: "Uxyz", Role: streams.RoleUI}; return l }},
		{"control characters", func(l []Tenant) []Tenant { l[1].Users[0].Password = "a\nb"; return l }},
		{"declared already at tenants[0].users[0]", func(l []Tenant) []Tenant { l[1].Users[0].User = "a-w"; return l }},
		{"need inbox prefixes of their own (e.g. _INBOX_beta_eu)", func(l []Tenant) []Tenant {
			l[0].Account, l[1].Account, l[0].InboxPrefix = "SHARED", "SHARED", "_INBOX_acme"
			return l
		}},
		{"inbox prefixes \"_INBOX_acme\" and \"_INBOX_acme.eu\" overlap", func(l []Tenant) []Tenant {
			l[0].Account, l[1].Account, l[0].InboxPrefix, l[1].InboxPrefix = "S", "S", "_INBOX_acme", "_INBOX_acme.eu"
			return l
		}},
		{"subject prefixes \"acme\" and \"acme.eu\" overlap", func(l []Tenant) []Tenant {
			l[0].Account, l[1].Account, l[0].InboxPrefix, l[1].InboxPrefix, l[1].Prefix = "S", "S", "_INBOX_a", "_INBOX_b", "acme.eu"
			return l
		}},
		{"name the same streams", func(l []Tenant) []Tenant {
			l[0].Account, l[1].Account, l[0].InboxPrefix, l[1].InboxPrefix, l[1].Prefix = "S", "S", "_INBOX_a", "_INBOX_b", "ACME"
			return l
		}},
		{"under the other's subject prefix", func(l []Tenant) []Tenant {
			l[0].Account, l[1].Account, l[0].InboxPrefix, l[1].InboxPrefix = "S", "S", "beta.eu.inbox", "_INBOX_b"
			return l
		}},
	} {
		err := CheckTenants(tc.change(good()))
		if err == nil || !errors.Is(err, streams.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", tc.want, err)
		}
	}
	text, err := AccountsConfig(good())
	if err != nil {
		t.Fatal(err)
	}
	opts := &server.Options{}
	if err := opts.ProcessConfigString(string(text)); err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if len(opts.Accounts) != 2 || len(opts.Users) != 3 || !strings.Contains(string(text), `"jetstream":"enabled"`) {
		t.Fatalf("accounts %d users %d:\n%s", len(opts.Accounts), len(opts.Users), text)
	}
	for _, u := range opts.Users {
		if u.Account == nil || (u.Account.Name != "ACME" && u.Account.Name != "BETA_EU") || u.Permissions == nil {
			t.Errorf("user %s: account %v, permissions %v", u.Username, u.Account, u.Permissions)
		}
	}
	path := filepath.Join(t.TempDir(), "tenants.json")
	if err := os.WriteFile(path, []byte(`{"tenants": [{"prefix": "acme", "users": [{"user": "u", "password": "p", "rol": "ui"}]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadTenants(path); err == nil || !strings.Contains(err.Error(), "rol") {
		t.Errorf("a misspelt field: %v", err)
	}
}

// TestEmbeddedTenantsConflicts: tenants with a single user or token, or
// with a configuration file declaring its own users, are refused.
func TestEmbeddedTenantsConflicts(t *testing.T) {
	tenants := []Tenant{{Prefix: "acme", Users: []TenantUser{{User: "u", Password: "p", Role: streams.RoleWorker}}}}
	for _, ecfg := range []Config{
		{Tenants: tenants, Auth: Auth{Token: "t"}},
		{Tenants: tenants, ConfigFile: natstest.WriteConfig(t, "authorization { users: [ { user: a, password: b } ] }\n")},
	} {
		ecfg.Listen, ecfg.StoreDir = "127.0.0.1:-1", t.TempDir()
		ns, err := Start(ecfg)
		if err == nil {
			ns.Shutdown()
			t.Errorf("started with tenants and %v / %s", ecfg.Auth, ecfg.ConfigFile)
			continue
		}
		if !errors.Is(err, streams.ErrInvalidConfig) {
			t.Errorf("%v, want ErrInvalidConfig", err)
		}
	}
}
