package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/internal/workertest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
	"github.com/convstream/convstream/streams/natsembed"
	"github.com/convstream/convstream/streams/worker"
	"github.com/convstream/convstream/ui"
)

// replyWriter answers reply requests as an orchestrator does, with a
// deterministic model: it writes the placeholder, a chunk every interval,
// and the completion; a stop request ends the reply as stopped.
type replyWriter struct {
	c        *client.Client
	interval time.Duration
	chunks   int
	mu       sync.Mutex
	stops    map[string]context.CancelFunc
	n        int
}

func (rw *replyWriter) run(ctx context.Context, t *testing.T, conv string) {
	js := rw.c.JetStream()
	s := rw.c.Subjects()
	stream, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: s.RepliesStream(), Subjects: []string{s.AllReplies()},
		Retention: jetstream.WorkQueuePolicy})
	if err != nil {
		t.Fatal(err)
	}
	cons, err := stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "test-writer", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := rw.c.Conn().Subscribe(s.Stop(conv), func(m *nats.Msg) {
		ev, err := streams.DecodeEvent(m.Header, m.Data)
		var stop streams.ReplyStop
		if err == nil {
			err = json.Unmarshal(ev.Data(), &stop)
		}
		rw.mu.Lock()
		cancel := rw.stops[stop.ID]
		rw.mu.Unlock()
		if cancel != nil {
			cancel()
		}
		_ = m.Respond([]byte(`{}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	cc, err := cons.Consume(func(m jetstream.Msg) {
		_ = m.Ack()
		ev, err := streams.DecodeEvent(m.Headers(), m.Data())
		var req streams.ReplyRequest
		if err == nil {
			err = json.Unmarshal(ev.Data(), &req)
		}
		if err != nil {
			t.Errorf("reply request: %v", err)
			return
		}
		go rw.write(ctx, t, req)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cc.Stop)
}

func (rw *replyWriter) write(ctx context.Context, t *testing.T, req streams.ReplyRequest) {
	rw.mu.Lock()
	rw.n++
	id := fmt.Sprintf("reply-%d", rw.n)
	wctx, cancel := context.WithCancel(ctx)
	rw.stops[id] = cancel
	rw.mu.Unlock()
	parent := req.ParentID
	if parent == "" {
		parent = req.UserMessageID
	}
	conv := req.ConversationID
	if _, err := rw.c.StartReply(ctx, conv, map[string]any{"id": id, "role": "assistant", "parentId": parent,
		"createdAt": time.Now().UnixMilli(), "model": "test"}); err != nil {
		t.Errorf("placeholder: %v", err)
		return
	}
	var text strings.Builder
	status := streams.StreamDone
	for k := 1; k <= rw.chunks; k++ {
		select {
		case <-wctx.Done():
			status = streams.StreamStopped
		case <-time.After(rw.interval):
		}
		if status == streams.StreamStopped {
			break
		}
		word := fmt.Sprintf("word%d ", k)
		text.WriteString(word)
		if _, err := rw.c.SendChunk(ctx, conv, streams.MessageChunk{ID: id, Seq: uint64(k), Text: word}); err != nil {
			t.Errorf("chunk: %v", err)
			return
		}
	}
	if _, err := rw.c.Complete(ctx, conv, streams.MessageCompleted{ID: id, Status: status, Content: text.String()}); err != nil {
		t.Errorf("completion: %v", err)
	}
}

// TestBrowserChat runs the viewer's chat in headless Chromium against a
// worker and a reply writer: a message typed and sent gets a reply whose
// text grows over at least three observations; a reload in the middle of
// the reply picks it up and it keeps growing; stop ends it as stopped;
// regenerate writes a second reply as a new branch, and the ‹ › buttons
// switch between the two.
func TestBrowserChat(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium not installed (apt-get install chromium): browser test skipped")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := workertest.Server(t, natsembed.Config{WebSocket: "127.0.0.1:-1"})
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	workertest.Run(t, nc, worker.WithLogger(slog.New(slog.DiscardHandler)))
	c, err := client.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	const conv = "chat-b"
	rw := &replyWriter{c: c, interval: 150 * time.Millisecond, chunks: 200, stops: map[string]context.CancelFunc{}}
	rw.run(ctx, t, conv)

	subjects := c.Subjects()
	wsURL, _ := url.Parse(ns.WebsocketURL())
	wsPort, _ := strconv.Atoi(wsURL.Port())
	mux := http.NewServeMux()
	mux.Handle("/ui/", http.StripPrefix("/ui", ui.Handler(ui.Config{WebSocketPort: wsPort, Prefix: subjects.Prefix(), Bucket: subjects.SnapshotBucket()})))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromium),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1200, 900),
	)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	defer cancelBrowser()

	page := srv.URL + "/ui/?c=" + conv
	if err := chromedp.Do(bctx,
		chromedp.Navigate(page),
		chromedp.WaitVisible(chromedp.CSS("#composer")),
		chromedp.SendKeys(chromedp.CSS("#message"), "hello"),
		chromedp.Click(chromedp.CSS("#send")),
		chromedp.WaitVisible(chromedp.CSS(`li.entry[data-stream="streaming"] .text`)),
	); err != nil {
		t.Fatalf("sending a message: %v", err)
	}
	const streamingText = `(document.querySelector('li.entry[data-stream="streaming"] .text') || {}).textContent || ""`
	grows := func(what string, from string, times int) string {
		t.Helper()
		last := from
		for i := 0; i < times; i++ {
			poll := fmt.Sprintf(`(%s).length > %d`, streamingText, len(last))
			if _, err := chromedp.Run(bctx, chromedp.Poll[bool](poll, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
				t.Fatalf("%s: the reply's text did not grow past %q: %v", what, last, err)
			}
			txt := evaluate[string](t, bctx, streamingText)
			if !strings.HasPrefix(txt, last) {
				t.Fatalf("%s: text %q does not extend %q", what, txt, last)
			}
			last = txt
		}
		t.Logf("%s: %q", what, last)
		return last
	}
	seen := grows("streaming", "", 3)

	// A reload in the middle of the reply picks it up where it is.
	if err := chromedp.Do(bctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`li.entry[data-stream="streaming"] .text`))); err != nil {
		t.Fatalf("reload: %v", err)
	}
	grows("after the reload", seen, 3)

	// Stop.
	if err := chromedp.Do(bctx,
		chromedp.Click(chromedp.CSS("#stop")),
		chromedp.WaitVisible(chromedp.CSS(`li.entry[data-stream="stopped"]`)),
	); err != nil {
		t.Fatalf("stop: %v", err)
	}
	stopped := evaluate[string](t, bctx, `document.querySelector('li.entry[data-stream="stopped"]').dataset.id`)

	// Regenerate: a second reply, a new branch beside the first.
	if err := chromedp.Do(bctx,
		chromedp.WaitEnabled(chromedp.CSS("#regenerate")),
		chromedp.Click(chromedp.CSS("#regenerate")),
		chromedp.WaitVisible(chromedp.CSS(`li.entry[data-stream="streaming"] .text`)),
	); err != nil {
		t.Fatalf("regenerate: %v", err)
	}
	grows("regenerated", "", 3)
	second := evaluate[string](t, bctx, `document.querySelector('li.entry[data-stream="streaming"]').dataset.id`)
	if second == stopped {
		t.Fatalf("regenerate streams into %s again", second)
	}
	if err := chromedp.Do(bctx,
		chromedp.Click(chromedp.CSS("#stop")),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`li.entry[data-id=%q][data-stream="stopped"] .branch-prev`, second))),
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`li.entry[data-id=%q] .branch-prev`, second))),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`li.entry[data-id=%q]`, stopped))),
	); err != nil {
		t.Fatalf("switching back to the first reply: %v", err)
	}
	t.Logf("stopped %s, regenerated %s, switched back to %s", stopped, second, stopped)
}
