// Package ui is convstream's reference conversation viewer: a static page,
// embedded in the binary, that follows a conversation with the TypeScript
// client @convstream/client (clients/typescript) over a NATS WebSocket: it
// reads the snapshot from the snapshot bucket, follows its deltas and
// renders the flatList (with a branch switcher that publishes
// message.updated events), the contextTree and the inference context.
//
// The worker mounts Handler at /ui; the page is /ui/?c=<conversationId>.
// Its script, static/viewer.js, is web/*.js bundled with the client and
// the @nats-io packages by `make ui` (clients/typescript/scripts/build-viewer.mjs);
// the bundle is committed, so `go build` needs no npm.
package ui

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
)

//go:embed static
var static embed.FS

// Config is what the page learns from config.json: where NATS is and how
// the deployment names its subjects and bucket.
type Config struct {
	// WebSocketURL is the NATS WebSocket URL the page connects to, e.g.
	// ws://127.0.0.1:4223. Empty: the page's own host with WebSocketPort.
	WebSocketURL string `json:"websocketUrl,omitempty"`
	// WebSocketPort is the port used with the page's host when
	// WebSocketURL is empty; 0 means none is known (the page asks for
	// ?ws=URL).
	WebSocketPort int `json:"websocketPort,omitempty"`
	// Prefix is the subject prefix (streams.Subjects.Prefix).
	Prefix string `json:"prefix"`
	// Bucket is the snapshot bucket (streams.Subjects.SnapshotBucket).
	Bucket string `json:"bucket"`
	// InboxPrefix is the prefix of the page's reply subjects (nats.ws's
	// inboxPrefix); empty means _INBOX. Where tenants share a NATS
	// account, the tenant's own (streams.TenantInboxPrefix).
	InboxPrefix string `json:"inboxPrefix,omitempty"`
}

// contentSecurityPolicy keeps the page to its own files; it may open
// WebSocket connections anywhere (the NATS listener is another port).
const contentSecurityPolicy = "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:; " +
	"style-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"

// Handler serves the page and config.json, relative to where it is
// mounted: mount it with http.StripPrefix("/ui", Handler(cfg)) on "/ui/".
func Handler(cfg Config) http.Handler {
	files, err := fs.Sub(static, "static")
	if err != nil {
		panic("ui: embedded files: " + err.Error()) // the embed pattern guarantees the folder
	}
	config, err := json.Marshal(cfg)
	if err != nil {
		panic("ui: config: " + err.Error()) // plain strings and ints always encode
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /config.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(config)
	})
	mux.Handle("GET /", http.FileServerFS(files))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-cache")
		mux.ServeHTTP(w, r)
	})
}
