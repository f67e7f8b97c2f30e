// Package loadgen drives conversations with appends and measures how fast
// their effect comes back: through the convstream worker (append →
// snapshot delta) or through a plain JetStream stream and consumer (publish
// → consume, the physical limit of the same setup).
package loadgen

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/convstream/convstream/internal/cputime"
)

// Config is one run.
type Config struct {
	// Conversations driven, and Events appended in all: event i goes to
	// conversation i mod Conversations, so each grows by a chain of
	// messages in turn.
	Conversations, Events int
	// Rate is the target of events per second; 0 publishes flat out.
	Rate float64
	// ContentBytes is the size of each message's content.
	ContentBytes int
	// Wait bounds how long the run waits, after publishing, for the last
	// effect to come back.
	Wait time.Duration
	// Warmup publishes the first event of every conversation, and waits for
	// them, before measuring the rest: the figures are those of
	// conversations that exist (a worker loads a new conversation from the
	// stream and the bucket first).
	Warmup bool
	// Progress, when set, is called about five times a second.
	Progress func(Progress)
	// Window, when positive, splits the run by publish time into windows
	// of this length and measures each (Result.Timeline).
	Window time.Duration
}

// Progress is where a run stands.
type Progress struct {
	Published, Received, Events int
	Elapsed                     time.Duration
}

// Result is what a run measured.
type Result struct {
	Name             string
	Events, Received int
	Rate             float64 // the target rate, 0: flat out
	// Start is when measuring began (the first event published after any
	// warmup); the run ends Elapsed later, when the last event came back.
	Start              time.Time `json:",omitzero"`
	Elapsed            time.Duration
	PublishRate        float64 // events/s published
	Throughput         float64 // events/s received: received / (last received − first published)
	P50, P90, P99, Max time.Duration
	// CPUBusy is the share of the machine's CPU time (every process, every
	// core) that was busy from the start of publishing until the last
	// event came back; 0 where it cannot be read (Linux /proc/stat only).
	CPUBusy float64 `json:",omitempty"`
	// GeneratorCPU is the CPU the load generator's process used over the
	// same time, in cores (its CPU time over the wall time): what
	// measuring took from the machine. 0 where it cannot be read (not
	// Unix).
	GeneratorCPU float64 `json:",omitempty"`
	// Timeline is the latency by publish window when Config.Window is set.
	Timeline []Window `json:",omitempty"`
}

// ErrIncomplete is returned with the result when not every event came
// back within the wait.
var ErrIncomplete = errors.New("loadgen: not every event came back")

// sink is what a run publishes to and hears back from.
type sink interface {
	// subject is where event k of conversation conv is published.
	subject(conv int) string
	// start begins delivering (conv, k) of what comes back to got.
	start(ctx context.Context, got func(conv, k int)) error
	stop()
}

// measure publishes the events of cfg to s and measures the round trip.
func measure(ctx context.Context, name string, pub *publisher, s sink, p *payloads, cfg Config) (Result, error) {
	skip := 0 // events published before measuring
	if cfg.Warmup {
		skip = min(cfg.Conversations, cfg.Events)
	}
	res := Result{Name: name, Events: cfg.Events - skip, Rate: cfg.Rate}
	sent := make([]atomic.Int64, cfg.Events) // publish time, unix ns
	recv := make([]int64, cfg.Events)        // when it came back, unix ns (under mu)
	lat := make([]time.Duration, 0, cfg.Events)
	var mu sync.Mutex
	seen := make([]bool, cfg.Events)
	var received, warm atomic.Int64
	var last atomic.Int64
	done, warmed := make(chan struct{}), make(chan struct{})
	got := func(conv, k int) {
		i := k*cfg.Conversations + conv
		if conv < 0 || k < 0 || i >= cfg.Events {
			return
		}
		now := time.Now().UnixNano()
		mu.Lock()
		defer mu.Unlock()
		if seen[i] || sent[i].Load() == 0 {
			return
		}
		seen[i] = true
		recv[i] = now
		if i < skip {
			if warm.Add(1) == int64(skip) {
				close(warmed)
			}
			return
		}
		lat = append(lat, time.Duration(now-sent[i].Load()))
		last.Store(now)
		if received.Add(1) == int64(res.Events) {
			close(done)
		}
	}
	if err := s.start(ctx, got); err != nil {
		return res, err
	}
	defer s.stop()
	if skip > 0 {
		for i := range skip {
			msg := &nats.Msg{Subject: s.subject(i % cfg.Conversations), Header: p.headers[i], Data: p.data[i]}
			sent[i].Store(time.Now().UnixNano())
			if err := pub.publish(ctx, msg); err != nil {
				return res, err
			}
		}
		select {
		case <-warmed:
		case <-time.After(cfg.Wait):
			return res, fmt.Errorf("loadgen: warmup: %w", ErrIncomplete)
		case <-ctx.Done():
			return res, ctx.Err()
		}
	}
	if res.Events == 0 {
		return res, nil
	}

	var published atomic.Int64
	start := time.Now()
	res.Start = start
	cpu := startCPUSampler(cfg.Window)
	defer cpu.stop()
	ownCPU, ownOK := cputime.Process()
	stopProgress := make(chan struct{})
	var wg sync.WaitGroup
	if cfg.Progress != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(200 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stopProgress:
					return
				case <-t.C:
					cfg.Progress(Progress{Published: int(published.Load()), Received: int(received.Load()), Events: res.Events, Elapsed: time.Since(start)})
				}
			}
		}()
	}
	defer func() {
		close(stopProgress)
		wg.Wait()
		if cfg.Progress != nil {
			cfg.Progress(Progress{Published: int(published.Load()), Received: int(received.Load()), Events: res.Events, Elapsed: time.Since(start)})
		}
	}()

	for i := skip; i < cfg.Events; i++ {
		if cfg.Rate > 0 {
			if d := time.Until(start.Add(time.Duration(float64(i-skip) / cfg.Rate * float64(time.Second)))); d > 0 {
				time.Sleep(d)
			}
		}
		conv := i % cfg.Conversations
		msg := &nats.Msg{Subject: s.subject(conv), Header: p.headers[i], Data: p.data[i]}
		sent[i].Store(time.Now().UnixNano())
		if err := pub.publish(ctx, msg); err != nil {
			return res, err
		}
		published.Add(1)
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
	}
	if err := pub.complete(ctx, cfg.Wait); err != nil {
		return res, err
	}
	res.PublishRate = float64(res.Events) / time.Since(start).Seconds()

	var err error
	select {
	case <-done:
	case <-time.After(cfg.Wait):
		err = ErrIncomplete
	case <-ctx.Done():
		err = ctx.Err()
	}
	busy, busyByWindow := cpu.stop()
	res.CPUBusy = busy
	if own, ok := cputime.Process(); ok && ownOK {
		res.GeneratorCPU = (own - ownCPU).Seconds() / time.Since(start).Seconds()
	}
	mu.Lock()
	defer mu.Unlock()
	res.Received = int(received.Load())
	if res.Received > 0 {
		res.Elapsed = time.Duration(last.Load() - start.UnixNano())
		res.Throughput = float64(res.Received) / res.Elapsed.Seconds()
		slices.Sort(lat)
		res.P50, res.P90, res.P99, res.Max = quantile(lat, 0.50), quantile(lat, 0.90), quantile(lat, 0.99), lat[len(lat)-1]
		if cfg.Window > 0 {
			sentAt := make([]int64, len(sent))
			for i := range sent {
				sentAt[i] = sent[i].Load()
			}
			res.Timeline = timeline(start, cfg.Window, sentAt, recv, skip)
			for i, w := range res.Timeline {
				if b := int(w.Start / cfg.Window); b < len(busyByWindow) {
					res.Timeline[i].CPUBusy = busyByWindow[b]
				}
			}
		}
	}
	return res, err
}
