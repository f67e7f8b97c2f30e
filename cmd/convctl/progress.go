package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// progress draws a bar of the events sent on a terminal, redrawn in place
// at most every tick; on anything else it draws nothing, so that a log or
// a pipe gets only the summary.
type progress struct {
	w     io.Writer
	total int
	on    bool
	tick  time.Duration
	last  time.Time
	drawn bool
}

// newProgress returns the progress of total events on w, drawn when w is a
// terminal and there is more than one event.
func newProgress(w io.Writer, total int) *progress {
	return &progress{w: w, total: total, on: total > 1 && isTerminal(w), tick: 100 * time.Millisecond}
}

// isTerminal reports whether w is a character device: a terminal, not a
// file or a pipe.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// update shows that done events of the total are sent.
func (p *progress) update(done int) {
	if !p.on || (done < p.total && time.Since(p.last) < p.tick) {
		return
	}
	p.last = time.Now()
	const width = 30
	n := width * done / p.total
	fmt.Fprintf(p.w, "\r[%s%s] %d/%d", strings.Repeat("=", n), strings.Repeat(" ", width-n), done, p.total)
	p.drawn = true
}

// clear erases the bar, before the summary or an error is written.
func (p *progress) clear() {
	if p.drawn {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", 50+2*len(fmt.Sprint(p.total))))
		p.drawn = false
	}
}
