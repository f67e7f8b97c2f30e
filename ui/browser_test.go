package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/nats-io/nats.go"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/internal/testcorpus"
	"github.com/convstream/convstream/internal/workertest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
	"github.com/convstream/convstream/streams/natsembed"
	"github.com/convstream/convstream/streams/worker"
	"github.com/convstream/convstream/ui"
)

// browserCase is the conformance conversation the browser test loads: a
// user turn, assistant groups with tools, compare columns, a supervisor,
// tasks, and a message with two branches.
const browserCase = "normal-s2-0019"

// TestBrowserViewer runs the viewer in headless Chromium against an
// embedded JetStream server with a WebSocket listener and a worker: it
// loads a conformance conversation through the client, checks that the
// page renders the snapshot's flatList in order, switches a branch with
// the ‹ › buttons, checks that the view becomes the flatList Parse gives
// for the updated conversation, asks for the inference context, and
// saves a screenshot (logged; kept with go test -artifacts, and copied to
// ui/screenshots when UI_SCREENSHOTS is set).
func TestBrowserViewer(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium not installed (apt-get install chromium): browser test skipped")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	v := startViewer(ctx, t, chromium, browserCase, "browser-1")
	bctx, input, snap, want, events := v.bctx, v.input, v.snap, v.want, v.events
	version := func(v int) string { return fmt.Sprintf(`#transcript[data-version="%d"]`, v) }
	rendered := evaluate[[]string](t, bctx, renderedIDs)
	if !slices.Equal(rendered, want) {
		t.Fatalf("rendered order %v, flatList %v", rendered, want)
	}
	t.Logf("rendered %d entries in flatList order: %v", len(rendered), rendered)

	// Switch the first switchable branch to its neighbour.
	entry, to := firstBranch(t, snap.FlatList)
	button := fmt.Sprintf(`li.entry[data-id=%q] > .branch > .branch-next`, entry.ID)
	if to < entry.Branch.ActiveBranchIndex {
		button = strings.Replace(button, "branch-next", "branch-prev", 1)
	}
	if err := chromedp.Do(bctx,
		chromedp.Click(chromedp.CSS(button)),
		chromedp.WaitVisible(chromedp.CSS(version(events+1))),
	); err != nil {
		t.Fatalf("switching the branch of %s: %v", entry.ID, err)
	}
	rendered = evaluate[[]string](t, bctx, renderedIDs)
	setActiveBranch(t, input, entry.ParentID, to)
	after := parseIDs(t, input)
	if slices.Equal(after, want) {
		t.Fatalf("switching %s to branch %d changes nothing in Parse: bad test case", entry.ParentID, to)
	}
	if !slices.Equal(rendered, after) {
		t.Fatalf("after the switch rendered %v, Parse of the updated conversation %v", rendered, after)
	}
	t.Logf("switched %s (parent %s) to branch %d: now %v", entry.ID, entry.ParentID, to+1, rendered)

	// Deltas carry no contextTree: the tree panel follows the stored
	// snapshot, which shows the switched branch after the next store.
	treeShows := fmt.Sprintf(`Number(document.getElementById("tree").dataset.version) >= %d`, events+1)
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool](treeShows, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatalf("the contextTree panel never caught up with version %d after switching %s: %v (it shows version %s)", events+1, entry.ParentID, err,
			evaluate[string](t, bctx, `document.getElementById("tree").dataset.version`))
	}

	// The inference context, with per-processor durations.
	if err := chromedp.Do(bctx,
		chromedp.Click(chromedp.CSS("#infer")),
		chromedp.WaitVisible(chromedp.CSS(`#inference:is([data-state="done"], [data-state="error"])`)),
	); err != nil {
		t.Fatalf("inference context: %v", err)
	}
	if state := evaluate[string](t, bctx, `document.getElementById("inference").dataset.state`); state != "done" {
		t.Fatalf("inference context: %s", evaluate[string](t, bctx, `document.getElementById("inference").textContent`))
	}
	processors := evaluate[int](t, bctx, `document.querySelectorAll("#inference table.durations tr").length`)
	shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if processors == 0 {
		t.Fatal("no processor durations shown")
	}
	path := filepath.Join(t.ArtifactDir(), "viewer.png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
	if dir := os.Getenv("UI_SCREENSHOTS"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, "viewer.png"), shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// toolCase is a conformance conversation that branches at tool results
// and whose assistant messages call tools without any text.
const toolCase = "normal-s2-0002"

// TestBrowserInferenceToolCalls opens the viewer on toolCase and asks for
// the inference context: every message of it renders, tool calls without
// text among them (which once threw "Cannot read properties of undefined
// (reading 'length')"), and none as "undefined". The contextTree panel
// marks each branch point's active branch and takes more than the fixed
// 285 px it once had in a 1400 px window.
func TestBrowserInferenceToolCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium not installed (apt-get install chromium): browser test skipped")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	v := startViewer(ctx, t, chromium, toolCase, "browser-tools")
	treeReady := fmt.Sprintf(`Number(document.getElementById("tree").dataset.version) >= %d`, v.events)
	if _, err := chromedp.Run(v.bctx, chromedp.Poll[bool](treeReady, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("the contextTree panel never showed version %d: %v", v.events, err)
	}
	if active := evaluate[int](t, v.bctx, `document.querySelectorAll("#tree .sub.active").length`); active == 0 {
		t.Error("the contextTree panel marks no active branch")
	}
	if width := evaluate[float64](t, v.bctx, `document.getElementById("tree").getBoundingClientRect().width`); width <= 300 {
		t.Errorf("the contextTree panel is %.0f px wide in a 1400 px window", width)
	}

	if err := chromedp.Do(v.bctx,
		chromedp.Click(chromedp.CSS("#infer")),
		chromedp.WaitVisible(chromedp.CSS(`#inference:is([data-state="done"], [data-state="error"])`)),
	); err != nil {
		t.Fatalf("inference context: %v", err)
	}
	if state := evaluate[string](t, v.bctx, `document.getElementById("inference").dataset.state`); state != "done" {
		t.Fatalf("inference context: %s", evaluate[string](t, v.bctx, `document.getElementById("inference").textContent`))
	}
	items := evaluate[[]string](t, v.bctx, `[...document.querySelectorAll("#inference .ctx-messages li")].map(li => li.textContent)`)
	calls := 0
	for _, it := range items {
		if strings.Contains(it, "undefined") {
			t.Errorf("inference message rendered as %q", it)
		}
		if strings.Contains(it, "→ ") {
			calls++
		}
	}
	if calls == 0 {
		t.Errorf("no tool call among the %d inference messages: %q", len(items), items)
	}
	t.Logf("inference context: %d messages, %d with tool calls", len(items), calls)
}

// viewer is the viewer of a conformance conversation in headless Chromium
// (startViewer).
type viewer struct {
	bctx   context.Context
	client *client.Client
	conv   string
	input  *caseInput
	snap   *streams.Snapshot
	want   []string // the stored snapshot's flatList ids
	events int
}

// startViewer starts an embedded JetStream server with a WebSocket
// listener, a worker and the viewer's HTTP server, loads the conformance
// case name as conversation conv, and opens the viewer on it in Chromium
// once the stored snapshot has every event.
func startViewer(ctx context.Context, t *testing.T, chromium, name, conv string) *viewer {
	t.Helper()
	ns := workertest.Server(t, natsembed.Config{WebSocket: "127.0.0.1:-1"})
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	workertest.Run(t, nc, worker.WithLogger(slog.New(slog.DiscardHandler)), worker.WithPipelines(workertest.Pipelines()))

	subjects, _ := streams.NewSubjects("")
	wsURL, _ := url.Parse(ns.WebsocketURL())
	wsPort, _ := strconv.Atoi(wsURL.Port())
	mux := http.NewServeMux()
	mux.Handle("/ui/", http.StripPrefix("/ui", ui.Handler(ui.Config{
		WebSocketPort: wsPort, Prefix: subjects.Prefix(), Bucket: subjects.SnapshotBucket(),
	})))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	// Load the conversation: groups, then every message, in input order.
	input := loadCase(t, name)
	client, err := client.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range input.Groups {
		if _, err := client.Send(ctx, conv, streams.TypeGroupsUpserted, g); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range input.Messages {
		if _, err := client.Send(ctx, conv, streams.TypeMessageAppended, m); err != nil {
			t.Fatal(err)
		}
	}
	events := len(input.Groups) + len(input.Messages)
	snap := natstest.WaitVersion(t, client, conv, uint64(events), 20*time.Second)
	want := ids(t, snap.FlatList)
	if parsed := parseIDs(t, input); !slices.Equal(want, parsed) {
		t.Fatalf("snapshot flatList %v, Parse gives %v", want, parsed)
	}

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromium),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
	)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	t.Cleanup(cancelBrowser)

	page := srv.URL + "/ui/?c=" + conv
	version := func(v int) string { return fmt.Sprintf(`#transcript[data-version="%d"]`, v) }
	if err := chromedp.Do(bctx,
		chromedp.Navigate(page),
		chromedp.WaitVisible(chromedp.CSS(version(events))),
	); err != nil {
		t.Fatalf("loading %s: %v", page, err)
	}
	return &viewer{bctx: bctx, client: client, conv: conv, input: input, snap: snap, want: want, events: events}
}

// evaluate runs a JavaScript expression in the page.
func evaluate[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// renderedIDs is the page's transcript order.
const renderedIDs = `[...document.querySelectorAll("#transcript > li.entry")].map(e => e.dataset.id)`

type caseInput struct {
	Messages []map[string]any `json:"messages"`
	Groups   []map[string]any `json:"messageGroups,omitempty"`
}

func loadCase(t *testing.T, name string) *caseInput {
	t.Helper()
	type namedCase struct {
		Name  string    `json:"name"`
		Input caseInput `json:"input"`
	}
	cases, err := testcorpus.Decode[namedCase]("../conversation/testdata/conformance/generated-normal.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if c.Name == name || strings.HasPrefix(c.Name, name+" ") {
			return &c.Input
		}
	}
	t.Fatalf("conformance case %s not found", name)
	return nil
}

type flatEntry struct {
	ID       string `json:"id"`
	ParentID string `json:"parentId"`
	Branch   *struct {
		ActiveBranchIndex int `json:"activeBranchIndex"`
		Count             int `json:"count"`
	} `json:"branch"`
}

func entries(t *testing.T, v any) []flatEntry {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out []flatEntry
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func ids(t *testing.T, flatList any) []string {
	var out []string
	for _, e := range entries(t, flatList) {
		out = append(out, e.ID)
	}
	return out
}

// parseIDs runs conversation.Parse over the input and returns its flatList ids.
func parseIDs(t *testing.T, in *caseInput) []string {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	msgs, groups, err := conversation.DecodeInputBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	res, err := conversation.Parse(msgs, groups)
	if err != nil {
		t.Fatal(err)
	}
	return ids(t, res.FlatList)
}

// firstBranch returns the first entry whose branch can be switched, and
// the branch index to switch to.
func firstBranch(t *testing.T, flatList any) (flatEntry, int) {
	t.Helper()
	for _, e := range entries(t, flatList) {
		if e.Branch == nil || e.ParentID == "" || e.Branch.Count < 2 {
			continue
		}
		if e.Branch.ActiveBranchIndex+1 < e.Branch.Count {
			return e, e.Branch.ActiveBranchIndex + 1
		}
		return e, e.Branch.ActiveBranchIndex - 1
	}
	t.Fatal("the case has no switchable branch")
	return flatEntry{}, 0
}

// setActiveBranch applies what the page publishes: the merge patch
// {"metadata":{"activeBranchIndex":to}} on the parent.
func setActiveBranch(t *testing.T, in *caseInput, parentID string, to int) {
	t.Helper()
	for _, m := range in.Messages {
		if m["id"] != parentID {
			continue
		}
		md, _ := m["metadata"].(map[string]any)
		if md == nil {
			md = map[string]any{}
		}
		md["activeBranchIndex"] = to
		m["metadata"] = md
		return
	}
	t.Fatalf("parent %s not in the input", parentID)
}
