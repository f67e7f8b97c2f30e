package worker

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/convstream/convstream/streams"
	"go.opentelemetry.io/otel/metric"
)

// MetricConversationsDegraded is the gauge of the conversations degraded
// now (see Degradation).
const MetricConversationsDegraded = "convstream.conversations.degraded"

// Degradation is a conversation held at a limit: an event that would have
// taken it past one was rejected (a code whose Degrades is true), or its
// snapshot could not be stored for a reason no retry changes. The conversation keeps its last good
// state and goes on taking the events that fit; it is listed until
// DegradedFor has passed since its last refusal. The worker's other
// conversations are not affected.
type Degradation struct {
	ConversationID string
	// Code and Reason are those of the last rejection or refused store.
	Code   streams.RejectCode
	Reason string
	// Sequence is the events-stream sequence of the event refused (of the
	// last event applied, for a store refused).
	Sequence uint64
	// Since is the first refusal, Last the last one.
	Since, Last time.Time
}

// DegradedFor is how long a conversation is listed as degraded after its
// last refusal: long enough for an operator to see it, short enough that
// the list names the conversations at a limit now.
const DegradedFor = time.Hour

// maxDegraded bounds the conversations the worker remembers as degraded;
// more are counted in the gauge's overflow and logged, not listed.
const maxDegraded = 10_000

// degradedSet holds the worker's degraded conversations. Its methods are
// safe for concurrent use: the lanes mark and clear, Ready and the gauge
// read.
type degradedSet struct {
	// n is len(byID), and strictN how many of them have strictUntil set,
	// read without the lock: strictN is nearly always 0, which spares
	// every event the lock, even while conversations are listed.
	n, strictN atomic.Int64
	mu         sync.Mutex
	// byID holds each degraded conversation; strictUntil, when not 0,
	// makes every event of the conversation up to that sequence measured
	// (see refuseStore).
	byID map[string]*degradedEntry
}

type degradedEntry struct {
	Degradation
	strictUntil uint64
}

// mark records that conversation id was refused an event at sequence seq
// for reason re.
func (s *degradedSet) mark(id string, seq uint64, re *streams.RejectError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entry(id)
	if e == nil {
		return
	}
	e.Code, e.Reason, e.Sequence, e.Last = re.Code, re.Reason, seq, time.Now()
}

// refused records that a snapshot of conversation id covering its events
// up to sequence seq could not be stored for reason re, and makes its
// events up to upTo (seq or later: those applied since) measured when
// applied again. again reports whether those up to seq were measured
// already: then nothing is to be gained by applying them again.
func (s *degradedSet) refused(id string, seq, upTo uint64, re *streams.RejectError) (again bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entry(id)
	if e == nil {
		return true // no room to remember it: terminate rather than loop
	}
	again = e.strictUntil >= seq
	e.Code, e.Reason, e.Sequence, e.Last = re.Code, re.Reason, seq, time.Now()
	if e.strictUntil == 0 && upTo > 0 {
		s.strictN.Add(1)
	}
	e.strictUntil = max(e.strictUntil, upTo)
	return again
}

// entry returns the entry of id, made when there is none; nil when the set
// is full. s.mu is held.
func (s *degradedSet) entry(id string) *degradedEntry {
	if e := s.byID[id]; e != nil {
		return e
	}
	if len(s.byID) >= maxDegraded {
		s.prune(time.Now())
	}
	if len(s.byID) >= maxDegraded {
		return nil
	}
	if s.byID == nil {
		s.byID = map[string]*degradedEntry{}
	}
	e := &degradedEntry{Degradation: Degradation{ConversationID: id, Since: time.Now()}}
	s.byID[id] = e
	s.n.Store(int64(len(s.byID)))
	return e
}

// strict reports whether the event of conversation id at sequence seq is
// to be measured whatever the bounds say (see refuseStore).
func (s *degradedSet) strict(id string, seq uint64) bool {
	if s.strictN.Load() == 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byID[id]
	return e != nil && seq <= e.strictUntil
}

// stored ends the measuring of conversation id's events once a snapshot
// up to sequence seq is stored past them.
func (s *degradedSet) stored(id string, seq uint64) {
	if s.strictN.Load() == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.byID[id]; e != nil && e.strictUntil != 0 && seq >= e.strictUntil {
		e.strictUntil = 0
		s.strictN.Add(-1)
	}
}

// prune forgets the conversations whose last refusal is DegradedFor
// before now and whose events are no longer measured. s.mu is held.
func (s *degradedSet) prune(now time.Time) {
	for id, e := range s.byID {
		if e.strictUntil == 0 && now.Sub(e.Last) > DegradedFor {
			delete(s.byID, id)
		}
	}
	s.n.Store(int64(len(s.byID)))
}

// count returns how many conversations are degraded now.
func (s *degradedSet) count() int64 {
	if s.n.Load() == 0 {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prune(time.Now())
	return int64(len(s.byID))
}

// list returns the degraded conversations, the last refused first.
func (s *degradedSet) list() []Degradation {
	s.mu.Lock()
	s.prune(time.Now())
	out := make([]Degradation, 0, len(s.byID))
	for _, e := range s.byID {
		out = append(out, e.Degradation)
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b Degradation) int { return b.Last.Compare(a.Last) })
	return out
}

// Degraded returns the conversations degraded now, the last refused
// first (see Degradation). /readyz lists them.
func (w *Worker) Degraded() []Degradation { return w.degraded.list() }

// degradedListed is how many degraded conversations /readyz names.
const degradedListed = 10

// degradedReport is what /readyz adds about the degraded conversations:
// "" when there are none. They do not make the worker unready: it serves
// the others, and a conversation at a limit stays there whichever worker
// holds it.
func (w *Worker) degradedReport() string {
	list := w.degraded.list()
	if len(list) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "degraded: %d conversation(s) refused an event at a limit in the last %v\n", len(list), DegradedFor)
	for _, d := range list[:min(len(list), degradedListed)] {
		fmt.Fprintf(&b, "  %s: %s at sequence %d (%s): %s\n", d.ConversationID, d.Code, d.Sequence,
			d.Last.UTC().Format(time.RFC3339), d.Reason)
	}
	return b.String()
}

// observeDegraded reports how many conversations are degraded as a gauge.
func (w *Worker) observeDegraded(mp metric.MeterProvider) error {
	_, err := mp.Meter(streams.InstrumentationName).Int64ObservableGauge(MetricConversationsDegraded,
		metric.WithDescription("Conversations held at a limit: an event refused for one, or a snapshot no retry can store (see /readyz)."),
		metric.WithUnit("{conversation}"),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(w.degraded.count())
			return nil
		}))
	return err
}
