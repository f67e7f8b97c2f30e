// Package testcorpus reads the gzipped JSON-lines files the tests use: the
// conformance cases, the processor records and the benchmark conversations.
package testcorpus

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
)

// maxLine bounds one line; the largest benchmark conversation is one line of
// a few MB.
const maxLine = 256 << 20

// Lines calls fn with each line of a gzipped JSON-lines file, numbered from
// 1, until fn returns false or an error.
func Lines(path string, fn func(line int, data []byte) (more bool, err error)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 0, 1<<20), maxLine)
	for n := 1; sc.Scan(); n++ {
		more, err := fn(n, sc.Bytes())
		if err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
		if !more {
			return nil
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Decode reads every line of a gzipped JSON-lines file as a T.
func Decode[T any](path string) ([]T, error) {
	var out []T
	err := Lines(path, func(_ int, data []byte) (bool, error) {
		var v T
		if err := json.Unmarshal(data, &v); err != nil {
			return false, err
		}
		out = append(out, v)
		return true, nil
	})
	return out, err
}
