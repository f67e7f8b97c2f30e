package cliflags

import (
	"flag"
	"fmt"
	"strings"
)

// Env binds the flags of a FlagSet to environment variables. Values come
// from, in order: the command line, the environment, the flag's default.
// Environment values are applied after parsing rather than as defaults, so
// -help never prints them (some are secrets).
type Env struct {
	fs   *flag.FlagSet
	vars map[string]string // flag name → variable
}

// NewEnv returns an Env for the flags of fs.
func NewEnv(fs *flag.FlagSet) *Env {
	return &Env{fs: fs, vars: map[string]string{}}
}

// Bind records that flag name, already defined on the FlagSet, can be set
// with variable, and adds " [$VARIABLE]" to its help. It panics when there
// is no such flag: a wiring mistake, not bad input.
func (e *Env) Bind(name, variable string) {
	f := e.fs.Lookup(name)
	if f == nil {
		panic("cliflags: no flag " + name)
	}
	e.vars[name] = variable
	f.Usage += " [$" + variable + "]"
}

// Variable returns the variable bound to flag name, or "".
func (e *Env) Variable(name string) string {
	return e.vars[name]
}

// Parse parses args, then fills every bound flag not given on the command
// line from its variable (Apply).
func (e *Env) Parse(args []string, getenv func(string) string) error {
	if err := e.fs.Parse(args); err != nil {
		return err
	}
	return e.Apply(getenv)
}

// Apply fills every bound flag not given on the command line from its
// variable, when set. Call it after the FlagSet is parsed.
func (e *Env) Apply(getenv func(string) string) error {
	given := map[string]bool{}
	e.fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for name, variable := range e.vars {
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
