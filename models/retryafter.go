package models

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// retryAfter reads the wait a provider asks for before a retry from its
// answer's headers: retry-after-ms (milliseconds, as OpenAI and Anthropic
// send it), else Retry-After in seconds or as an HTTP date (RFC 9110,
// 10.2.3). It returns 0 when there is none or it cannot be read, or the
// date has passed.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < float64(24*time.Hour/time.Millisecond) {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 || s >= (24*time.Hour).Seconds() {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// withRetryAfter sets e's RetryAfter from the headers of the answer it
// was made from (nil: none) and returns e.
func withRetryAfter(e *Error, h http.Header) *Error {
	e.RetryAfter = retryAfter(h, time.Now())
	return e
}
