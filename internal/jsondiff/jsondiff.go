// Package jsondiff compares decoded JSON documents the way the conformance
// cases require: object key order is irrelevant, array order matters,
// numbers compare by value, and an absent key differs from a null one.
package jsondiff

import (
	"fmt"
	"sort"
	"strconv"
)

// Diff returns the path and a description of the first difference between
// want and got, or "" when they are equal. Both must be values as
// encoding/json decodes them into an any.
func Diff(want, got any) string {
	return diff("$", want, got)
}

func diff(path string, want, got any) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: want object, got %s", path, describe(got))
		}
		keys := make([]string, 0, len(w)+len(g))
		for k := range w {
			keys = append(keys, k)
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			wv, wok := w[k]
			gv, gok := g[k]
			switch {
			case !wok:
				return fmt.Sprintf("%s.%s: unexpected key (got %s)", path, k, describe(gv))
			case !gok:
				return fmt.Sprintf("%s.%s: missing key (want %s)", path, k, describe(wv))
			}
			if d := diff(path+"."+k, wv, gv); d != "" {
				return d
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok {
			return fmt.Sprintf("%s: want array, got %s", path, describe(got))
		}
		for i := 0; i < len(w) && i < len(g); i++ {
			if d := diff(path+"["+strconv.Itoa(i)+"]", w[i], g[i]); d != "" {
				return d
			}
		}
		if len(w) != len(g) {
			return fmt.Sprintf("%s: want %d elements, got %d", path, len(w), len(g))
		}
		return ""
	default:
		if want != got {
			return fmt.Sprintf("%s: want %s, got %s", path, describe(want), describe(got))
		}
		return ""
	}
}

func describe(v any) string {
	switch t := v.(type) {
	case map[string]any:
		return fmt.Sprintf("object(%d keys)", len(t))
	case []any:
		return fmt.Sprintf("array(%d)", len(t))
	case string:
		if len(t) > 80 {
			t = t[:80] + "…"
		}
		return strconv.Quote(t)
	case nil:
		return "null"
	}
	return fmt.Sprint(v)
}
