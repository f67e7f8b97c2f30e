//go:build !unix

package cputime

import "time"

// Process cannot read the process's CPU time on this system: it reports
// false.
func Process() (time.Duration, bool) { return 0, false }
