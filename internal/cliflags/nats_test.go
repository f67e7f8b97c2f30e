package cliflags

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/convstream/convstream/streams"
)

// TestNATSRegister: the NATS flags fill the connection configuration and
// the subject prefix from the command line and the environment, with the
// client defaults unless a command changes them.
func TestNATSRegister(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	env := NewEnv(fs)
	var n NATS
	n.Register(fs, env)
	vars := map[string]string{
		"CONVSTREAM_NATS_USER": "u", "CONVSTREAM_NATS_PASSWORD": "p", "CONVSTREAM_NATS_TLS_CA": "ca.pem",
		"CONVSTREAM_NATS_INBOX_PREFIX": "_INBOX.t1", "CONVSTREAM_SUBJECT_PREFIX": "from-env",
	}
	if err := env.Parse([]string{"--nats-creds", "a.creds", "--subject-prefix", "p1"}, func(k string) string { return vars[k] }); err != nil {
		t.Fatal(err)
	}
	want := streams.ConnConfig{URL: "nats://127.0.0.1:4222", Creds: "a.creds", User: "u", Password: "p", TLSCA: "ca.pem", InboxPrefix: "_INBOX.t1"}
	if n.Conn.URL != want.URL || n.Conn.Creds != want.Creds || n.Conn.User != want.User || n.Conn.Password != want.Password ||
		n.Conn.TLSCA != want.TLSCA || n.Conn.InboxPrefix != want.InboxPrefix || n.Prefix != "p1" {
		t.Errorf("got %+v, prefix %q; want %+v, prefix p1", n.Conn, n.Prefix, want)
	}
	for _, f := range NATSFlags() {
		fl := fs.Lookup(f.Name)
		if fl == nil || env.Variable(f.Name) != f.Variable || !strings.HasSuffix(fl.Usage, "[$"+f.Variable+"]") {
			t.Errorf("-%s: not defined with $%s", f.Name, f.Variable)
		}
	}
}

// TestNATSOptions: a command may change a flag's default and help; the
// variable stays.
func TestNATSOptions(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	var n NATS
	n.Register(fs, NewEnv(fs), WithDefault("nats-url", ""), WithUsage("nats-url", "embedded unless set"))
	f := fs.Lookup("nats-url")
	if f.DefValue != "" || f.Usage != "embedded unless set [$CONVSTREAM_NATS_URL]" {
		t.Errorf("default %q, usage %q", f.DefValue, f.Usage)
	}
	// The next command gets the shared defaults back.
	fs = flag.NewFlagSet("t", flag.ContinueOnError)
	n.Register(fs, NewEnv(fs))
	if f := fs.Lookup("nats-url"); f.DefValue != "nats://127.0.0.1:4222" {
		t.Errorf("default %q after another command changed it", f.DefValue)
	}
}

// TestCheckNATSHelp: the check finds a flag missing, one with another
// variable, and a NATS flag of one command only.
func TestCheckNATSHelp(t *testing.T) {
	help := func(extra ...string) string {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		env := NewEnv(fs)
		var n NATS
		n.Register(fs, env)
		for _, name := range extra {
			fs.String(name, "", "extra")
			env.Bind(name, "CONVSTREAM_"+strings.ToUpper(strings.ReplaceAll(name, "-", "_")))
		}
		var b strings.Builder
		fs.SetOutput(&b)
		fs.PrintDefaults()
		return b.String()
	}
	if err := CheckNATSHelp(help()); err != nil {
		t.Errorf("the shared flags themselves: %v", err)
	}
	if err := CheckNATSHelp(help("nats-jwt")); err == nil || !strings.Contains(err.Error(), "-nats-jwt") {
		t.Errorf("an extra nats-* flag: %v", err)
	}
	h := strings.Replace(help(), "[$CONVSTREAM_NATS_USER]", "[$NATS_USER]", 1)
	if err := CheckNATSHelp(h); err == nil || !strings.Contains(err.Error(), "-nats-user shown with $NATS_USER") {
		t.Errorf("another variable: %v", err)
	}
	h = strings.Replace(help(), "  -nats-token", "  -token", 1)
	if err := CheckNATSHelp(h); err == nil || !strings.Contains(err.Error(), "-nats-token missing") {
		t.Errorf("a flag missing: %v", err)
	}
}
