package main

import (
	"flag"
	"fmt"

	"github.com/convstream/convstream/internal/cliflags"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/natsembed"
)

// embeddedAuth are the flags that make the embedded NATS server require
// authentication: a user and password, a token, a tenants file (an
// account per tenant, users in roles), or a nats-server configuration
// file (nkeys, operator mode, TLS, per-user permissions).
type embeddedAuth struct {
	user, password, token, config string
	tenants                       string
}

// register adds the flags, with their environment variables.
func (a *embeddedAuth) register(fs *flag.FlagSet, ef *cliflags.Env) {
	str := func(p *string, name, env, usage string) {
		fs.StringVar(p, name, "", usage)
		ef.Bind(name, env)
	}
	str(&a.user, "embedded-user", "CONVSTREAM_EMBEDDED_USER", "user the embedded NATS server requires (with --embedded-password)")
	str(&a.password, "embedded-password", "CONVSTREAM_EMBEDDED_PASSWORD", "password the embedded NATS server requires")
	str(&a.token, "embedded-token", "CONVSTREAM_EMBEDDED_TOKEN", "token the embedded NATS server requires")
	str(&a.config, "embedded-config", "CONVSTREAM_EMBEDDED_CONFIG", "nats-server configuration file of the embedded server (accounts, users, permissions, TLS); --listen, --data-dir and --max-payload override it")
	str(&a.tenants, "embedded-tenants", "CONVSTREAM_EMBEDDED_TENANTS", `JSON file of the embedded server's tenants ({"tenants": [{"prefix", "account", "inboxPrefix", "users": [{"user", "password", "role"}]}]}): an account each, with JetStream, users with their role's permissions; the worker connects as one of its tenant's worker users (--nats-user)`)
}

// apply sets the embedded server's authentication, and the worker's own
// credentials when none were given: the worker connects to its embedded
// server as the user, or with the token, it requires. With tenants, the
// worker must name its user, a worker of its subject prefix's tenant, and
// takes that tenant's inbox prefix unless given one.
func (a *embeddedAuth) apply(cfg *natsembed.Config, conn *streams.ConnConfig, subjects streams.Subjects) error {
	cfg.Auth = natsembed.Auth{User: a.user, Password: a.password, Token: a.token}
	cfg.ConfigFile = a.config
	if a.tenants != "" {
		tenants, err := natsembed.LoadTenants(a.tenants)
		if err != nil {
			return fmt.Errorf("--embedded-tenants: %w", err)
		}
		cfg.Tenants = tenants
		return workerOfTenant(tenants, conn, subjects)
	}
	if conn.User == "" && conn.Password == "" && conn.Token == "" && conn.Creds == "" && conn.NKey == "" {
		conn.User, conn.Password, conn.Token = a.user, a.password, a.token
	}
	return nil
}

// workerOfTenant checks that the worker connects as a worker user of the
// tenant of its subject prefix, when it names its user, and gives it the
// tenant's inbox prefix unless it has one.
func workerOfTenant(tenants []natsembed.Tenant, conn *streams.ConnConfig, subjects streams.Subjects) error {
	if conn.User == "" && conn.Creds == "" && conn.NKey == "" && conn.Token == "" {
		return fmt.Errorf("%w: --embedded-tenants: give the worker one of its tenant's worker users (--nats-user and --nats-password, or --nats-nkey)", streams.ErrInvalidConfig)
	}
	for _, t := range tenants {
		if t.Prefix != subjects.Prefix() {
			continue
		}
		if conn.InboxPrefix == "" {
			conn.InboxPrefix = t.InboxPrefix
		}
		if conn.User == "" {
			return nil // an nkey: the server will tell
		}
		for _, u := range t.Users {
			if u.User == conn.User && u.Role == streams.RoleWorker {
				return nil
			}
		}
		return fmt.Errorf("%w: --embedded-tenants: user %q is not a worker of tenant %q", streams.ErrInvalidConfig, conn.User, t.Prefix)
	}
	return fmt.Errorf("%w: --embedded-tenants: no tenant has subject prefix %q (--subject-prefix)", streams.ErrInvalidConfig, subjects.Prefix())
}

// required reports whether the embedded server authenticates its clients
// (a configuration file is assumed to say how).
func (a *embeddedAuth) required() bool {
	return a.user != "" || a.password != "" || a.token != "" || a.config != "" || a.tenants != ""
}
