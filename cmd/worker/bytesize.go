package main

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// byteSize is a flag holding a size in bytes, written as the Helm chart's
// values are (testdata/sizes.tsv lists the cases both sides test):
// decimal units k, M, G, T, P (also kB, KB, MB, GB, TB, PB) and binary Ki,
// Mi, Gi, Ti, Pi (also KiB, MiB, GiB, TiB, PiB), as Kubernetes quantities
// read them; a decimal point where the result is whole bytes (1.5Gi).
type byteSize int64

// sizePattern is a size: digits, an optional fraction, an optional unit.
var sizePattern = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)(B|k|kB|KB|M|MB|G|GB|T|TB|P|PB|Ki|KiB|Mi|MiB|Gi|GiB|Ti|TiB|Pi|PiB)?$`)

// sizeUnits are the units' multipliers, a trailing B dropped.
var sizeUnits = map[string]float64{
	"": 1, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15,
	"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50,
}

func (b *byteSize) String() string {
	if b == nil || *b == 0 {
		return ""
	}
	return strconv.FormatInt(int64(*b), 10)
}

func (b *byteSize) Set(s string) error {
	s = strings.TrimSpace(s)
	m := sizePattern.FindStringSubmatch(s)
	if m == nil {
		return fmt.Errorf("size %q: want bytes with an optional unit: k, M, G, T (1000s) or Ki, Mi, Gi, Ti (1024s), e.g. 512Mi or 10GiB", s)
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return fmt.Errorf("size %q: %w", s, err)
	}
	unit := m[2]
	if unit != "B" {
		unit = strings.TrimSuffix(unit, "B")
	} else {
		unit = ""
	}
	v := n * sizeUnits[unit]
	if v != math.Trunc(v) || v > math.MaxInt64 {
		return fmt.Errorf("size %q: not a whole number of bytes an int64 holds", s)
	}
	*b = byteSize(v)
	return nil
}
