package conversation

import (
	"math"
	"strings"
	"time"

	"github.com/convstream/convstream/internal/jsvalue"
)

// isoLayouts are the ISO 8601 shapes a createdAt string is read in, most
// common first: what JSON serialisers of dates write (UTC "Z" or an offset,
// with or without fractions of a second), and a bare date.
var isoLayouts = [...]string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02T15:04",
	"2006-01-02",
}

// timeOf turns a createdAt value into the number conversations are ordered
// by: milliseconds since the epoch. A number (or a string JavaScript reads
// as one) keeps its JavaScript numeric value; a string that is not a number
// but an ISO 8601 date counts as the instant it names, so that a
// conversation whose timestamps were serialised as dates sorts by time
// rather than by arrival (TestTimestampISOStringsSortByTime). A date without
// a zone is taken as UTC: a server has no local zone the writer meant.
// Anything else is NaN, which every sort keeps in place.
func timeOf(v any, present bool) float64 {
	n := jsvalue.Number(v, present)
	s, ok := v.(string)
	if !ok || !math.IsNaN(n) {
		return n
	}
	s = strings.TrimSpace(s)
	if len(s) < len("2006-01-02") || s[4] != '-' {
		return n
	}
	for _, layout := range isoLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return float64(t.UnixMilli())
		}
	}
	return n
}
