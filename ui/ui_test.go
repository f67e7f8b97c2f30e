package ui_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
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
	for _, f := range []string{"viewer.js"} {
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

// TestViewerBundle checks that the committed static/viewer.js was built
// from the current sources: its banner carries the SHA-256 that
// clients/typescript/scripts/build-viewer.mjs computes over web/*.js, the
// client's src/**/*.ts and its package-lock.json (run `make ui` after
// changing any of them).
func TestViewerBundle(t *testing.T) {
	var sources []string
	for _, root := range []struct{ dir, ext string }{
		{"web", ".js"},
		{"../clients/typescript/src", ".ts"},
	} {
		err := filepath.WalkDir(root.dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, root.ext) {
				sources = append(sources, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sources = append(sources, "../clients/typescript/package-lock.json")
	// Paths relative to the repository, sorted, as the build script hashes them.
	rel := make([]string, len(sources))
	for i, p := range sources {
		rel[i] = filepath.ToSlash(filepath.Join("ui", p)) // Join cleans: ui/../clients/... is clients/...
	}
	sort.Strings(rel)
	h := sha256.New()
	for _, p := range rel {
		b, err := os.ReadFile(filepath.Join("..", p))
		if err != nil {
			t.Fatal(err)
		}
		h.Write([]byte(p + "\n"))
		h.Write(b)
		h.Write([]byte("\n"))
	}
	want := "sources sha256 " + hex.EncodeToString(h.Sum(nil))
	bundle, err := os.ReadFile("static/viewer.js")
	if err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(string(bundle), "\nvar ")
	if !strings.Contains(head, want) {
		t.Fatalf("static/viewer.js is not built from the current sources (want %q in its banner): run make ui", want)
	}
}
