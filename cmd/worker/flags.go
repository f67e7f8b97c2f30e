package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
)

// envFlags binds flags to environment variables. Values come from, in
// order: the command line, the environment, the flag's default. Environment
// values are applied after parsing rather than as defaults, so -help never
// prints them (some are secrets).
type envFlags struct {
	fs  *flag.FlagSet
	env map[string]string // flag name → variable
}

func newEnvFlags(fs *flag.FlagSet) *envFlags {
	return &envFlags{fs: fs, env: map[string]string{}}
}

// bind records that flag name can be set with variable.
func (e *envFlags) bind(name, variable string) {
	f := e.fs.Lookup(name)
	if f == nil {
		panic("envFlags: no flag " + name)
	}
	e.env[name] = variable
	f.Usage += " [$" + variable + "]"
}

// parse parses args, then fills every flag not given on the command line
// from its variable, when set.
func (e *envFlags) parse(args []string, getenv func(string) string) error {
	if err := e.fs.Parse(args); err != nil {
		return err
	}
	given := map[string]bool{}
	e.fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for name, variable := range e.env {
		if given[name] {
			continue
		}
		v := getenv(variable)
		if v == "" {
			continue
		}
		if err := e.fs.Set(name, strings.TrimSpace(v)); err != nil {
			// The value is not echoed: the variable may hold a secret.
			return fmt.Errorf("$%s: invalid value for -%s: %w", variable, name, err)
		}
	}
	return nil
}

// byteSize is a flag holding a size in bytes, written as a number with an
// optional unit: 512, 64KiB, 10GiB, 1GB, 2M (K, M, G, T; with i or B or
// neither; a bare letter means the binary unit).
type byteSize int64

func (b *byteSize) String() string {
	if b == nil || *b == 0 {
		return ""
	}
	return strconv.FormatInt(int64(*b), 10)
}

func (b *byteSize) Set(s string) error {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := s, ""
	if i >= 0 {
		num, unit = s[:i], strings.TrimSpace(s[i:])
	}
	n, err := strconv.ParseFloat(num, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("size %q: want a number of bytes with an optional unit such as 10GiB", s)
	}
	scale := map[string]float64{
		"": 1, "B": 1,
		"K": 1 << 10, "KiB": 1 << 10, "KB": 1e3,
		"M": 1 << 20, "MiB": 1 << 20, "MB": 1e6,
		"G": 1 << 30, "GiB": 1 << 30, "GB": 1e9,
		"T": 1 << 40, "TiB": 1 << 40, "TB": 1e12,
	}
	f, ok := scale[unit]
	if !ok {
		return fmt.Errorf("size %q: unknown unit %q", s, unit)
	}
	*b = byteSize(n * f)
	return nil
}

// stringList is a flag holding comma-separated values.
type stringList []string

func (l *stringList) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(*l, ",")
}

func (l *stringList) Set(s string) error {
	*l = nil
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*l = append(*l, v)
		}
	}
	return nil
}
