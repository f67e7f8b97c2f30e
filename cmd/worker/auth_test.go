package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/client"
	"github.com/convstream/convstream/streams/worker"
)

// runWorker runs the worker as main does with args and env until the test
// ends; it returns the embedded server's URL and the log.
func runWorker(t *testing.T, args []string, env map[string]string) (string, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	args = append([]string{"--listen", "127.0.0.1:-1", "--http", "off", "--data-dir", t.TempDir(), "--log-level", "debug"}, args...)
	go func() {
		done <- run(ctx, args, func(k string) string { return env[k] }, logs,
			func(_ *worker.Worker, natsURL, _ string) { ready <- natsURL })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	select {
	case url := <-ready:
		return url, logs
	case err := <-done:
		t.Fatalf("run: %v\n%s", err, logs)
	case <-time.After(30 * time.Second):
		t.Fatalf("not ready\n%s", logs)
	}
	return "", nil
}

// TestEmbeddedAuthSecretsNotLogged runs the worker with its embedded server
// requiring a password (flags), a token (environment), and a configuration
// file with TLS client certificates and a user (the worker's own TLS and
// password flags), all at debug level; anonymous clients and wrong secrets
// are refused, the right ones apply an event, and no secret appears in the
// log.
func TestEmbeddedAuthSecretsNotLogged(t *testing.T) {
	tlsFiles := natstest.NewTLS(t)
	conf := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(conf, []byte(tlsFiles.ServerConfig()+
		"authorization { users: [ { user: worker, password: \"Conf-S3cret-pw\" } ] }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tlsOpts := []nats.Option{nats.RootCAs(tlsFiles.CA), nats.ClientCert(tlsFiles.ClientCert, tlsFiles.ClientKey)}
	cases := []struct {
		name    string
		args    []string
		env     map[string]string
		secrets []string
		good    []nats.Option
	}{
		{"password flags", []string{"--embedded-user", "ops", "--embedded-password", "Flag-S3cret-pw"}, nil,
			[]string{"Flag-S3cret-pw"}, []nats.Option{nats.UserInfo("ops", "Flag-S3cret-pw")}},
		{"token environment", nil, map[string]string{"CONVSTREAM_EMBEDDED_TOKEN": "Env-S3cret-token"},
			[]string{"Env-S3cret-token"}, []nats.Option{nats.Token("Env-S3cret-token")}},
		{"configuration file, TLS", []string{"--embedded-config", conf, "--nats-user", "worker",
			"--nats-tls-ca", tlsFiles.CA, "--nats-tls-cert", tlsFiles.ClientCert, "--nats-tls-key", tlsFiles.ClientKey},
			map[string]string{"CONVSTREAM_NATS_PASSWORD": "Conf-S3cret-pw"},
			[]string{"Conf-S3cret-pw"}, append([]nats.Option{nats.UserInfo("worker", "Conf-S3cret-pw")}, tlsOpts...)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			url, logs := runWorker(t, tc.args, tc.env)
			if nc, err := nats.Connect(url, nats.MaxReconnects(0)); err == nil {
				nc.Close()
				t.Fatal("an anonymous client connected")
			}
			wrong := append([]nats.Option{nats.MaxReconnects(0), nats.UserInfo("ops", "Wrong-S3cret")}, tlsOpts...)
			if nc, err := nats.Connect(url, wrong...); err == nil {
				nc.Close()
				t.Fatal("a wrong password connected")
			}
			nc, err := nats.Connect(url, tc.good...)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			c, err := client.New(nc)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if _, err := c.Send(ctx, "auth", streams.TypeMessageAppended, map[string]any{"id": "m1", "role": "user"}); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				if s, err := c.Snapshot(ctx, "auth"); err == nil && s.Version == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("event not applied\n%s", logs)
				}
				time.Sleep(10 * time.Millisecond)
			}
			out := logs.String()
			for _, secret := range append(tc.secrets, "Wrong-S3cret") {
				if strings.Contains(out, secret) {
					t.Errorf("secret %q in the log:\n%s", secret, out)
				}
			}
			if !strings.Contains(out, "authentication error") {
				t.Errorf("the refused client is not in the log:\n%s", out)
			}
			if testing.Verbose() {
				for _, l := range strings.Split(out, "\n") {
					if strings.Contains(strings.ToLower(l), "auth") {
						t.Log(l)
					}
				}
			}
			t.Logf("%d log lines, no secret among them", strings.Count(out, "\n"))
		})
	}
}
