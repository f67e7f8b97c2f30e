package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// lockDataDir takes an exclusive lock on the embedded server's store
// directory (creating it), so that a second worker started on the same
// directory, such as a second `make run`, stops at once instead of opening
// the running one's store. The lock is the file's flock, which the kernel
// releases when the process dies, so a crash leaves no stale lock.
func lockDataDir(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("--data-dir: %w", err)
	}
	path := filepath.Join(dir, "worker.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("--data-dir: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		if errors.Is(err, errLocked) {
			return nil, fmt.Errorf("--data-dir %s is in use by another worker (it holds %s): stop it, or give this one another --data-dir", dir, path)
		}
		return nil, fmt.Errorf("--data-dir: lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// checkFree fails, naming the flag, when nothing can listen on addr, such
// as a port another worker holds, before the embedded server tries and
// waits for itself to be ready. Ports 0 and -1 (any free port) pass.
func checkFree(flagName, addr string) error {
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "0" || port == "-1" {
		return nil // the server reports a malformed address itself
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s %s: %w (another worker, or a second `make run`, may hold it: stop it, or pick another %s)", flagName, addr, err, flagName)
	}
	return ln.Close()
}
