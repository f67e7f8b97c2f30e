package client_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestClientDependencies: the packages of this module the client compiles
// are those its doc names: the contract and the domain packages the
// contract is made of, none of the worker's.
func TestClientDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	const module = "github.com/convstream/convstream/"
	var got []string
	for _, p := range strings.Fields(string(out)) {
		if rest, ok := strings.CutPrefix(p, module); ok && rest != "streams/client" {
			got = append(got, rest)
		}
	}
	want := []string{"conversation", "enginecore", "internal/jsvalue", "processors", "providers", "streams"}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("the client compiles %v, its doc names %v", got, want)
	}
}
