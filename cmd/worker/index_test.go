package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/convstream/convstream/internal/healthswitch"
	"github.com/convstream/convstream/streams"
)

// TestIndex: GET / answers with links to the viewer and the other
// endpoints; any other unknown path is still a 404.
func TestIndex(t *testing.T) {
	subjects, err := streams.NewSubjects("")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpHandler(healthswitch.New("waiting for NATS at nats://127.0.0.1:4222"), subjects, "", nil))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `href="ui/"`) || !strings.Contains(string(body), "/metrics") {
		t.Errorf("GET /: %s\n%s", resp.Status, body)
	}
	resp, err = http.Get(srv.URL + "/nothing")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /nothing: %s, want 404", resp.Status)
	}
}
