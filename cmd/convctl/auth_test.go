package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convstream/convstream/internal/natstest"
	"github.com/convstream/convstream/internal/workertest"
	"github.com/convstream/convstream/streams"
	"github.com/convstream/convstream/streams/natsembed"
)

// TestNATSAuthFlags runs a worker against servers requiring creds
// (operator mode) over TLS with client certificates, an nkey, and a token,
// and requires convctl to send, wait for and watch an event with the
// matching flags or environment variables, and to be refused without
// them.
func TestNATSAuthFlags(t *testing.T) {
	tlsFiles := natstest.NewTLS(t)
	op := natstest.NewOperator(t)
	nkeyPub, nkeySeed := natstest.NKeyUser(t)
	workerNKeyPub, workerNKeySeed := natstest.NKeyUser(t)
	conf := func(text string) string {
		p := filepath.Join(t.TempDir(), "nats.conf")
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name   string
		ecfg   natsembed.Config
		worker streams.ConnConfig
		flags  []string
		env    map[string]string
	}{
		{"creds over TLS", natsembed.Config{ConfigFile: conf(op.ServerConfig() + tlsFiles.ServerConfig())},
			streams.ConnConfig{Creds: op.Creds("worker"), TLSCA: tlsFiles.CA, TLSCert: tlsFiles.ClientCert, TLSKey: tlsFiles.ClientKey},
			[]string{"--nats-creds", op.Creds("convctl"), "--nats-tls-ca", tlsFiles.CA, "--nats-tls-cert", tlsFiles.ClientCert, "--nats-tls-key", tlsFiles.ClientKey}, nil},
		{"nkey", natsembed.Config{ConfigFile: conf("authorization { users: [ {nkey: " + nkeyPub + "}, {nkey: " + workerNKeyPub + "} ] }\n")},
			streams.ConnConfig{NKey: workerNKeySeed}, nil, map[string]string{"CONVSTREAM_NATS_NKEY": nkeySeed}},
		{"token", natsembed.Config{Auth: natsembed.Auth{Token: "convctl-token"}},
			streams.ConnConfig{Token: "convctl-token"}, nil, map[string]string{"CONVSTREAM_NATS_TOKEN": "convctl-token"}},
		{"user and password", natsembed.Config{Auth: natsembed.Auth{User: "u", Password: "convctl-pw"}},
			streams.ConnConfig{User: "u", Password: "convctl-pw"}, []string{"--nats-user", "u"}, map[string]string{"CONVSTREAM_NATS_PASSWORD": "convctl-pw"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ecfg := tc.ecfg

			ns := workertest.Server(t, ecfg)
			wc := tc.worker
			wc.URL = ns.ClientURL()
			nc, err := streams.Connect(wc)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(nc.Close)
			workertest.Run(t, nc)
			t.Setenv("CONVSTREAM_NATS_URL", ns.ClientURL())

			code, _, errOut := convctl(t, `{"id":"m1","role":"user"}`, "send", "--timeout", "2s", "--wait", "auth")
			if code != 1 {
				t.Fatalf("without credentials: status %d\n%s", code, errOut)
			}
			t.Logf("without credentials: %s", strings.TrimSpace(errOut))
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			args := append(append([]string{"send", "--wait"}, tc.flags...), "auth")
			if code, out, errOut := convctl(t, `{"id":"m1","role":"user"}`, args...); code != 0 {
				t.Fatalf("send: %d\n%s\n%s", code, out, errOut)
			}
			args = append(append([]string{"watch", "--once"}, tc.flags...), "auth")
			if code, out, errOut := convctl(t, "", args...); code != 0 || !strings.Contains(out, `"version":1`) {
				t.Fatalf("watch: %d\n%s\n%s", code, out, errOut)
			}
		})
	}
}
