package main

import (
	"flag"

	"github.com/convstream/convstream/streams"
)

// embeddedAuth are the flags that make the embedded NATS server require
// authentication: a user and password, a token, or a nats-server
// configuration file (nkeys, operator mode, TLS, per-user permissions).
type embeddedAuth struct {
	user, password, token, config string
}

// register adds the flags, with their environment variables, and the
// worker's own --nats-nkey.
func (a *embeddedAuth) register(fs *flag.FlagSet, ef *envFlags, conn *streams.ConnConfig) {
	str := func(p *string, name, env, usage string) {
		fs.StringVar(p, name, "", usage)
		ef.bind(name, env)
	}
	str(&conn.NKey, "nats-nkey", "CONVSTREAM_NATS_NKEY", "file holding a NATS user nkey seed")
	str(&a.user, "embedded-user", "CONVSTREAM_EMBEDDED_USER", "user the embedded NATS server requires (with --embedded-password)")
	str(&a.password, "embedded-password", "CONVSTREAM_EMBEDDED_PASSWORD", "password the embedded NATS server requires")
	str(&a.token, "embedded-token", "CONVSTREAM_EMBEDDED_TOKEN", "token the embedded NATS server requires")
	str(&a.config, "embedded-config", "CONVSTREAM_EMBEDDED_CONFIG", "nats-server configuration file of the embedded server (accounts, users, permissions, TLS); --listen, --data-dir and --max-payload override it")
}

// apply sets the embedded server's authentication, and the worker's own
// credentials when none were given: the worker connects to its embedded
// server as the user, or with the token, it requires.
func (a *embeddedAuth) apply(cfg *streams.EmbeddedConfig, conn *streams.ConnConfig) {
	cfg.Auth = streams.EmbeddedAuth{User: a.user, Password: a.password, Token: a.token}
	cfg.ConfigFile = a.config
	if conn.User == "" && conn.Password == "" && conn.Token == "" && conn.Creds == "" && conn.NKey == "" {
		conn.User, conn.Password, conn.Token = a.user, a.password, a.token
	}
}

// required reports whether the embedded server authenticates its clients
// (a configuration file is assumed to say how).
func (a *embeddedAuth) required() bool {
	return a.user != "" || a.password != "" || a.token != "" || a.config != ""
}
