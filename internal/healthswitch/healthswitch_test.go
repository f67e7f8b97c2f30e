package healthswitch

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestSwitch: live and not ready while waiting, the service's answers once
// set.
func TestSwitch(t *testing.T) {
	s := New("waiting for NATS at nats://127.0.0.1:4222")
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		body, _ := io.ReadAll(rec.Result().Body)
		return rec.Code, string(body)
	}
	if code, body := get("/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz while waiting: %d %q", code, body)
	}
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "waiting for NATS") {
		t.Errorf("/readyz while waiting: %d %q", code, body)
	}
	s.Set(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(rw, "service") }))
	if code, body := get("/readyz"); code != http.StatusOK || body != "service" {
		t.Errorf("/readyz once set: %d %q", code, body)
	}
}
