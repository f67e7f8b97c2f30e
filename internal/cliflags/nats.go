package cliflags

import (
	"flag"

	"github.com/convstream/convstream/streams"
)

// NATS holds the values of the NATS connection flags once parsed: the
// connection's configuration and the deployment's subject prefix.
type NATS struct {
	Conn   streams.ConnConfig
	Prefix string // --subject-prefix
}

// natsFlag is one NATS connection flag: its name, environment variable,
// default and help as a client (convctl) shows them, and where its value
// goes.
type natsFlag struct {
	name, variable, def, usage string
	value                      func(*NATS) *string
}

// natsFlags are the NATS connection flags, in the order of the worker's
// help.
var natsFlags = []natsFlag{
	{"nats-url", "CONVSTREAM_NATS_URL", "nats://127.0.0.1:4222", "NATS server URL(s), comma-separated", func(n *NATS) *string { return &n.Conn.URL }},
	{"nats-creds", "CONVSTREAM_NATS_CREDS", "", "NATS credentials file", func(n *NATS) *string { return &n.Conn.Creds }},
	{"nats-nkey", "CONVSTREAM_NATS_NKEY", "", "file holding a NATS user nkey seed", func(n *NATS) *string { return &n.Conn.NKey }},
	{"nats-user", "CONVSTREAM_NATS_USER", "", "NATS user", func(n *NATS) *string { return &n.Conn.User }},
	{"nats-password", "CONVSTREAM_NATS_PASSWORD", "", "NATS password", func(n *NATS) *string { return &n.Conn.Password }},
	{"nats-token", "CONVSTREAM_NATS_TOKEN", "", "NATS token", func(n *NATS) *string { return &n.Conn.Token }},
	{"nats-tls-cert", "CONVSTREAM_NATS_TLS_CERT", "", "client certificate file for NATS TLS", func(n *NATS) *string { return &n.Conn.TLSCert }},
	{"nats-tls-key", "CONVSTREAM_NATS_TLS_KEY", "", "client key file for NATS TLS", func(n *NATS) *string { return &n.Conn.TLSKey }},
	{"nats-tls-ca", "CONVSTREAM_NATS_TLS_CA", "", "CA file to verify the NATS server", func(n *NATS) *string { return &n.Conn.TLSCA }},
	{"nats-inbox-prefix", "CONVSTREAM_NATS_INBOX_PREFIX", "", "prefix of this connection's reply subjects (default _INBOX); where tenants share a NATS account, the tenant's own (see convctl permissions)", func(n *NATS) *string { return &n.Conn.InboxPrefix }},
	{"subject-prefix", "CONVSTREAM_SUBJECT_PREFIX", streams.DefaultPrefix, "subject prefix of the deployment", func(n *NATS) *string { return &n.Prefix }},
}

// NATSFlag names a NATS connection flag and its environment variable.
type NATSFlag struct {
	Name, Variable string
}

// NATSFlags returns the NATS connection flags that Register defines, in
// the order of the worker's help.
func NATSFlags() []NATSFlag {
	out := make([]NATSFlag, len(natsFlags))
	for i, f := range natsFlags {
		out[i] = NATSFlag{f.name, f.variable}
	}
	return out
}

// NATSOption changes, for one command, what a NATS flag shows.
type NATSOption func(map[string]*natsFlag)

// WithDefault sets flag name's default value.
func WithDefault(name, value string) NATSOption {
	return func(m map[string]*natsFlag) { lookup(m, name).def = value }
}

// WithUsage sets flag name's help, before its variable is added to it.
func WithUsage(name, usage string) NATSOption {
	return func(m map[string]*natsFlag) { lookup(m, name).usage = usage }
}

func lookup(m map[string]*natsFlag, name string) *natsFlag {
	f, ok := m[name]
	if !ok {
		panic("cliflags: no NATS flag " + name)
	}
	return f
}

// Register defines the NATS connection flags on fs, each bound on env to
// its environment variable, their values going to n. The options change a
// flag's default or help for the command at hand.
func (n *NATS) Register(fs *flag.FlagSet, env *Env, opts ...NATSOption) {
	flags := make([]natsFlag, len(natsFlags))
	copy(flags, natsFlags)
	m := make(map[string]*natsFlag, len(flags))
	for i := range flags {
		m[flags[i].name] = &flags[i]
	}
	for _, o := range opts {
		o(m)
	}
	for _, f := range flags {
		fs.StringVar(f.value(n), f.name, f.def, f.usage)
		env.Bind(f.name, f.variable)
	}
}
