package main

import (
	"bufio"
	"encoding/json"
	"io"
)

// writeJSON writes v to w as one JSON document and a newline, buffered:
// the documents export and pipeline print run to megabytes.
func writeJSON(w io.Writer, v any) error {
	b := bufio.NewWriter(w)
	if err := json.NewEncoder(b).Encode(v); err != nil {
		return err
	}
	return b.Flush()
}
