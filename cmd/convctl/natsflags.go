package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/convstream/convstream/internal/cliflags"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
)

// natsFlags are the connection flags shared by the commands that talk to a
// worker (cliflags.NATS, with the worker's environment variables; a flag
// given on the command line wins), and how long to wait.
type natsFlags struct {
	cliflags.NATS
	timeout time.Duration
	env     *cliflags.Env
}

// register adds the flags to fs.
func (n *natsFlags) register(fs *flag.FlagSet) {
	n.env = cliflags.NewEnv(fs)
	n.Register(fs, n.env)
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
	if err := n.env.Apply(os.Getenv); err != nil {
		fmt.Fprintf(stderr, "convctl %s: %v\n", name, err)
		return nil, false
	}
	return pos, true
}

// client connects and returns a streams client; close the connection when
// done.
func (n *natsFlags) client(opts ...client.Option) (*nats.Conn, *client.Client, error) {
	subjects, err := streams.NewSubjects(n.Prefix)
	if err != nil {
		return nil, nil, err
	}
	cfg := n.Conn
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
