package loadgen

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"time"
)

// cpuTimes is the machine's CPU time so far, summed over every CPU, in
// clock ticks: busy is everything but idle and I/O wait. The load
// generator, the worker and the server usually share the machine, and a
// latency tail on a machine with no core free is the machine's, not the
// worker's: the share of busy time says which.
type cpuTimes struct{ busy, total uint64 }

// procStat is where Linux keeps the counters.
const procStat = "/proc/stat"

// readCPUTimes reads the counters; ok is false where there are none (not
// Linux, no /proc).
func readCPUTimes() (cpuTimes, bool) {
	b, err := os.ReadFile(procStat)
	if err != nil {
		return cpuTimes{}, false
	}
	return parseCPUTimes(b)
}

// parseCPUTimes reads the aggregate "cpu" line of /proc/stat: user, nice,
// system, idle, iowait, irq, softirq, steal (guest time is counted in
// user already, so later fields are left out).
func parseCPUTimes(stat []byte) (cpuTimes, bool) {
	line, _, _ := bytes.Cut(stat, []byte("\n"))
	fields := bytes.Fields(line)
	if len(fields) < 9 || string(fields[0]) != "cpu" {
		return cpuTimes{}, false
	}
	var t cpuTimes
	for i, f := range fields[1:9] {
		v, err := strconv.ParseUint(string(f), 10, 64)
		if err != nil {
			return cpuTimes{}, false
		}
		t.total += v
		if i != 3 && i != 4 { // idle, iowait
			t.busy += v
		}
	}
	return t, true
}

// busyShare returns the share of the CPU time from a to b that was busy, 0
// when none passed.
func busyShare(a, b cpuTimes) float64 {
	if b.total <= a.total || b.busy < a.busy {
		return 0
	}
	return float64(b.busy-a.busy) / float64(b.total-a.total)
}

// cpuSampler reads the counters every period from when it starts until it
// stops: sample i is taken about i periods after the start.
type cpuSampler struct {
	period   time.Duration
	stopOnce sync.Once
	quit     chan struct{}
	done     chan struct{}
	samples  []cpuTimes // written by the sampling goroutine until done
	last     time.Time  // when the last sample was taken, likewise
	total    float64    // what stop returns, set once
	byPeriod []float64
}

// startCPUSampler takes the first sample now and then one every period;
// it returns nil where the counters cannot be read.
func startCPUSampler(period time.Duration) *cpuSampler {
	first, ok := readCPUTimes()
	if !ok {
		return nil
	}
	s := &cpuSampler{period: period, quit: make(chan struct{}), done: make(chan struct{}), samples: []cpuTimes{first}, last: time.Now()}
	go func() {
		defer close(s.done)
		if period <= 0 {
			<-s.quit
			return
		}
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-s.quit:
				return
			case <-t.C:
				c, ok := readCPUTimes()
				if !ok { // keeps sample i at period i; that period reads 0
					c = s.samples[len(s.samples)-1]
				}
				s.samples, s.last = append(s.samples, c), time.Now()
			}
		}
	}()
	return s
}

// stop ends the sampling and returns the busy share from the start to now
// and, by period, the busy share of each period, the last one up to now
// when at least half of it has passed (a few clock ticks say nothing).
// Later calls return the same.
func (s *cpuSampler) stop() (total float64, byPeriod []float64) {
	if s == nil {
		return 0, nil
	}
	s.stopOnce.Do(func() {
		close(s.quit)
		<-s.done
		last, ok := readCPUTimes()
		if !ok {
			return
		}
		samples := s.samples
		if time.Since(s.last) >= s.period/2 {
			samples = append(samples, last)
		}
		for i := 1; i < len(samples); i++ {
			s.byPeriod = append(s.byPeriod, busyShare(samples[i-1], samples[i]))
		}
		s.total = busyShare(samples[0], last)
	})
	return s.total, s.byPeriod
}
