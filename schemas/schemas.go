// Package schemas holds the JSON Schemas (draft 2020-12) of convstream's
// event contract: one file per event type, named after the type, describing
// the event's data; cloudevent.json describes the envelope and defs.json
// the shared parts. docs/events.md explains them.
package schemas

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// BaseURL is the prefix of every schema's $id.
const BaseURL = "https://github.com/convstream/convstream/schemas/"

// Envelope names the schema of the CloudEvents envelope.
const Envelope = "cloudevent"

// ErrUnknownSchema is returned for a type without a schema.
var ErrUnknownSchema = errors.New("schemas: no schema")

//go:embed *.json
var files embed.FS

// FS returns the schema files.
func FS() fs.FS { return files }

// Set is the compiled schemas, by event type (and Envelope).
type Set struct {
	byName map[string]*jsonschema.Schema
}

// Compile compiles every schema. Remote references are refused: the
// schemas refer only to each other.
func Compile() (*Set, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noRemote{})
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		raw, err := fs.ReadFile(files, e.Name())
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("schemas: %s: %w", e.Name(), err)
		}
		if err := c.AddResource(BaseURL+e.Name(), doc); err != nil {
			return nil, fmt.Errorf("schemas: %s: %w", e.Name(), err)
		}
		if e.Name() != "defs.json" {
			names = append(names, strings.TrimSuffix(e.Name(), ".json"))
		}
	}
	s := &Set{byName: make(map[string]*jsonschema.Schema, len(names))}
	for _, n := range names {
		sch, err := c.Compile(BaseURL + n + ".json")
		if err != nil {
			return nil, fmt.Errorf("schemas: %s: %w", n, err)
		}
		s.byName[n] = sch
	}
	return s, nil
}

// Names returns the event types (and Envelope) with a schema.
func (s *Set) Names() []string {
	out := make([]string, 0, len(s.byName))
	for n := range s.byName {
		out = append(out, n)
	}
	return out
}

// Validate checks a decoded JSON value (as encoding/json produces) against
// the schema of an event type, or the envelope.
func (s *Set) Validate(name string, v any) error {
	sch, ok := s.byName[name]
	if !ok {
		return fmt.Errorf("%w for %q", ErrUnknownSchema, name)
	}
	return sch.Validate(v)
}

// ValidateJSON is Validate over JSON text.
func (s *Set) ValidateJSON(name string, data []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return err
	}
	return s.Validate(name, v)
}

type noRemote struct{}

func (noRemote) Load(url string) (any, error) {
	return nil, fmt.Errorf("schemas: remote reference %s refused", url)
}
