package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/convstream/convstream/streams"
)

// natsFlags are the connection flags of convload, the same as convctl's
// and the worker's: each has the environment variable the worker reads,
// and a flag given on the command line wins.
type natsFlags struct {
	conn    streams.ConnConfig
	prefix  string
	timeout time.Duration
	fs      *flag.FlagSet
	env     map[string]string
}

// register adds the flags to fs.
func (n *natsFlags) register(fs *flag.FlagSet) {
	n.fs, n.env = fs, map[string]string{}
	str := func(p *string, name, env, def, usage string) {
		fs.StringVar(p, name, def, usage+" [$"+env+"]")
		n.env[name] = env
	}
	str(&n.conn.URL, "nats-url", "CONVSTREAM_NATS_URL", "nats://127.0.0.1:4222", "NATS server URL(s), comma-separated")
	str(&n.conn.Creds, "nats-creds", "CONVSTREAM_NATS_CREDS", "", "NATS credentials file")
	str(&n.conn.NKey, "nats-nkey", "CONVSTREAM_NATS_NKEY", "", "file holding a NATS user nkey seed")
	str(&n.conn.User, "nats-user", "CONVSTREAM_NATS_USER", "", "NATS user")
	str(&n.conn.Password, "nats-password", "CONVSTREAM_NATS_PASSWORD", "", "NATS password")
	str(&n.conn.Token, "nats-token", "CONVSTREAM_NATS_TOKEN", "", "NATS token")
	str(&n.conn.TLSCert, "nats-tls-cert", "CONVSTREAM_NATS_TLS_CERT", "", "client certificate file for NATS TLS")
	str(&n.conn.TLSKey, "nats-tls-key", "CONVSTREAM_NATS_TLS_KEY", "", "client key file for NATS TLS")
	str(&n.conn.TLSCA, "nats-tls-ca", "CONVSTREAM_NATS_TLS_CA", "", "CA file to verify the NATS server")
	str(&n.conn.InboxPrefix, "nats-inbox-prefix", "CONVSTREAM_NATS_INBOX_PREFIX", "", "prefix of this connection's reply subjects (default _INBOX)")
	str(&n.prefix, "subject-prefix", "CONVSTREAM_SUBJECT_PREFIX", streams.DefaultPrefix, "subject prefix of the deployment")
	fs.DurationVar(&n.timeout, "timeout", 10*time.Second, "how long to wait for NATS and for replies")
}

// parse parses args, then fills the NATS flags not given from the
// environment, and returns the positional arguments. A usage error is
// reported on stderr; flag.ErrHelp means help was asked for and printed.
func (n *natsFlags) parse(fs *flag.FlagSet, args []string, stderr io.Writer) ([]string, error) {
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for name, env := range n.env {
		if v := os.Getenv(env); v != "" && !given[name] {
			if err := fs.Set(name, strings.TrimSpace(v)); err != nil {
				err = fmt.Errorf("$%s: %w", env, err)
				fmt.Fprintln(stderr, "convload:", err)
				return nil, err
			}
		}
	}
	return fs.Args(), nil
}
