package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
)

// natsFlags are the connection flags shared by the commands that talk to a
// worker. Each has an environment variable, the same the worker reads; a
// flag given on the command line wins.
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
	str(&n.conn.InboxPrefix, "nats-inbox-prefix", "CONVSTREAM_NATS_INBOX_PREFIX", "", "prefix of this connection's reply subjects (default _INBOX); where tenants share a NATS account, the tenant's own (see convctl permissions)")
	str(&n.prefix, "subject-prefix", "CONVSTREAM_SUBJECT_PREFIX", streams.DefaultPrefix, "subject prefix of the deployment")
	fs.DurationVar(&n.timeout, "timeout", 10*time.Second, "how long to wait for NATS and for replies")
}

// parse parses the arguments of command name (flags anywhere, see
// parseArgs), then fills the NATS flags not given from the environment. It
// returns the positional arguments; false means a usage error, already
// reported on stderr.
func (n *natsFlags) parse(fs *flag.FlagSet, args []string, name string, stderr io.Writer) ([]string, bool) {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return nil, false
	}
	if err := n.applyEnv(); err != nil {
		fmt.Fprintf(stderr, "convctl %s: %v\n", name, err)
		return nil, false
	}
	return pos, true
}

// applyEnv fills the flags not given on the command line from the
// environment. Call it after fs.Parse.
func (n *natsFlags) applyEnv() error {
	given := map[string]bool{}
	n.fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for name, env := range n.env {
		if v := os.Getenv(env); v != "" && !given[name] {
			if err := n.fs.Set(name, strings.TrimSpace(v)); err != nil {
				return fmt.Errorf("$%s: %w", env, err)
			}
		}
	}
	return nil
}

// client connects and returns a streams client; close the connection when
// done.
func (n *natsFlags) client(opts ...client.Option) (*nats.Conn, *client.Client, error) {
	subjects, err := streams.NewSubjects(n.prefix)
	if err != nil {
		return nil, nil, err
	}
	cfg := n.conn
	cfg.Name = "convctl"
	nc, err := streams.Connect(cfg, nats.Timeout(n.timeout), nats.MaxReconnects(0))
	if errors.Is(err, nats.ErrNoServers) {
		url := cfg.URL
		if url == "" {
			url = nats.DefaultURL
		}
		return nil, nil, fmt.Errorf("no NATS server answers at %s: start a worker with its embedded server (make run), or point --nats-url (CONVSTREAM_NATS_URL) at yours: %w", url, err)
	}
	if err != nil {
		return nil, nil, err
	}
	opts = append([]client.Option{client.WithSubjects(subjects), client.WithSource("urn:convstream:convctl")}, opts...)
	c, err := client.New(nc, opts...)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, c, nil
}

// parseArgs parses flags wherever they appear among the positional
// arguments (convctl infer CONV --leaf ID), and returns the positional
// ones. Everything after "--" is positional.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if rest[0] == "--" {
			return append(pos, rest[1:]...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// arg returns the i-th positional argument, or "".
func arg(pos []string, i int) string {
	if i < len(pos) {
		return pos[i]
	}
	return ""
}
