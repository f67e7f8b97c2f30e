//go:build upgrade && linux

package upgradetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/convstream/convstream/conversation"
	"github.com/convstream/convstream/internal/workertest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
	"github.com/convstream/convstream/streams/natsembed"
	"github.com/convstream/convstream/streams/worker"
)

// previousRelease is the commit of the release this one upgrades from and
// rolls back to. UPGRADE_FROM names another.
const previousRelease = "a1233e34419a583cb7670357d31ebf711a5c9caa"

// Sizes of the run: conversations written to, and the pause between two
// events (about 150 events a second on a loaded machine; the publisher
// waits for each acknowledgement, so that a conversation's events are
// stored in the order the model applies them).
const (
	conversations = 40
	eventPause    = 4 * time.Millisecond
)

// TestRollingUpgrade builds cmd/worker of the previous release (from its
// commit, out of git history) and of this tree, and with events flowing
// all along, against one NATS server (workers sharing a consumer, then
// owning partitions): runs the old worker; starts the new
// one beside it (a mixed fleet) and stops the old one (SIGTERM, as a
// rolling update does); then rolls back the same way, an old worker
// started beside the new one, which is stopped, so that the old release
// reads the snapshots and checkpoints the new one wrote; or, instead of
// rolling back, turns event compaction on (worker.EnableEventCompaction),
// which the new release does not do on its own on a stream the previous
// one made (docs/operations.md, "Event compaction"). At every step
// each conversation's stored snapshot, once it has caught up with the
// events published so far, equals conversation.Parse of the model's
// messages at its version; so does every snapshot written in the whole
// run (the bucket watched throughout); nothing is rejected; no worker
// finds a checkpoint it cannot use or a form of a newer release.
func TestRollingUpgrade(t *testing.T) {
	from := previousRelease
	if v := os.Getenv("UPGRADE_FROM"); v != "" {
		from = v
	}
	root := repoRoot(t, from)
	dir := t.TempDir()
	oldSrc := filepath.Join(dir, "old")
	exportTree(t, root, from, oldSrc)
	oldBin := buildWorker(t, oldSrc, filepath.Join(dir, "worker-old"))
	newBin := buildWorker(t, root, filepath.Join(dir, "worker-new"))

	// Workers sharing one consumer, and workers owning partitions of the
	// events stream (ownership, hand-offs and the members bucket between
	// releases), forward and back; and forward for good, this release
	// then compacting the events stream the previous one wrote.
	t.Run("shared", func(t *testing.T) { roll(t, oldBin, newBin, true) })
	t.Run("partitions", func(t *testing.T) { roll(t, oldBin, newBin, true, "--partitions", "4") })
	t.Run("forward-compacting", func(t *testing.T) { roll(t, oldBin, newBin, false) })
}

// roll runs the steps of TestRollingUpgrade against a server of its own,
// every worker with flags: forward, and back when back is set.
func roll(t *testing.T, oldBin, newBin string, back bool, flags ...string) {
	dir := t.TempDir()
	ns := workertest.Server(t, natsembed.Config{})
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	subjects, _ := streams.NewSubjects("")
	var rejections sync.Map
	if _, err := nc.Subscribe(subjects.Errors("*"), func(m *nats.Msg) { rejections.Store(string(m.Data), true) }); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil { // counting from the first event
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	logs := filepath.Join(dir, "logs")
	if err := os.Mkdir(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	var procs []*workerProc
	t.Cleanup(func() {
		for _, p := range procs {
			p.kill()
		}
		if t.Failed() {
			for _, p := range procs {
				p.printLog(t)
			}
		}
	})
	start := func(name, bin string, more ...string) *workerProc {
		p := startWorker(t, name, bin, ns.ClientURL(), logs, append(more, flags...)...)
		procs = append(procs, p)
		return p
	}

	m := newModel()
	watched := watchSnapshots(t, ctx, js, subjects.SnapshotBucket())

	old1 := start("old-1", oldBin)
	pub := m.publish(t, js, subjects)
	step := func(what string) {
		time.Sleep(3 * time.Second) // events flow meanwhile
		m.checkCaughtUp(t, ctx, c, what)
		watched.check(t, m, false)
	}
	step("previous release alone")

	// With the default flags, compaction on: a stream the previous
	// release made says nothing of compaction, so this release purges
	// nothing of it (docs/operations.md, "Event compaction"). A worker of
	// the previous release that replays a conversation from its first
	// event, as it does when it sets a checkpoint aside (one newer than a
	// redelivered event), would rebuild it without the events compacted
	// away.
	new1 := start("new-1", newBin)
	step("both releases (rolling forward)")
	old1.stop(t)
	step("this release alone")
	purges := func(p *workerProc) int { return p.counter(t, "convstream_compactions_total", `outcome="purged"`) }
	if n := purges(new1); n != 0 {
		t.Errorf("worker new-1 purged the previous release's stream %d times", n)
	}

	last := new1
	if back {
		last = start("old-2", oldBin)
		step("both releases (rolling back)")
		if n := purges(new1); n != 0 {
			t.Errorf("worker new-1 purged the previous release's stream %d times", n)
		}
		new1.stop(t)
		step("previous release alone, after the rollback")
	} else {
		// The roll done for good: compaction turned on, as convctl
		// compaction --enable does. The running worker reads it and,
		// once it has settled, purges events the previous release
		// stored, rebuilding what it takes over from checkpoints.
		mark, err := worker.EnableEventCompaction(ctx, js, subjects)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("compaction turned on (%s): purges from %v", mark, mark.PurgesFrom().Format(time.RFC3339))
		deadline := mark.PurgesFrom().Add(2 * time.Minute)
		for purges(new1) == 0 { // events flow meanwhile
			if time.Now().After(deadline) {
				t.Fatalf("worker new-1 purged nothing by %v", deadline.Format(time.RFC3339))
			}
			time.Sleep(time.Second)
		}
		step("this release alone, compacting")
	}

	published := pub.stop(t)
	m.checkCaughtUp(t, ctx, c, "the end")
	time.Sleep(time.Second) // the last stores reach the watcher
	watched.check(t, m, true)
	// The last worker took the conversations over from the one before it:
	// it rebuilt them from checkpoints, some written by the other release.
	if n := last.counter(t, "convstream_rebuilds_total", `from="checkpoint"`); n == 0 {
		t.Errorf("worker %s rebuilt no conversation from a checkpoint", last.name)
	} else {
		t.Logf("worker %s rebuilt %d conversations from checkpoints, %d from events alone", last.name, n,
			last.counter(t, "convstream_rebuilds_total", `from="events"`))
	}
	purged := last.counter(t, "convstream_compactions_total", `outcome="purged"`)
	last.stop(t)

	stream, err := js.Stream(ctx, subjects.EventsStream())
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Each event stored once (compaction purges the events checkpoints
	// cover, so the stream holds fewer than were stored).
	if info.State.LastSeq != uint64(published) {
		t.Errorf("the events stream stored %d events, want the %d published", info.State.LastSeq, published)
	}
	if !back && (purged == 0 || info.State.Msgs >= info.State.LastSeq) {
		t.Errorf("worker %s compacted nothing: %d purges, %d of %d events still in the stream", last.name, purged, info.State.Msgs, info.State.LastSeq)
	}
	rejections.Range(func(k, _ any) bool {
		t.Errorf("rejected: %s", k)
		return true
	})
	for _, p := range procs {
		for _, bad := range []string{"checkpoint not usable", "stored by a newer release"} {
			if p.logHas(t, bad) {
				t.Errorf("worker %s logged %q", p.name, bad)
			}
		}
	}
	t.Logf("%d events over %d conversations (%d still in the stream); %d snapshots stored were checked against Parse",
		published, conversations, info.State.Msgs, watched.checked)
}

// repoRoot returns the top of the git work tree the test runs in, and
// skips the test when there is none or it lacks commit (a shallow clone).
func repoRoot(t *testing.T, commit string) string {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("SKIP upgrade test: no git work tree to build the previous release from (%v)", err)
	}
	root := strings.TrimSpace(string(out))
	if err := exec.Command("git", "-C", root, "cat-file", "-e", commit+"^{commit}").Run(); err != nil {
		t.Skipf("SKIP upgrade test: git history lacks the previous release's commit %s (a shallow clone?)", commit)
	}
	return root
}

// exportTree writes the files of commit into dir (git archive).
func exportTree(t *testing.T, root, commit, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", commit)
	untar := exec.Command("tar", "-x", "-C", dir)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	untar.Stdin = pipe
	var errs bytes.Buffer
	archive.Stderr, untar.Stderr = &errs, &errs
	if err := untar.Start(); err != nil {
		t.Fatal(err)
	}
	if err := archive.Run(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", commit, err, errs.String())
	}
	if err := untar.Wait(); err != nil {
		t.Fatalf("tar: %v\n%s", err, errs.String())
	}
}

// buildWorker builds cmd/worker of the module in src to bin. Modules come
// from the module cache or the proxy, as for any build.
func buildWorker(t *testing.T, src, bin string) string {
	t.Helper()
	began := time.Now()
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/worker")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/worker in %s: %v\n%s", src, err, out)
	}
	t.Logf("built %s in %v", filepath.Base(bin), time.Since(began).Round(time.Millisecond))
	return bin
}

// workerProc is a cmd/worker process.
type workerProc struct {
	name, log, http string
	cmd             *exec.Cmd
	done            chan struct{}
}

// startWorker starts bin against natsURL and waits until its /readyz
// answers 200, as a rolling update does before it goes on.
func startWorker(t *testing.T, name, bin, natsURL, logDir string, flags ...string) *workerProc {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	p := &workerProc{name: name, log: filepath.Join(logDir, name+".log"), http: addr, done: make(chan struct{})}
	logf, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--nats-url", natsURL, "--http", addr, "--ack-wait", "2s", "--log-level", "warn"}, flags...)
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the test
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); _ = logf.Close(); close(p.done) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-p.done:
			p.printLog(t)
			t.Fatalf("worker %s exited before it was ready: %v", name, p.cmd.ProcessState)
		default:
		}
		if resp, err := http.Get("http://" + addr + "/readyz"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker %s not ready within a minute", name)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("worker %s (%s) ready", name, filepath.Base(bin))
	return p
}

// counter sums the samples of a Prometheus counter at /metrics whose
// labels hold label.
func (p *workerProc) counter(t *testing.T, name, label string) int {
	t.Helper()
	resp, err := http.Get("http://" + p.http + "/metrics")
	if err != nil {
		t.Fatalf("metrics of worker %s: %v", p.name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, name+"{") || !strings.Contains(line, label) {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err == nil {
			total += int(v)
		}
	}
	return total
}

// stop stops the worker as a rolling update does (SIGTERM), and fails the
// test when it does not exit within a minute or exits with an error.
func (p *workerProc) stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		p.kill()
		t.Fatalf("worker %s did not stop within a minute of SIGTERM", p.name)
	}
	if !p.cmd.ProcessState.Success() {
		t.Errorf("worker %s stopped with %v", p.name, p.cmd.ProcessState)
	}
	t.Logf("worker %s stopped", p.name)
}

func (p *workerProc) kill() {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *workerProc) logHas(t *testing.T, s string) bool {
	b, err := os.ReadFile(p.log)
	if err != nil {
		t.Error(err)
	}
	return bytes.Contains(b, []byte(s))
}

// printLog prints the end of the worker's log, without the conflicts a
// mixed fleet logs as a matter of course ("snapshot not stored"), and short
// enough that the test's own failures, printed before it, stay in the
// tail of a CI log.
func (p *workerProc) printLog(t *testing.T) {
	b, _ := os.ReadFile(p.log)
	var kept []string
	for _, line := range strings.Split(string(b), "\n") {
		if line != "" && !strings.Contains(line, "snapshot not stored") {
			kept = append(kept, line)
		}
	}
	out := ""
	for i := len(kept) - 1; i >= 0 && len(out)+len(kept[i]) < 2<<10; i-- {
		out = kept[i] + "\n" + out
	}
	t.Logf("log of worker %s (its end, %d lines of %d; conflicts left out):\n%s", p.name, strings.Count(out, "\n"), len(kept), out)
}

// model is what the conversations must be: every event published is
// applied to a local conversation too, and conversation.Parse of its
// messages after each event is kept under the event's stream sequence
// (the version it gives the conversation), as normalized JSON.
type model struct {
	mu    sync.Mutex
	convs []*convModel
	want  map[string]map[uint64][]byte
	last  map[string]uint64 // the sequence of each conversation's last event
}

type convModel struct {
	id   string
	live *conversation.Conversation
	ids  []string
	n    int
}

func newModel() *model {
	m := &model{want: map[string]map[uint64][]byte{}, last: map[string]uint64{}}
	for i := range conversations {
		id := fmt.Sprintf("upgrade%02d", i)
		m.convs = append(m.convs, &convModel{id: id, live: conversation.NewConversation()})
		m.want[id] = map[uint64][]byte{}
	}
	return m
}

// next returns a new event for cm, applied to its model: an append under
// one of the last few messages (branches), an edit of a message's content,
// or a delete.
func (cm *convModel) next(rng *rand.Rand) (typ string, data map[string]any, err error) {
	cm.n++
	k := cm.n
	switch r := rng.IntN(20); {
	case len(cm.ids) > 3 && r == 0:
		j := rng.IntN(len(cm.ids))
		typ, data = streams.TypeMessageDeleted, map[string]any{"id": cm.ids[j]}
		err = cm.live.Delete(cm.ids[j])
		cm.ids = append(cm.ids[:j], cm.ids[j+1:]...)
	case len(cm.ids) > 0 && r <= 3:
		id := cm.ids[rng.IntN(len(cm.ids))]
		typ, data = streams.TypeMessageUpdated, map[string]any{"id": id, "content": fmt.Sprintf("edit %d", k)}
		err = cm.live.Update(id, map[string]any{"id": id, "content": fmt.Sprintf("edit %d", k)})
	default:
		id := fmt.Sprintf("m%d", k)
		data = map[string]any{"id": id, "role": []string{"user", "assistant"}[k%2], "content": fmt.Sprintf("%s says %d", cm.id, k)}
		fields := map[string]any{"id": id, "role": data["role"], "content": data["content"]}
		if len(cm.ids) > 0 {
			parent := cm.ids[len(cm.ids)-1-rng.IntN(min(3, len(cm.ids)))]
			data["parentId"], fields["parentId"] = parent, parent
		}
		typ = streams.TypeMessageAppended
		var msg *conversation.Message
		if msg, err = conversation.NewMessage(fields); err == nil {
			err = cm.live.Append(msg)
		}
		cm.ids = append(cm.ids, id)
	}
	return typ, data, err
}

// parsed is conversation.Parse of cm's messages and groups, as normalized
// JSON of its flatList and contextTree.
func (cm *convModel) parsed() ([]byte, error) {
	res, err := conversation.Parse(cm.live.Messages(), cm.live.Groups())
	if err != nil {
		return nil, err
	}
	flat, err := json.Marshal(res.FlatList)
	if err != nil {
		return nil, err
	}
	tree, err := json.Marshal(res.ContextTree)
	if err != nil {
		return nil, err
	}
	return normalized(flat, tree)
}

// normalized is the flatList and contextTree as one JSON array with the
// keys of every object sorted, so that two encodings of the same values
// compare equal byte for byte.
func normalized(flat, tree []byte) ([]byte, error) {
	var v [2]any
	if err := json.Unmarshal(flat, &v[0]); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(tree, &v[1]); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// publisher publishes events until stopped.
type publisher struct {
	quit chan struct{}
	done chan error
	n    int
}

// publish starts publishing events of random conversations, one at a
// time, each after the last was acknowledged.
func (m *model) publish(t *testing.T, js jetstream.JetStream, s streams.Subjects) *publisher {
	p := &publisher{quit: make(chan struct{}), done: make(chan error, 1)}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 46))
	go func() {
		for {
			select {
			case <-p.quit:
				p.done <- nil
				return
			case <-time.After(eventPause):
			}
			cm := m.convs[rng.IntN(len(m.convs))]
			typ, data, err := cm.next(rng)
			if err != nil {
				p.done <- fmt.Errorf("model of %s: %w", cm.id, err)
				return
			}
			want, err := cm.parsed()
			if err != nil {
				p.done <- fmt.Errorf("parse %s: %w", cm.id, err)
				return
			}
			ev := event.New()
			ev.SetID(fmt.Sprintf("%s-%d", cm.id, cm.n))
			ev.SetSource("urn:upgradetest")
			ev.SetType(typ)
			ev.SetExtension(streams.ExtConversationID, cm.id)
			if err := ev.SetData(streams.ContentTypeJSON, data); err != nil {
				p.done <- err
				return
			}
			msg, err := streams.EncodeEvent(s.Events(cm.id), &ev, streams.Structured)
			if err != nil {
				p.done <- err
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			ack, err := js.PublishMsg(ctx, msg)
			cancel()
			if err != nil {
				p.done <- fmt.Errorf("publish %s: %w", ev.ID(), err)
				return
			}
			m.mu.Lock()
			m.want[cm.id][ack.Sequence] = want
			m.last[cm.id] = ack.Sequence
			m.mu.Unlock()
			p.n++
		}
	}()
	return p
}

// stop stops the publisher and returns how many events it published.
func (p *publisher) stop(t *testing.T) int {
	t.Helper()
	close(p.quit)
	if err := <-p.done; err != nil {
		t.Fatal(err)
	}
	return p.n
}

// checkCaughtUp waits until every conversation's stored snapshot covers
// the last event published of it when called, and checks that snapshot
// against Parse at its version.
func (m *model) checkCaughtUp(t *testing.T, ctx context.Context, c *client.Client, when string) {
	t.Helper()
	m.mu.Lock()
	target := make(map[string]uint64, len(m.last))
	for id, seq := range m.last {
		target[id] = seq
	}
	m.mu.Unlock()
	deadline := time.Now().Add(60 * time.Second)
	for id, seq := range target {
		var s *streams.Snapshot
		for {
			var err error
			s, err = c.Snapshot(ctx, id)
			if err == nil && s.Sequence >= seq {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s did not catch up with its event %d within a minute: %+v, %v", when, id, seq, s, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err := m.compare(id, s.Version, s.FlatList, s.ContextTree); err != nil {
			t.Errorf("%s: %v", when, err)
		}
	}
	t.Logf("%s: %d conversations caught up, each equal to Parse", when, len(target))
}

// compare checks a snapshot of conversation id at version against Parse
// of the model at that version.
func (m *model) compare(id string, version uint64, flat, tree []byte) error {
	m.mu.Lock()
	want, ok := m.want[id][version]
	m.mu.Unlock()
	if !ok {
		return fmt.Errorf("%s: snapshot of version %d, which no event of it has", id, version)
	}
	got, err := normalized(flat, tree)
	if err != nil {
		return fmt.Errorf("%s version %d: %w", id, version, err)
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("%s version %d differs from Parse:\n got %s\nwant %s", id, version, got, want)
	}
	return nil
}

// snapshotWatch collects every snapshot stored in the bucket.
type snapshotWatch struct {
	mu      sync.Mutex
	seen    []streams.Snapshot
	checked int
}

func watchSnapshots(t *testing.T, ctx context.Context, js jetstream.JetStream, bucket string) *snapshotWatch {
	t.Helper()
	// The first worker creates the bucket: watch it once it is there.
	wctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	w := &snapshotWatch{}
	go func() {
		for wctx.Err() == nil {
			kv, err := js.KeyValue(wctx, bucket)
			if errors.Is(err, jetstream.ErrBucketNotFound) {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			if err != nil {
				return
			}
			watcher, err := kv.WatchAll(wctx)
			if err != nil {
				return
			}
			for e := range watcher.Updates() {
				if e == nil || e.Operation() != jetstream.KeyValuePut {
					continue
				}
				var s streams.Snapshot
				if err := json.Unmarshal(e.Value(), &s); err != nil {
					s.ConversationID = "unreadable " + e.Key() + ": " + err.Error()
				}
				w.mu.Lock()
				w.seen = append(w.seen, s)
				w.mu.Unlock()
			}
			return
		}
	}()
	return w
}

// check compares every snapshot collected so far with Parse at its
// version. Before the end (final false) a snapshot of a version whose
// publish acknowledgement the model has not recorded yet waits for the
// next check.
func (w *snapshotWatch) check(t *testing.T, m *model, final bool) {
	t.Helper()
	w.mu.Lock()
	seen := w.seen
	w.seen = nil
	w.mu.Unlock()
	var later []streams.Snapshot
	for _, s := range seen {
		if strings.HasPrefix(s.ConversationID, "unreadable ") {
			t.Errorf("stored snapshot %s", s.ConversationID)
			continue
		}
		m.mu.Lock()
		_, known := m.want[s.ConversationID][s.Version]
		m.mu.Unlock()
		if !known && !final {
			later = append(later, s)
			continue
		}
		if err := m.compare(s.ConversationID, s.Version, s.FlatList, s.ContextTree); err != nil {
			t.Errorf("a stored snapshot: %v", err)
		}
		w.checked++
	}
	w.mu.Lock()
	w.seen = append(later, w.seen...)
	w.mu.Unlock()
}
