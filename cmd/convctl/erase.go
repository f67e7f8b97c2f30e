package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/convstream/convstream/streams"
)

// runErase implements `convctl erase [--by WHO] CONV`.
func runErase(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("erase", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var nf natsFlags
	nf.register(fs)
	by := fs.String("by", os.Getenv("USER"), "who asks, recorded in the receipt (default: $USER)")
	wait := fs.Duration("erase-timeout", streams.DefaultEraseTimeout+10*time.Second, "how long to wait for the worker's receipt (a long conversation takes a while)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: convctl erase [--by WHO] CONV")
		fmt.Fprintln(stderr, "Asks a worker (P.erase.CONV) to erase a conversation everywhere it is stored: its")
		fmt.Fprintln(stderr, "events and reply chunks, snapshot and checkpoint with their history, error records,")
		fmt.Fprintln(stderr, "dead letters and waiting reply requests, on every replica, overwritten on disk.")
		fmt.Fprintln(stderr, "Prints the receipt, which the worker also keeps in the receipts stream, as JSON.")
		fmt.Fprintln(stderr, "Events sent to CONV afterwards start a new conversation. The NATS user needs the")
		fmt.Fprintln(stderr, "right to erase (convctl permissions --erase, or the worker role).")
		fmt.Fprintln(stderr, "Exit status: 0 erased, 1 not erased (ask again: it erases what is left), 2 bad usage.")
		fs.PrintDefaults()
	}
	pos, ok := nf.parse(fs, args, "erase", stderr)
	if !ok {
		return 2
	}
	if len(pos) != 1 || !streams.ValidConversationID(pos[0]) {
		fs.Usage()
		return 2
	}
	nc, c, err := nf.client()
	if err != nil {
		fmt.Fprintln(stderr, "convctl erase:", err)
		return 1
	}
	defer nc.Close()
	rctx, cancel := context.WithTimeout(ctx, *wait)
	defer cancel()
	receipt, err := c.Erase(rctx, pos[0], *by)
	if err != nil {
		fmt.Fprintln(stderr, "convctl erase:", err)
		return 1
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(receipt); err != nil {
		fmt.Fprintln(stderr, "convctl erase:", err)
		return 1
	}
	return 0
}
