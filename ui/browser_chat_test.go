package ui_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/nats-io/nats.go"

	"github.com/convstream/convstream/internal/workertest"
	"github.com/convstream/convstream/models"
	"github.com/convstream/convstream/streams/client"
	"github.com/convstream/convstream/streams/natsembed"
	"github.com/convstream/convstream/streams/orchestrator"
	"github.com/convstream/convstream/streams/worker"
	"github.com/convstream/convstream/ui"
)

// TestBrowserChat runs the viewer's chat in headless Chromium against a
// worker and the orchestrator with its built-in model: a message typed and sent gets a reply whose
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
	workertest.Run(t, nc, worker.WithLogger(slog.New(slog.DiscardHandler)), worker.WithPipelines(workertest.Pipelines()))
	c, err := client.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	const conv = "chat-b"
	// The orchestrator with its built-in model: ten words a second, far
	// more than the test waits for.
	model, err := models.NewBuiltin(models.BuiltinConfig{Tokens: 2000, TokensPerChunk: 1, Rate: 10})
	if err != nil {
		t.Fatal(err)
	}
	orch, err := orchestrator.New(nc, orchestrator.WithModel(model), orchestrator.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	octx, stopOrch := context.WithCancel(ctx)
	orchDone := make(chan struct{})
	go func() { defer close(orchDone); _ = orch.Run(octx) }()
	t.Cleanup(func() { stopOrch(); <-orchDone })

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
