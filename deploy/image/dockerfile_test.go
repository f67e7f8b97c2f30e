package image

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDockerfileMatches reads the Dockerfile at the repository's root and
// checks that it builds what Build does: the same user, working directory,
// entrypoint, binaries in BinDir, build flags and label names, on a
// distroless static nonroot base (whose passwd names user 65532 and whose
// PATH is Path).
func TestDockerfileMatches(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(moduleDir, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	// Join continued lines, drop comments, split into instructions.
	text := strings.ReplaceAll(string(data), "\\\n", " ")
	var last []string // the final stage's instructions
	var builds []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "FROM ") {
			last = nil
		}
		if strings.HasPrefix(line, "RUN ") && strings.Contains(line, "go build") {
			builds = append(builds, line)
		}
		last = append(last, line)
	}
	get := func(instr string) []string {
		var out []string
		for _, l := range last {
			if strings.HasPrefix(l, instr+" ") {
				out = append(out, strings.TrimSpace(strings.TrimPrefix(l, instr+" ")))
			}
		}
		return out
	}

	if from := get("FROM"); len(from) != 1 || !strings.HasPrefix(from[0], "gcr.io/distroless/static") || !strings.HasSuffix(from[0], ":nonroot") {
		t.Errorf("final FROM %q: want a distroless static nonroot base", from)
	}
	if u := get("USER"); !reflect.DeepEqual(u, []string{User}) {
		t.Errorf("USER %q, want %s", u, User)
	}
	if w := get("WORKDIR"); !reflect.DeepEqual(w, []string{Home}) {
		t.Errorf("WORKDIR %q, want %s", w, Home)
	}
	var entry []string
	if e := get("ENTRYPOINT"); len(e) != 1 || json.Unmarshal([]byte(e[0]), &entry) != nil || !reflect.DeepEqual(entry, Entrypoint) {
		t.Errorf("ENTRYPOINT %q, want the JSON form of %q", e, Entrypoint)
	}
	if c := get("CMD"); len(c) != 0 {
		t.Errorf("CMD %q: the Go builder sets none", c)
	}

	// COPY --from=build /out/worker /out/convctl /out/orchestrator /usr/local/bin/
	copies := get("COPY")
	var copied []string
	for _, c := range copies {
		f := strings.Fields(c)
		if len(f) < 3 || f[len(f)-1] != BinDir+"/" {
			t.Errorf("COPY %q: want the binaries into %s/", c, BinDir)
			continue
		}
		for _, src := range f[1 : len(f)-1] {
			copied = append(copied, filepath.Base(src))
		}
	}
	var names []string
	for _, b := range Binaries {
		names = append(names, b.Name)
		build := ""
		for _, l := range builds {
			if strings.Contains(l, "-o /out/"+b.Name+" "+b.Package) {
				build = l
			}
		}
		for _, cmd := range strings.Split(build, "&&") {
			if !strings.Contains(cmd, "-o /out/"+b.Name+" ") {
				continue
			}
			if !strings.Contains(cmd, "CGO_ENABLED=0") || !strings.Contains(cmd, `-trimpath -ldflags="-s -w"`) || !slices.Equal(BuildFlags, []string{"-trimpath", "-ldflags=-s -w"}) {
				t.Errorf("build of %s %q: want CGO_ENABLED=0 and the flags %q", b.Name, cmd, BuildFlags)
			}
		}
		if build == "" {
			t.Errorf("no RUN builds %s from %s with -o /out/%s", b.Name, b.Package, b.Name)
		}
	}
	slices.Sort(names)
	slices.Sort(copied)
	if !slices.Equal(names, copied) {
		t.Errorf("COPY puts %v in the image, want %v", copied, names)
	}

	// LABEL k="v" k="v" ...: the same names as Labels.
	re := regexp.MustCompile(`([a-z.]+)="([^"]*)"`)
	got := map[string]string{}
	for _, l := range get("LABEL") {
		for _, m := range re.FindAllStringSubmatch(l, -1) {
			got[m[1]] = m[2]
		}
	}
	want := Config{}.Labels()
	for k := range want {
		if _, ok := got[k]; !ok {
			t.Errorf("Dockerfile has no label %s", k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("Dockerfile label %s is not one of the Go builder's", k)
		}
	}
	if got[LabelSource] != Source {
		t.Errorf("label %s = %q, want %q", LabelSource, got[LabelSource], Source)
	}
}
