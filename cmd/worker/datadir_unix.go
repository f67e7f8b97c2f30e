//go:build unix

package main

import (
	"errors"
	"os"
	"syscall"
)

// errLocked is lockFile's error when another process holds the lock.
var errLocked = syscall.EWOULDBLOCK

// lockFile takes f's exclusive flock without waiting.
func lockFile(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errLocked
	}
	return err
}
