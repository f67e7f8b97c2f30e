package main

import (
	"flag"
	"fmt"
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
