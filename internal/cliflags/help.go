package cliflags

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

var (
	helpEntry    = regexp.MustCompile(`(?m)^  -(\S+)[^\n]*\n[^\n]*`)
	helpVariable = regexp.MustCompile(`\[\$(\w+)\]`)
)

// CheckNATSHelp checks a command's help, as flag.PrintDefaults or the
// worker's grouped usage writes it, against the NATS connection flags:
// every one shown with its environment variable, and no other nats-* flag
// or CONVSTREAM_NATS_* variable. The commands' tests call it, so that the
// worker, convctl and convload show the same names.
func CheckNATSHelp(help string) error {
	shown := map[string]string{} // flag → variable
	for _, e := range helpEntry.FindAllStringSubmatch(help, -1) {
		v := ""
		if m := helpVariable.FindStringSubmatch(e[0]); m != nil {
			v = m[1]
		}
		shown[e[1]] = v
	}
	var errs []string
	known := map[string]bool{}
	for _, f := range natsFlags {
		known[f.name] = true
		if v, ok := shown[f.name]; !ok {
			errs = append(errs, fmt.Sprintf("-%s missing", f.name))
		} else if v != f.variable {
			errs = append(errs, fmt.Sprintf("-%s shown with $%s, want $%s", f.name, v, f.variable))
		}
	}
	for name, v := range shown {
		if (strings.HasPrefix(name, "nats-") || strings.HasPrefix(v, "CONVSTREAM_NATS_")) && !known[name] {
			errs = append(errs, fmt.Sprintf("-%s ($%s) is not one of the shared NATS flags", name, v))
		}
	}
	if errs == nil {
		return nil
	}
	sort.Strings(errs)
	return errors.New(strings.Join(errs, "; "))
}
