package streams

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestTypesListed checks Types against the schemas (one file each in
// schemas/, named by the type), the types docs/events.md names and the
// TYPES of the TypeScript client, generated from the schemas.
func TestTypesListed(t *testing.T) {
	want := Types()
	t.Run("schema", func(t *testing.T) {
		files, err := filepath.Glob(schemasDir + "convstream.*.json")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range files {
			got = append(got, strings.TrimSuffix(filepath.Base(f), ".json"))
		}
		sameCodes(t, "schemas/", want, got)
	})
	typeName := regexp.MustCompile(`convstream\.[a-z]+\.[a-z]+\.v[0-9]+`)
	t.Run("docs", func(t *testing.T) {
		b, err := os.ReadFile(docsEvents)
		if err != nil {
			t.Fatal(err)
		}
		sameCodes(t, "docs/events.md", want, slices.Compact(slices.Sorted(slices.Values(typeName.FindAllString(string(b), -1)))))
	})
	t.Run("typescript", func(t *testing.T) {
		b, err := os.ReadFile(tsGeneratedDir + "types.ts")
		if err != nil {
			t.Fatal(err)
		}
		sameCodes(t, "the TypeScript TYPES", want, typeName.FindAllString(string(b), -1))
	})
	for i, typ := range want {
		if slices.Index(want, typ) != i {
			t.Errorf("%s listed twice", typ)
		}
	}
}

func TestEventTypes(t *testing.T) {
	want := []string{TypeMessageAppended, TypeMessageUpdated, TypeMessageDeleted, TypeGroupsUpserted,
		TypeMessageChunk, TypeMessageCompleted}
	if got := EventTypes(); !slices.Equal(got, want) {
		t.Errorf("EventTypes() = %v, want %v", got, want)
	}
	for _, typ := range Types() {
		if isEventType(typ) != slices.Contains(want, typ) {
			t.Errorf("isEventType(%s) = %v", typ, isEventType(typ))
		}
	}
	if isEventType("convstream.message.appended.v2") {
		t.Error("an unknown type is an event type")
	}
}
