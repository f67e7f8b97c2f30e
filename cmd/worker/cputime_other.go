//go:build !unix

package main

import "time"

// processCPU cannot read the process's CPU time on this system: the idle
// collector stays off.
func processCPU() (time.Duration, bool) { return 0, false }
