package docscheck

import (
	"fmt"
	"regexp"
	"strings"
)

// Flag is a command-line flag as -help shows it or a document lists it.
type Flag struct {
	Name string
	// Env is the environment variable that sets it, "" for none.
	Env string
	// Default is the default -help shows as "(default X)", or the one a
	// document writes as code; "" for none.
	Default string
	// Usage is the description -help gives (empty for a document's).
	Usage string
}

var (
	helpFlagRE  = regexp.MustCompile(`^  -(\S+)`)
	helpEnvRE   = regexp.MustCompile(`\[\$(\w+)\]`)
	helpDefRE   = regexp.MustCompile(`\(default ("?)(.*?)("?)\)$`)
	codeCellRE  = regexp.MustCompile("^`([^`]*)`$")
	flagCellRE  = regexp.MustCompile("^`--([a-z0-9-]+)`$")
	envCellRE   = regexp.MustCompile("^`([A-Z0-9_]+)`$")
	usageDefaRE = regexp.MustCompile(`\bdefault:? `)
)

// ParseHelp reads the flags of a command's -help, as the flag package
// prints them ("  -name type" and an indented description ending in
// "[$ENV]" and "(default X)" when there are).
func ParseHelp(help string) []Flag {
	var flags []Flag
	lines := strings.Split(help, "\n")
	for i, l := range lines {
		m := helpFlagRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		f := Flag{Name: m[1]}
		for j := i + 1; j < len(lines) && strings.HasPrefix(lines[j], "    \t"); j++ {
			f.Usage += strings.TrimPrefix(lines[j], "    \t") + " "
		}
		f.Usage = strings.TrimSpace(f.Usage)
		if e := helpEnvRE.FindStringSubmatch(f.Usage); e != nil {
			f.Env = e[1]
		}
		if d := helpDefRE.FindStringSubmatch(f.Usage); d != nil {
			f.Default = d[2]
		}
		flags = append(flags, f)
	}
	return flags
}

// FlagTables returns the rows of the flag tables in the section of the
// document under the heading named section (through its subsections):
// tables whose first column is "flag", with a row a flag (`--name`), its
// environment variable (`ENV` or —), its default (as code, or in words)
// and what it does.
func (d *Doc) FlagTables(section string) ([]Flag, error) {
	var flags []Flag
	in, level := false, 0
	header := false
	for i, l := range d.Lines {
		if m := headingRE.FindStringSubmatch(l); m != nil {
			n := len(l) - len(strings.TrimLeft(l, "#"))
			switch {
			case strings.TrimSpace(m[1]) == section:
				in, level = true, n
			case in && n <= level:
				in = false
			}
			continue
		}
		if !in || !strings.HasPrefix(l, "|") {
			header = false
			continue
		}
		cells := strings.Split(strings.Trim(strings.TrimSpace(l), "|"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		if cells[0] == "flag" {
			header = true
			continue
		}
		if !header || strings.HasPrefix(cells[0], "---") {
			continue
		}
		if len(cells) < 3 {
			return nil, fmt.Errorf("%s:%d: a flag row needs flag, environment and default: %q", d.Path, i+1, l)
		}
		m := flagCellRE.FindStringSubmatch(cells[0])
		if m == nil {
			return nil, fmt.Errorf("%s:%d: first cell %q: want `--name`", d.Path, i+1, cells[0])
		}
		f := Flag{Name: m[1]}
		if e := envCellRE.FindStringSubmatch(cells[1]); e != nil {
			f.Env = e[1]
		} else if cells[1] != "—" {
			return nil, fmt.Errorf("%s:%d: environment cell %q: want `ENV` or —", d.Path, i+1, cells[1])
		}
		if c := codeCellRE.FindStringSubmatch(cells[2]); c != nil {
			f.Default = c[1]
		}
		flags = append(flags, f)
	}
	if len(flags) == 0 {
		return nil, fmt.Errorf("%s: no flag table under the heading %q", d.Path, section)
	}
	return flags, nil
}

// CompareFlags returns how the flags a document lists differ from those
// -help shows, each problem in a sentence naming the flag: a flag missing
// from either or listed twice, another environment variable, or a
// default written as code that is not the one -help shows (in
// "(default X)", or in its description as "default X").
func CompareFlags(doc, help []Flag, docName string) []string {
	var problems []string
	byName := map[string]Flag{}
	for _, f := range help {
		byName[f.Name] = f
	}
	seen := map[string]bool{}
	for _, f := range doc {
		h, ok := byName[f.Name]
		switch {
		case seen[f.Name]:
			problems = append(problems, fmt.Sprintf("--%s is listed twice in %s", f.Name, docName))
			continue
		case !ok:
			problems = append(problems, fmt.Sprintf("--%s is in %s but not in -help: remove its row", f.Name, docName))
			continue
		}
		seen[f.Name] = true
		if f.Env != h.Env {
			problems = append(problems, fmt.Sprintf("--%s: %s says environment %q, -help %q", f.Name, docName, f.Env, h.Env))
		}
		if f.Default != "" && f.Default != h.Default && !usageSays(h.Usage, f.Default) && !(h.Default == "" && zero[f.Default]) {
			problems = append(problems, fmt.Sprintf("--%s: %s says default `%s`, -help %q", f.Name, docName, f.Default, h.Default))
		}
	}
	for _, f := range help {
		if !seen[f.Name] {
			problems = append(problems, fmt.Sprintf("--%s is in -help but not in %s: add a row (flag, environment, default, what)", f.Name, docName))
		}
	}
	return problems
}

// zero are the defaults -help leaves out.
var zero = map[string]bool{"0": true, "false": true, "0s": true}

// usageSays says whether a flag's description gives def as its default
// ("default 1GiB", "default: off").
func usageSays(usage, def string) bool {
	for _, loc := range usageDefaRE.FindAllStringIndex(usage, -1) {
		if strings.HasPrefix(usage[loc[1]:], def) {
			return true
		}
	}
	return false
}

// FlagsProblems compares the flag tables of section in the markdown file
// at path (docs/flags.md) with a binary's -help output, and returns what
// differs, each naming the file and section, or why the file could not be
// read.
func FlagsProblems(path, section, help string) ([]string, error) {
	doc, err := Read(path)
	if err != nil {
		return nil, err
	}
	rows, err := doc.FlagTables(section)
	if err != nil {
		return nil, err
	}
	return CompareFlags(rows, ParseHelp(help), fmt.Sprintf("docs/flags.md, %q", section)), nil
}
