package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
)

// runInfer implements `convctl infer [flags] CONV`.
func runInfer(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("infer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var nf natsFlags
	nf.register(fs)
	leaf := fs.String("leaf", "", "id of the message the context ends at (default: the active path)")
	pipeline := fs.String("pipeline", "", "pipeline spec to run (default: default)")
	params := fs.String("params", "", `per-processor configuration as JSON, or @FILE: {"ProcessorName": {...}}`)
	full := fs.Bool("event", false, "print the whole reply CloudEvent, not only its data")
	var ff formatFlags
	ff.register(fs, "", "(default: the worker's, openai.chat)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: convctl infer [flags] CONV")
		fmt.Fprintln(stderr, "Asks the worker for the model-ready context of conversation CONV and prints it:")
		fmt.Fprintln(stderr, `{"messages","format","request","metadata","stats",...}: request is the body a`)
		fmt.Fprintln(stderr, "provider's API takes (--format), without model. A pipeline failure or a refused request is")
		fmt.Fprintln(stderr, "printed as well, with exit status 1.")
		fs.PrintDefaults()
	}
	pos, ok := nf.parse(fs, args, "infer", stderr)
	if !ok {
		return 2
	}
	if len(pos) != 1 {
		fs.Usage()
		return 2
	}
	req := streams.InferenceRequest{ConversationID: arg(pos, 0), LeafID: *leaf, Pipeline: *pipeline, Format: ff.format, Budget: ff.budget(), Cache: ff.cacheBreakpoints(), Profile: ff.requestProfile()}
	if !streams.ValidConversationID(req.ConversationID) {
		fmt.Fprintf(stderr, "convctl infer: conversation id %q must match [A-Za-z0-9_-]{1,128}\n", req.ConversationID)
		return 2
	}
	if *params != "" {
		raw := []byte(*params)
		if name, ok := strings.CutPrefix(*params, "@"); ok {
			var err error
			if raw, err = os.ReadFile(name); err != nil {
				fmt.Fprintln(stderr, "convctl infer:", err)
				return 1
			}
		}
		if err := json.Unmarshal(raw, &req.Params); err != nil {
			fmt.Fprintln(stderr, "convctl infer: --params:", err)
			return 2
		}
	}
	tp, flush := tracing(ctx, stderr)
	defer flush()
	nc, c, err := nf.client(client.WithTracerProvider(tp))
	if err != nil {
		fmt.Fprintln(stderr, "convctl infer:", err)
		return 1
	}
	defer nc.Close()
	rctx, cancel := context.WithTimeout(ctx, nf.timeout)
	defer cancel()
	ev, err := c.Infer(rctx, req)
	if errors.Is(err, nats.ErrNoResponders) {
		fmt.Fprintf(stderr, "convctl infer: no worker serves inference for subject prefix %q on %s: start one (make run), or check --subject-prefix: %v\n", nf.Prefix, nc.ConnectedUrlRedacted(), err)
		return 1
	}
	if err != nil {
		fmt.Fprintln(stderr, "convctl infer:", err)
		return 1
	}
	out := json.RawMessage(ev.Data())
	if *full {
		if out, err = ev.MarshalJSON(); err != nil {
			fmt.Fprintln(stderr, "convctl infer:", err)
			return 1
		}
	}
	fmt.Fprintf(stdout, "%s\n", out)
	if ev.Type() != streams.TypeInferenceContext {
		var why struct{ Reason, Message string }
		_ = json.Unmarshal(ev.Data(), &why)
		fmt.Fprintf(stderr, "convctl infer: %s: %s%s\n", ev.Type(), why.Reason, why.Message)
		return 1
	}
	return 0
}
