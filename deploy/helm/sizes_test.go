package helmchart_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sizeValues are every size value of the chart and the worker flag each
// becomes.
var sizeValues = map[string]string{
	"worker.maxEventBytes":         "--max-event-bytes",
	"worker.maxSnapshotBytes":      "--max-snapshot-bytes",
	"worker.cacheBytes":            "--cache-bytes",
	"jetstream.streamMaxBytes":     "--stream-max-bytes",
	"jetstream.headsConfirmedFrom": "--heads-confirmed-from",
}

// TestSizeValues sets every size value, with --set and from a values file,
// to plain integers and to Kubernetes quantities, and wants the worker's
// flag in whole bytes. `--set worker.cacheBytes=2Gi` rendered
// --cache-bytes=0 (no limit) before sizes were parsed.
func TestSizeValues(t *testing.T) {
	cases := map[string]string{
		"2Gi":        "2147483648",
		"512Mi":      "536870912",
		"64Ki":       "65536",
		"1Ti":        "1099511627776",
		"1.5Gi":      "1610612736",
		"10GiB":      "10737418240",
		"64KiB":      "65536",
		"2k":         "2000",
		"3M":         "3000000",
		"1G":         "1000000000",
		"2T":         "2000000000000",
		"1048576":    "1048576",
		"0":          "0",
		"2147483648": "2147483648",
	}
	for value, flag := range sizeValues {
		for q, bytes := range cases {
			t.Run(value+"="+q, func(t *testing.T) {
				objs := mustRenderSet(t, value+"="+q)
				if value == "jetstream.streamMaxBytes" && bytes == "0" {
					noArgPrefix(t, worker(t, objs), flag) // 0 is no limit, the worker's default
					return
				}
				wantArgs(t, worker(t, objs), flag+"="+bytes)
			})
		}
		// A values file gives YAML numbers (float64 in Helm) and strings.
		for _, v := range []struct{ yaml, bytes string }{{"2147483648", "2147483648"}, {`"2Gi"`, "2147483648"}, {"1.5e9", "1500000000"}} {
			t.Run(value+" file "+v.yaml, func(t *testing.T) {
				f := filepath.Join(t.TempDir(), "values.yaml")
				parent, key, _ := strings.Cut(value, ".")
				if err := os.WriteFile(f, fmt.Appendf(nil, "%s:\n  %s: %s\n", parent, key, v.yaml), 0o644); err != nil {
					t.Fatal(err)
				}
				abs, err := filepath.Abs("testdata")
				if err != nil {
					t.Fatal(err)
				}
				rel, err := filepath.Rel(abs, f)
				if err != nil {
					t.Fatal(err)
				}
				objs, _ := mustRender(t, []string{rel})
				wantArgs(t, worker(t, objs), flag+"="+v.bytes)
			})
		}
	}
}

// TestBadSizeValues: a size that is not one fails the render with the
// value's name.
func TestBadSizeValues(t *testing.T) {
	for value := range sizeValues {
		for _, bad := range []string{"2XB", "lots", "-1", "2 Gi", "1.5", "0.3Ki", "2K", "Gi"} {
			t.Run(value+"="+bad, func(t *testing.T) {
				_, _, err := render(t, nil, value+"="+bad)
				if err == nil || !strings.Contains(err.Error(), value+"=") || !strings.Contains(err.Error(), "is not a size") {
					t.Errorf("err = %v, want one naming %s", err, value)
				}
			})
		}
	}
}

func mustRenderSet(t *testing.T, sets ...string) objects {
	t.Helper()
	objs, _ := mustRender(t, nil, sets...)
	return objs
}

// TestSizeSyntax renders worker.cacheBytes with every case of
// cmd/worker/testdata/sizes.tsv, the list the worker's TestSizes reads:
// the chart passes the bytes the worker would read, and refuses what the
// worker refuses, naming the value.
func TestSizeSyntax(t *testing.T) {
	b, err := os.ReadFile("../../cmd/worker/testdata/sizes.tsv")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\n")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		in, want, _ := strings.Cut(line, "\t")
		n++
		t.Run(in, func(t *testing.T) {
			manifest, _, err := renderManifest(t, nil, "worker.cacheBytes="+in)
			if want == "error" {
				if err == nil || !strings.Contains(err.Error(), "worker.cacheBytes") {
					t.Errorf("accepted, or refused without naming the value: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !strings.Contains(manifest, "--cache-bytes="+want+"\n") {
				t.Errorf("no --cache-bytes=%s in the manifest", want)
			}
		})
	}
	if n < 20 {
		t.Fatalf("%d cases", n)
	}
}
