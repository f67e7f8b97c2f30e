package helmchart

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"sigs.k8s.io/yaml"
)

// ErrEnabledDependency is returned by WriteOfflineCopy for a dependency that
// is absent from charts/ but enabled by the chart's default values: a copy
// without it would not render what the chart renders.
var ErrEnabledDependency = errors.New("dependency enabled by default but missing from charts/")

// WriteOfflineCopy copies the chart directory src to dst (which must not
// exist) and removes from the copy's Chart.yaml every dependency that is
// missing from charts/ and disabled by the chart's default values, so that
// `helm lint --strict` and `helm template` work on the copy without
// downloading it. It returns the names of the dependencies removed.
func WriteOfflineCopy(src, dst string) ([]string, error) {
	c, err := loader.LoadDir(src)
	if err != nil {
		return nil, fmt.Errorf("helmchart: load %s: %w", src, err)
	}
	present := make(map[string]bool, len(c.Dependencies()))
	for _, d := range c.Dependencies() {
		present[d.Name()] = true
	}
	var kept []*chart.Dependency
	var dropped []string
	for _, d := range c.Metadata.Dependencies {
		if present[d.Name] {
			kept = append(kept, d)
			continue
		}
		if enabledByDefault(d, c.Values) {
			return nil, fmt.Errorf("helmchart: %w: %s (condition %q)", ErrEnabledDependency, d.Name, d.Condition)
		}
		dropped = append(dropped, d.Name)
	}

	if _, err := os.Stat(dst); err == nil {
		return nil, fmt.Errorf("helmchart: %s already exists", dst)
	}
	if err := copyTree(src, dst); err != nil {
		return nil, err
	}
	if len(dropped) == 0 {
		return nil, nil
	}
	md := *c.Metadata
	md.Dependencies = kept
	out, err := yaml.Marshal(&md)
	if err != nil {
		return nil, fmt.Errorf("helmchart: marshal Chart.yaml: %w", err)
	}
	header := "# Written by helmchart.WriteOfflineCopy: dependencies left out (absent and disabled): " +
		strings.Join(dropped, ", ") + "\n"
	if err := os.WriteFile(filepath.Join(dst, chartutil.ChartfileName), append([]byte(header), out...), 0o644); err != nil {
		return nil, fmt.Errorf("helmchart: %w", err)
	}
	return dropped, nil
}

// enabledByDefault reports whether Helm would install d with the chart's
// default values: the first condition path that holds a bool decides, and
// a dependency with no such path is enabled. Tags are not used by this
// chart and are treated the same way (any tag set to false disables).
func enabledByDefault(d *chart.Dependency, vals map[string]any) bool {
	v := chartutil.Values(vals)
	for _, path := range strings.Split(d.Condition, ",") {
		path = strings.TrimSpace(path)
		if path == "" {
			continue
		}
		if b, err := v.PathValue(path); err == nil {
			if enabled, ok := b.(bool); ok {
				return enabled
			}
		}
	}
	for _, tag := range d.Tags {
		if b, err := v.PathValue("tags." + tag); err == nil {
			if enabled, ok := b.(bool); ok && !enabled {
				return false
			}
		}
	}
	return true
}

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if e.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !e.Type().IsRegular() {
			return fmt.Errorf("helmchart: %s: not a regular file", path)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}
