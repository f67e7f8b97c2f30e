package cliflags

import (
	"flag"
	"io"
	"strings"
	"testing"
)

// TestEnvPrecedence: a flag given on the command line wins over its
// variable, which wins over the default; help shows the variable's name,
// never its value; a bad value names the variable and the flag, not the
// value (it may be a secret).
func TestEnvPrecedence(t *testing.T) {
	newSet := func() (*flag.FlagSet, *Env, *string, *int) {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		env := NewEnv(fs)
		s := fs.String("name", "default", "a name")
		n := fs.Int("count", 1, "a count")
		env.Bind("name", "T_NAME")
		env.Bind("count", "T_COUNT")
		return fs, env, s, n
	}
	vars := map[string]string{"T_NAME": " from-env ", "T_COUNT": "7"}
	getenv := func(k string) string { return vars[k] }

	_, env, s, n := newSet()
	if err := env.Parse([]string{"-name", "from-flag"}, getenv); err != nil {
		t.Fatal(err)
	}
	if *s != "from-flag" || *n != 7 {
		t.Errorf("name %q, count %d; want from-flag (flag), 7 (variable)", *s, *n)
	}

	_, env, s, n = newSet()
	if err := env.Parse(nil, func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	if *s != "default" || *n != 1 {
		t.Errorf("name %q, count %d; want the defaults", *s, *n)
	}

	fs, env, _, _ := newSet()
	if f := fs.Lookup("name"); !strings.HasSuffix(f.Usage, "[$T_NAME]") || env.Variable("name") != "T_NAME" {
		t.Errorf("usage %q, variable %q", f.Usage, env.Variable("name"))
	}

	_, env, _, _ = newSet()
	err := env.Parse(nil, func(k string) string { return map[string]string{"T_COUNT": "s3cret"}[k] })
	if err == nil || !strings.Contains(err.Error(), "$T_COUNT") || !strings.Contains(err.Error(), "-count") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error %v: want one naming $T_COUNT and -count, without the value", err)
	}
}

// TestEnvBindUnknownFlag: binding a flag that is not defined is a wiring
// mistake, caught at once.
func TestEnvBindUnknownFlag(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	NewEnv(flag.NewFlagSet("t", flag.ContinueOnError)).Bind("missing", "T_MISSING")
}
