package main

import (
	"io"
	"os"
)

// openInput opens FILE, or stdin for "" and "-"; close releases it.
func openInput(name string, stdin io.Reader) (in io.Reader, close func(), err error) {
	if name == "" || name == "-" {
		return stdin, func() {}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	return f, func() { f.Close() }, nil
}
