package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/convstream/convstream/internal/cliflags"
)

// natsFlags are the connection flags of convload, the worker's and
// convctl's (cliflags.NATS, with the worker's environment variables; a
// flag given on the command line wins), and how long to wait.
type natsFlags struct {
	cliflags.NATS
	timeout time.Duration
	env     *cliflags.Env
}

// register adds the flags to fs.
func (n *natsFlags) register(fs *flag.FlagSet) {
	n.env = cliflags.NewEnv(fs)
	n.Register(fs, n.env, cliflags.WithUsage("nats-inbox-prefix", "prefix of this connection's reply subjects (default _INBOX)"))
	fs.DurationVar(&n.timeout, "timeout", 10*time.Second, "how long to wait for NATS and for replies")
}

// parse parses args, then fills the NATS flags not given from the
// environment, and returns the positional arguments. A usage error is
// reported on stderr; flag.ErrHelp means help was asked for and printed.
func (n *natsFlags) parse(fs *flag.FlagSet, args []string, stderr io.Writer) ([]string, error) {
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if err := n.env.Apply(os.Getenv); err != nil {
		fmt.Fprintln(stderr, "convload:", err)
		return nil, err
	}
	return fs.Args(), nil
}
