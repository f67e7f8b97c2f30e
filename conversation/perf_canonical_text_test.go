package conversation

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
)

// TestCanonicalJSON lists texts CanonicalJSON takes as they are, takes
// with their members sorted, and leaves to the general way.
func TestCanonicalJSON(t *testing.T) {
	same := []string{
		`{}`,
		`{"id":"a"}`,
		`{"content":"say \"hi\"\n\tand \\ then \u003cb\u003e \u0026 \u2028\u2029 \u0000\u001f\b\f\r","id":"a","parentId":null}`,
		`{"a":[],"b":{},"c":[1,-2,0.5,-0,1e+21,1e-7,123456789012345680000,true,false,null],"d":{"x":{"y":[{"z":"é😀"}]}}}`,
		`{"createdAt":1704067200000,"id":"m1","role":"user"}`,
	}
	for _, s := range same {
		out, ok := CanonicalJSON(nil, []byte(s))
		if !ok || string(out) != s {
			t.Errorf("%s: %q, %v; want it as it is", s, out, ok)
		}
	}
	reordered := map[string]string{
		`{"role":"user","id":"a","parentId":null}`:                     `{"id":"a","parentId":null,"role":"user"}`,
		`{"z":{"a":1,"b":2},"a":[{"c":1,"d":2}],"m":"\u003c"}`:         `{"a":[{"c":1,"d":2}],"m":"\u003c","z":{"a":1,"b":2}}`,
		`{"id":"m2","role":"assistant","content":"x","parentId":"m1"}`: `{"content":"x","id":"m2","parentId":"m1","role":"assistant"}`,
	}
	for in, want := range reordered {
		out, ok := CanonicalJSON([]byte("keep"), []byte(in))
		if !ok || string(out) != "keep"+want {
			t.Errorf("%s: %q, %v; want %s after the buffer", in, out, ok, want)
		}
	}
	general := []string{
		``, `[]`, `"a"`, `{`, `{"a":1`, `{"a":1}x`, `{"a":1,}`, `{,}`, `{"a"}`,
		` {"a":1}`, `{"a": 1}`, `{"a":1 }`, "{\"a\":1}\n",
		`{"a":{"b":1,"a":2}}`,   // unsorted below the top
		`{"a":[{"b":1,"b":2}]}`, // duplicate below the top
		`{"b":1,"a":2,"b":3}`,   // duplicate at the top
		`{"a":1.0}`, `{"a":1E+21}`, `{"a":1e21}`, `{"a":01}`, `{"a":+1}`, `{"a":.5}`, `{"a":1.}`, `{"a":-}`, `{"a":1e400}`,
		`{"a":"\/"}`, `{"a":"\u0041"}`, `{"a":"\u003C"}`, `{"a":"\ud83d\ude00"}`, `{"a":"\x"}`, `{"a":"\u12"}`,
		`{"a":"<"}`, `{"a":"&"}`, "{\"a\":\"\u2028\"}", "{\"a\":\"\x01\"}", "{\"a\":\"\xff\"}",
		`{"\u0061":1}`, `{"a\n":1}`,
		`{"a":tru}`, `{"a":nul}`, `{"a":True}`,
	}
	for _, s := range general {
		if out, ok := CanonicalJSON(nil, []byte(s)); ok {
			t.Errorf("%q: taken as %q", s, out)
		}
	}
	deep := []byte(`{"a":` + string(bytes.Repeat([]byte("["), canonicalDepth)) + string(bytes.Repeat([]byte("]"), canonicalDepth)) + `}`)
	if _, ok := CanonicalJSON(nil, deep); ok {
		t.Errorf("nesting deeper than %d taken", canonicalDepth)
	}
}

// TestCanonicalJSONCorpus takes every message of the conformance corpus in
// the form its Message stores, and with its members in reverse order (as a
// publisher that does not sort keys writes them): CanonicalJSON must
// recognize all but those it leaves to the general way by design (escaped
// keys, deep nesting), and give the stored form.
func TestCanonicalJSONCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("reads the conformance corpus")
	}
	files, _ := filepath.Glob("testdata/conformance/*.jsonl.gz")
	if len(files) == 0 {
		t.Skip("no corpus")
	}
	taken, total := 0, 0
	for _, file := range files {
		for _, c := range readCases(t, file) {
			msgs, _, err := DecodeInputBytes(c.Input)
			if err != nil {
				continue
			}
			for _, m := range msgs {
				raw, err := m.JSON()
				if err != nil {
					t.Fatal(err)
				}
				total++
				out, ok := CanonicalJSON(nil, raw)
				if !ok {
					continue
				}
				if !bytes.Equal(out, raw) {
					t.Fatalf("%s: %s became %s", c.Name, raw, out)
				}
				rev, err := reversedMembers(raw)
				if err != nil {
					t.Fatal(err)
				}
				if out, ok = CanonicalJSON(nil, rev); !ok || !bytes.Equal(out, raw) {
					t.Fatalf("%s: reversed %s: %s, %v; want %s", c.Name, rev, out, ok, raw)
				}
				taken++
			}
		}
	}
	t.Logf("canonical form recognized in %d of %d corpus messages", taken, total)
	if taken < total*9/10 {
		t.Errorf("only %d of %d corpus messages recognized", taken, total)
	}
}

// reversedMembers writes the object raw with its members in reverse order.
func reversedMembers(raw []byte) ([]byte, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	slices.Reverse(keys)
	out := []byte{'{'}
	for i, k := range keys {
		if i > 0 {
			out = append(out, ',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		out = append(append(append(out, kb...), ':'), obj[k]...)
	}
	return append(out, '}'), nil
}

// FuzzCanonicalJSON holds CanonicalJSON to its promise: what it returns is
// what NewMessage stores for the object the text decodes to, and a message
// built from it is the one NewMessageJSON builds from the text.
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{
		`{"content":"a \"b\" \u003c \n","id":"m1","parentId":null,"role":"user"}`,
		`{"role":"user","id":"a","createdAt":1704067200000}`,
		`{"a":[1,2.5,-0,1e-7,1e+21,{"b":null,"c":true}],"id":"x"}`,
		`{"id":"é","metadata":{"x":"\u2028"}}`,
		`{"b":1,"a":2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, ok := CanonicalJSON(nil, data)
		if !ok {
			return
		}
		fields, err := DecodeFields(data)
		if err != nil || fields == nil {
			t.Fatalf("%q taken, but it decodes to %v, %v", data, fields, err)
		}
		want, err := json.Marshal(fields)
		if err != nil || !bytes.Equal(out, want) {
			t.Fatalf("%q taken as %q; NewMessage stores %q (%v)", data, out, want, err)
		}
		slow, err := NewMessageJSON(data)
		if err != nil {
			return // no string id: refused either way
		}
		fast, err := NewMessageCanonical(out)
		if err != nil {
			t.Fatalf("%q: NewMessageCanonical: %v", out, err)
		}
		a, _ := slow.JSON()
		b, _ := fast.JSON()
		if !bytes.Equal(a, b) || !sameFields(slow, fast) {
			t.Fatalf("%q: messages differ: %s against %s", data, a, b)
		}
	})
}
