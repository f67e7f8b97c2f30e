package natstest

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteConfig writes a nats-server configuration file.
func WriteConfig(t testing.TB, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
