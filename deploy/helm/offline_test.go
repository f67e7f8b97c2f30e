package helmchart_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/lint/support"

	helmchart "github.com/convstream/convstream/deploy/helm"
)

// The chart as committed: its NATS dependency is vendored in charts/, so
// helm finds nothing to complain about, under --strict too (before, it
// reported "chart directory is missing these dependencies: nats").
func TestChartHasItsDependencies(t *testing.T) {
	c, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	if c.Metadata.Version != "0.1.0" || c.Metadata.AppVersion != "0.1.0" || c.Metadata.APIVersion != "v2" {
		t.Errorf("metadata %+v", c.Metadata)
	}
	if len(c.Metadata.Dependencies) != 1 || c.Metadata.Dependencies[0].Name != "nats" || c.Metadata.Dependencies[0].Condition != "nats.enabled" {
		t.Fatalf("dependencies %+v", c.Metadata.Dependencies)
	}
	if err := action.CheckDependencies(c, c.Metadata.Dependencies); err != nil {
		t.Fatal(err)
	}
	lint := action.NewLint()
	lint.Strict = true
	res := lint.Run([]string{chartDir}, nil)
	var problems []string
	for _, m := range res.Messages {
		if m.Severity > support.InfoSev {
			problems = append(problems, m.Err.Error())
		}
	}
	if len(problems) != 0 {
		t.Errorf("lint problems %q", problems)
	}
}

func TestWriteOfflineCopy(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "convstream")
	dropped, err := helmchart.WriteOfflineCopy(chartDir, dst)
	if err != nil {
		t.Fatal(err)
	}
	// The vendored NATS chart is present: nothing to drop.
	if len(dropped) != 0 {
		t.Errorf("dropped %q", dropped)
	}
	c, err := loader.Load(dst)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Metadata.Dependencies) != 1 || c.Metadata.Name != "convstream" {
		t.Errorf("copy metadata %+v", c.Metadata)
	}
	for _, f := range []string{"values.yaml", "templates/deployment.yaml", "templates/NOTES.txt", "README.md"} {
		a, _ := os.ReadFile(filepath.Join(chartDir, f))
		b, err := os.ReadFile(filepath.Join(dst, f))
		if err != nil || string(a) != string(b) {
			t.Errorf("%s not copied as is (%v)", f, err)
		}
	}
	lint := action.NewLint()
	lint.Strict = true
	if res := lint.Run([]string{dst}, nil); len(res.Errors) > 0 {
		t.Errorf("strict lint of the copy: %v", res.Errors)
	}

	if _, err := helmchart.WriteOfflineCopy(chartDir, dst); err == nil {
		t.Error("overwrote an existing directory")
	}
}

func TestWriteOfflineCopyRefusesEnabledDependency(t *testing.T) {
	src := filepath.Join(t.TempDir(), "c")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	chartYAML := "apiVersion: v2\nname: c\nversion: 0.1.0\ndependencies:\n  - name: dep\n    version: 1.0.0\n    repository: https://example.com/charts\n    condition: dep.enabled\n"
	for name, values := range map[string]string{"enabled": "dep:\n  enabled: true\n", "no condition value": "{}\n"} {
		if err := os.WriteFile(filepath.Join(src, "Chart.yaml"), []byte(chartYAML), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, "values.yaml"), []byte(values), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := helmchart.WriteOfflineCopy(src, filepath.Join(t.TempDir(), "out"))
		if !errors.Is(err, helmchart.ErrEnabledDependency) {
			t.Errorf("%s: err = %v, want ErrEnabledDependency", name, err)
		}
	}
}
