package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/natsembed"
)

// runPermissions implements `convctl permissions --role ROLE
// [--subject-prefix P] [--inbox-prefix I]` and `convctl permissions
// --tenants FILE`.
func runPermissions(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("permissions", flag.ContinueOnError)
	fs.SetOutput(stderr)
	role := fs.String("role", "", "worker, ui or orchestrator")
	prefix := fs.String("subject-prefix", streams.DefaultPrefix, "subject prefix of the tenant")
	inbox := fs.String("inbox-prefix", "", "inbox prefix of the user's connections (--nats-inbox-prefix); default _INBOX, right only in an account of the tenant's own")
	erase := fs.Bool("erase", false, "grant a ui or orchestrator user the right to erase conversations (a worker user has it)")
	kvWatch := fs.Bool("kv-watch", false, "let a ui user follow the snapshot bucket with a KV watch, as clients of earlier releases do (it may then create consumers there: see docs/operations.md)")
	tenants := fs.String("tenants", "", `a tenants file ({"tenants": [...]}, as the worker's --embedded-tenants): print the nats-server accounts that declare them`)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: convctl permissions --role worker|ui|orchestrator [--subject-prefix P] [--inbox-prefix I] [--erase] [--kv-watch]")
		fmt.Fprintln(stderr, "       convctl permissions --tenants FILE")
		fmt.Fprintln(stderr, "Prints the NATS permissions of a role of one subject prefix as the JSON of a")
		fmt.Fprintln(stderr, "nats-server user's permissions block, or the accounts of a tenants file, each")
		fmt.Fprintln(stderr, "with JetStream and its users with their roles' permissions (docs/operations.md,")
		fmt.Fprintln(stderr, `"Isolated tenants"). nats-server configuration files accept JSON.`)
		fs.PrintDefaults()
	}
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 0 || (*tenants == "") == (*role == "") {
		fs.Usage()
		return 2
	}
	if *tenants != "" {
		list, err := natsembed.LoadTenants(*tenants)
		if err == nil {
			var out []byte
			if out, err = natsembed.AccountsConfig(list); err == nil {
				_, err = stdout.Write(out)
			}
		}
		if err != nil {
			fmt.Fprintln(stderr, "convctl permissions:", err)
			return 1
		}
		return 0
	}
	r, err := streams.ParseRole(*role)
	if err != nil {
		fmt.Fprintln(stderr, "convctl permissions: --role:", err)
		return 2
	}
	s, err := streams.NewSubjects(*prefix)
	if err != nil {
		fmt.Fprintln(stderr, "convctl permissions: --subject-prefix:", err)
		return 2
	}
	if *inbox != "" {
		if err := streams.ValidInboxPrefix(*inbox); err != nil {
			fmt.Fprintln(stderr, "convctl permissions: --inbox-prefix:", err)
			return 2
		}
	}
	opts := []streams.PermissionOption{streams.WithInboxPrefix(*inbox)}
	if *erase {
		opts = append(opts, streams.WithErase())
	}
	if *kvWatch {
		opts = append(opts, streams.WithKVWatch())
	}
	p, err := streams.PermissionsFor(r, s, opts...)
	if err == nil {
		var out []byte
		if out, err = streams.ConfigJSON(p); err == nil {
			_, err = fmt.Fprintf(stdout, "%s\n", out)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "convctl permissions:", err)
		return 1
	}
	return 0
}
