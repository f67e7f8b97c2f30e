package conversation

import (
	"strconv"

	"github.com/convstream/convstream/internal/jsvalue"
)

// Appenders for the hot output path (context-tree nodes), which skips
// encoding/json's reflection.

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte { return jsvalue.AppendJSONString(b, s) }

func appendInt(b []byte, n int) []byte { return strconv.AppendInt(b, int64(n), 10) }
