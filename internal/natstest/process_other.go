//go:build !linux

package natstest

import "testing"

// ServerProcess is a nats-server running in a child process of the test
// binary; only on Linux.
type ServerProcess struct {
	// URL is the server's client URL.
	URL string
}

// RunChildServer returns at once: process clusters run only on Linux.
func RunChildServer() {}

// StartProcessCluster skips the test: process clusters run only on Linux
// (a child that dies with its parent, SIGSTOP).
func StartProcessCluster(t testing.TB, n int) []*ServerProcess {
	t.Skip("process clusters run only on Linux")
	return nil
}

// Freeze does nothing off Linux.
func (p *ServerProcess) Freeze() error { return nil }

// Thaw does nothing off Linux.
func (p *ServerProcess) Thaw() error { return nil }

// ProcessURLs lists the client URLs of procs, starting with the first'th.
func ProcessURLs(procs []*ServerProcess, first int) string { return "" }
