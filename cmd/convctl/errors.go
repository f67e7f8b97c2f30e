package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/convstream/convstream/streams"
)

// storedErrorLine is what `convctl errors` prints for each stored report.
type storedErrorLine struct {
	Sequence uint64          `json:"sequence"`
	Stored   time.Time       `json:"stored"`
	Type     string          `json:"type"`
	ID       string          `json:"id"`
	Data     json.RawMessage `json:"data"`
}

// runErrors implements `convctl errors [flags] CONV`.
func runErrors(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("errors", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var nf natsFlags
	nf.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: convctl errors [flags] CONV")
		fmt.Fprintln(stderr, "Prints the rejections, pipeline failures and dead letters the errors stream keeps")
		fmt.Fprintln(stderr, `for conversation CONV ("@": events naming no usable conversation), oldest first,`)
		fmt.Fprintln(stderr, `one JSON line each: {"sequence","stored","type","id","data"}.`)
		fs.PrintDefaults()
	}
	pos, ok := nf.parse(fs, args, "errors", stderr)
	if !ok {
		return 2
	}
	if len(pos) != 1 {
		fs.Usage()
		return 2
	}
	conv := arg(pos, 0)
	if conv != streams.UnknownConversation && !streams.ValidConversationID(conv) {
		fmt.Fprintf(stderr, "convctl errors: conversation id %q must match [A-Za-z0-9_-]{1,128} or be %q\n", conv, streams.UnknownConversation)
		return 2
	}
	nc, c, err := nf.client()
	if err != nil {
		fmt.Fprintln(stderr, "convctl errors:", err)
		return 1
	}
	defer nc.Close()
	reports, err := c.Errors(ctx, conv)
	if err != nil {
		fmt.Fprintln(stderr, "convctl errors:", explain(ctx, nc, nf.Prefix, conv, err))
		return 1
	}
	enc := json.NewEncoder(stdout)
	for _, r := range reports {
		_ = enc.Encode(storedErrorLine{Sequence: r.Sequence, Stored: r.Stored.UTC(), Type: r.Event.Type(), ID: r.Event.ID(), Data: r.Event.Data()})
	}
	return 0
}
