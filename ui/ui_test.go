package ui_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/convstream/convstream/ui"
)

// TestHandler serves the page, its modules and config.json with the
// security headers.
func TestHandler(t *testing.T) {
	srv := httptest.NewServer(http.StripPrefix("/ui", ui.Handler(ui.Config{WebSocketPort: 4223, Prefix: "convstream", Bucket: "CONVSTREAM_SNAPSHOTS"})))
	defer srv.Close()
	get := func(path string) (*http.Response, string) {
		t.Helper()
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, string(b)
	}
	res, body := get("/ui/")
	if res.StatusCode != 200 || !strings.Contains(body, `<ol id="transcript"`) {
		t.Fatalf("/ui/: %d %.200s", res.StatusCode, body)
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Fatalf("CSP %q", csp)
	}
	for _, f := range []string{"app.js", "render.js", "tree.js", "snapshots.js", "cloudevents.js", "dom.js", "vendor/nats.js"} {
		res, _ := get("/ui/" + f)
		if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/javascript") {
			t.Fatalf("%s: %d %s", f, res.StatusCode, res.Header.Get("Content-Type"))
		}
	}
	res, body = get("/ui/config.json")
	var cfg ui.Config
	if err := json.Unmarshal([]byte(body), &cfg); err != nil || cfg.WebSocketPort != 4223 || cfg.Bucket != "CONVSTREAM_SNAPSHOTS" {
		t.Fatalf("config.json: %d %s (%v)", res.StatusCode, body, err)
	}
}

// TestVendoredNatsWS checks that the committed nats.ws bundle is the
// version web/package-lock.json pins (run `make ui` after changing it).
func TestVendoredNatsWS(t *testing.T) {
	lock, err := os.ReadFile("web/package-lock.json")
	if err != nil {
		t.Fatal(err)
	}
	var l struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(lock, &l); err != nil {
		t.Fatal(err)
	}
	want := "nats.ws " + l.Packages["node_modules/nats.ws"].Version
	got, err := os.ReadFile("static/vendor/VERSION")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(got)) != want {
		t.Fatalf("static/vendor/VERSION is %q, package-lock.json pins %q: run make ui", strings.TrimSpace(string(got)), want)
	}
}
