package main

import (
	"context"
	"net"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestSecondWorkerFailsFast: a worker whose --listen port is taken, or
// whose --data-dir another worker holds, stops within a second with an
// error naming the port or the directory (a second `make run` opened the
// first one's store and failed after 30 s with "address already in use"
// in the middle of its log).
func TestSecondWorkerFailsFast(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	env := func(string) string { return "" }
	start := time.Now()
	err = run(context.Background(), []string{"--listen", ln.Addr().String(), "--http", "off", "--data-dir", filepath.Join(t.TempDir(), "data")}, env, &syncBuffer{}, nil)
	if err == nil || !strings.Contains(err.Error(), "--listen "+ln.Addr().String()) {
		t.Errorf("port taken: %v", err)
	}
	if d := time.Since(start); d > 30*time.Second { // no hang; generous for a loaded machine
		t.Errorf("port taken: failed after %v", d)
	}

	if runtime.GOOS == "windows" {
		return
	}
	dir := filepath.Join(t.TempDir(), "data")
	unlock, err := lockDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	err = run(context.Background(), []string{"--listen", "127.0.0.1:-1", "--http", "off", "--data-dir", dir}, env, &syncBuffer{}, nil)
	if err == nil || !strings.Contains(err.Error(), "--data-dir "+dir+" is in use") {
		t.Errorf("data directory held: %v", err)
	}
	unlock()
	if unlock, err = lockDataDir(dir); err != nil {
		t.Errorf("after unlock: %v", err)
	} else {
		unlock()
	}
}
