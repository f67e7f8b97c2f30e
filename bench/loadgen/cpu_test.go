package loadgen

import (
	"math"
	"testing"
	"time"
)

// TestParseCPUTimes reads the aggregate line of /proc/stat: idle and I/O
// wait are not busy; guest time, in user already, is not counted twice.
func TestParseCPUTimes(t *testing.T) {
	stat := []byte("cpu  100 5 20 800 30 1 4 10 7 0\ncpu0 50 2 10 400 15 1 2 5 3 0\n")
	got, ok := parseCPUTimes(stat)
	if !ok {
		t.Fatal("not read")
	}
	if want := (cpuTimes{busy: 100 + 5 + 20 + 1 + 4 + 10, total: 970}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	for _, bad := range []string{"", "cpu0 1 2 3 4 5 6 7 8\n", "cpu 1 2 3\n", "cpu 1 2 x 4 5 6 7 8\n"} {
		if _, ok := parseCPUTimes([]byte(bad)); ok {
			t.Errorf("%q read as CPU times", bad)
		}
	}
	if s := busyShare(cpuTimes{busy: 10, total: 100}, cpuTimes{busy: 40, total: 140}); math.Abs(s-0.75) > 1e-9 {
		t.Errorf("busy share %v, want 0.75", s)
	}
	if s := busyShare(cpuTimes{busy: 10, total: 100}, cpuTimes{busy: 10, total: 100}); s != 0 {
		t.Errorf("busy share of no time %v, want 0", s)
	}
}

// TestCPUSampler samples the machine where it can: a share between 0 and
// 1, one per period and the last part. On a busy machine the sampler's
// ticks come late, so the test keeps a core busy until two periods have
// been sampled, trying longer each time, rather than for a fixed time.
func TestCPUSampler(t *testing.T) {
	const period = 20 * time.Millisecond
	busy := 4 * period
	for deadline := time.Now().Add(60 * time.Second); ; busy *= 2 {
		s := startCPUSampler(period)
		if s == nil {
			t.Skip("no " + procStat + " here")
		}
		for end := time.Now().Add(busy); time.Now().Before(end); { // keep a core busy
		}
		total, byPeriod := s.stop()
		if total < 0 || total > 1 {
			t.Errorf("busy share %v, want in [0, 1]", total)
		}
		for i, b := range byPeriod {
			if b < 0 || b > 1 {
				t.Errorf("period %d: busy share %v", i, b)
			}
		}
		if len(byPeriod) >= 2 && total > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d periods, busy share %v, after %v of %v periods", len(byPeriod), total, busy, period)
		}
	}
	var none *cpuSampler
	if total, byPeriod := none.stop(); total != 0 || byPeriod != nil {
		t.Error("a sampler that could not start reports nothing")
	}
}
