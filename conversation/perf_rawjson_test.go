package conversation

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// rawjsonSeeds are objects whose encoding exercises the decoder: escapes,
// characters encoding/json escapes, numbers, nesting, empty containers.
var rawjsonSeeds = []string{
	`{}`,
	`{"a":1}`,
	`{"id":"x","s":"quote \" backslash \\ slash / tab \t nl \n cr \r bs \b ff \f","u":"\u0001\u001f"}`,
	`{"html":"<a href=\"x\">&amp;</a>","ls":"\u2028\u2029","emoji":"🙂 中文 é","pair":"\ud83d\ude42","lone":"\ud83d x \ude42"}`,
	`{"n":[0,-0,1.5,-2e-7,1e21,123456789012345680000,1.7976931348623157e308,5e-324,0.000001]}`,
	`{"b":[true,false,null],"e":[],"o":{},"deep":{"a":[{"b":{"c":[[],[{}]]}}]}}`,
	`{"k\"ey":"v","k\\ey":{"k\u00e9":"x"},"":"empty key"}`,
	`{"id":"a","metadata":{"scope":"sub_agent","subAgentId":{"x":[1,"2"]}},"tools":[{"id":"c","result_msg_id":"t"}]}`,
	" { \"id\" : \"w\" , \"a\" : [ 1 , { } ] , \"b\":\"\\ud800\\u0041\", \"a\": 2 } ",
	"{\"id\":\"bad \xff utf8\",\"k\xfe\":1}",
}

// rawjsonCorpus returns objects to test with: the seeds and every message
// of the conformance suite.
func rawjsonCorpus(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	add := func(data []byte) {
		var f map[string]any
		if err := json.Unmarshal(data, &f); err != nil || f == nil {
			t.Fatalf("%s: %v", data, err)
		}
		out = append(out, f)
	}
	for _, s := range rawjsonSeeds {
		add([]byte(s))
	}
	paths, _ := filepath.Glob("testdata/conformance/*.jsonl.gz")
	for _, p := range paths {
		for _, c := range readCases(t, p) {
			var doc struct {
				Messages []json.RawMessage `json:"messages"`
			}
			if json.Unmarshal(c.Input, &doc) != nil {
				continue
			}
			for _, m := range doc.Messages {
				if len(m) > 0 && m[0] == '{' {
					add(m)
				}
			}
		}
	}
	return out
}

func TestDecodeObjectMatchesEncodingJSON(t *testing.T) {
	// Setting fields is checked on a sample: the corpus is large.
	for i, f := range rawjsonCorpus(t) {
		checkRawJSON(t, f, i < 50 || i%50 == 0)
	}
}

// checkRawJSON checks the decoder, and setRawField when set is true,
// against encoding/json on object f.
func checkRawJSON(t *testing.T, f map[string]any, set bool) {
	t.Helper()
	enc, err := json.Marshal(f)
	if err != nil {
		return
	}
	raw := string(enc)
	if mine, ok := appendPlain(nil, f, 0); ok && string(mine) != raw {
		t.Fatalf("appendPlain wrote %s; json.Marshal %s", mine, raw)
	}
	got, err := decodeObject(raw, len(f))
	if err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	if !reflect.DeepEqual(got, f) {
		t.Fatalf("%s: decoded as %#v", raw, got)
	}
	if n := fieldCount(raw); n != len(f) {
		t.Fatalf("%s: %d fields, counted %d", raw, len(f), n)
	}
	for k, v := range f {
		if got, ok := lookupField(raw, k); !ok || !reflect.DeepEqual(got, v) {
			t.Fatalf("%s: field %q read as %#v, %v", raw, k, got, ok)
		}
		if got := pickFields(raw, []string{"no such field \x00", k}); !reflect.DeepEqual(got, map[string]any{k: v}) {
			t.Fatalf("%s: picked %q as %#v", raw, k, got)
		}
	}
	if _, ok := lookupField(raw, "no such field \x00"); ok {
		t.Fatalf("%s: found a missing field", raw)
	}
	if !set {
		return
	}
	// Setting a field, present or not, in the JSON gives what encoding
	// the changed map gives.
	names := []string{"", "agentId", "id", "zzz", "a\"b", "\u2028"}
	for k := range f {
		names = append(names, k)
	}
	for _, name := range names {
		for _, v := range []any{"sub-1", map[string]any{"x": []any{1.0, "<"}}, nil} {
			venc, _ := json.Marshal(v)
			got, ok := setRawField(raw, name, venc)
			g := make(map[string]any, len(f)+1)
			for k, x := range f {
				g[k] = x
			}
			g[name] = v
			want, _ := json.Marshal(g)
			if !ok || got != string(want) {
				t.Fatalf("%s: set %q to %s: got %s, %v; want %s", raw, name, venc, got, ok, want)
			}
		}
	}
}

func TestDecodeObjectRejectsMalformed(t *testing.T) {
	for _, s := range []string{``, `[]`, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":"x}`, `{"a":tru}`, `{"a":1}x`, `{"a":[1,2}`, `{"a":-}`, `{"a":"\`, `{"a":{"b":1}`} {
		if _, err := decodeObject(s, 0); err == nil {
			t.Errorf("%q: no error", s)
		}
		// Neither may the other readers panic.
		lookupField(s, "a")
		fieldCount(s)
		setRawField(s, "a", []byte("1"))
	}
}

// FuzzRawJSON checks the stored-JSON reader against encoding/json on the
// encoding of arbitrary objects, and that no input makes it panic.
func FuzzRawJSON(f *testing.F) {
	for _, s := range rawjsonSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := string(data)
		decodeObject(s, 0)
		lookupField(s, "id")
		pickFields(s, []string{"id", "tools"})
		fieldCount(s)
		setRawField(s, "agentId", []byte(`"x"`))
		// NewMessageJSON stores what encoding/json's decoding and encoding
		// give, whatever the input.
		var obj map[string]any
		err := json.Unmarshal(data, &obj)
		// DecodeFields gives what json.Unmarshal gives, and refuses what it
		// refuses.
		if got, gerr := DecodeFields(data); (gerr == nil) != (err == nil) || (err == nil && !reflect.DeepEqual(got, obj)) {
			t.Fatalf("%q: DecodeFields gives %#v, %v; encoding/json: %#v, %v", data, got, gerr, obj, err)
		}
		m, merr := NewMessageJSON(data)
		if want, _ := json.Marshal(obj); err == nil && obj != nil && obj["id"] != nil && merr == nil {
			if got, _ := m.JSON(); string(got) != string(want) {
				t.Fatalf("%q: NewMessageJSON stored %s; encoding/json gives %s", data, got, want)
			}
		}
		// NewMessageCanonical and AppendCanonical do not panic on any
		// input, and read back what a message stored as that message.
		NewMessageCanonical(data)
		_ = NewConversation().AppendCanonical(data)
		if merr == nil {
			raw, _ := m.JSON()
			if back, err := NewMessageCanonical(raw); err != nil || !sameMessage(back, m) {
				t.Fatalf("%s: NewMessageCanonical read back %#v, %v; want %#v", raw, back, err, m)
			}
			conv := NewConversation()
			if err := conv.AppendCanonical(raw); err != nil {
				t.Fatalf("%s: AppendCanonical: %v", raw, err)
			}
			if back := conv.Messages()[0]; !sameMessage(back, m) {
				t.Fatalf("%s: AppendCanonical read back %#v; want %#v", raw, back, m)
			}
		}
		if err != nil || obj == nil {
			return
		}
		if utf8.Valid(data) {
			if got, err := decodeObject(s, 0); err != nil || !reflect.DeepEqual(got, obj) {
				t.Fatalf("%q: decoded as %#v, %v; encoding/json: %#v", data, got, err, obj)
			}
		}
		// The reader sees only encoding/json's output, so that is what it
		// must agree on (encoding/json also mends invalid UTF-8, which the
		// reader need not do).
		checkRawJSON(t, obj, true)
	})
}

func TestDecodeObjectDepthLimit(t *testing.T) {
	deep := strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1)
	if _, err := decodeObject(`{"a":`+deep+`}`, 1); err == nil {
		t.Error("no error past the depth limit")
	}
	ok := strings.Repeat("[", maxJSONDepth-1) + strings.Repeat("]", maxJSONDepth-1)
	if _, err := decodeObject(`{"a":`+ok+`}`, 1); err != nil {
		t.Errorf("within the depth limit: %v", err)
	}
}

func TestPickFields(t *testing.T) {
	raw := `{"a":{"x":[1,"}"]},"b":"s\"q","c":null,"d":[{"e":1}],"f":2}`
	got := pickFields(raw, []string{"b", "c", "f", "z"})
	want := map[string]any{"b": `s"q`, "c": nil, "f": 2.0}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v, want %#v", got, want)
	}
	for _, s := range []string{``, `{`, `{"a"`, `{"a":[1,`, `{"a":"x`} {
		pickFields(s, []string{"a"}) // must not panic
	}
}

// TestDecodeIndexed: decodeIndexed gives the fields the parser reads as
// decodeObject does, skips the others whatever they hold, and counts them
// all.
func TestDecodeIndexed(t *testing.T) {
	for _, s := range []string{
		`{}`,
		`{"id":"a"}`,
		`{"content":"say \"}\" and {[","id":"a","role":"user"}`,
		`{"content":[{"text":"x]}"},[1,[2]],null],"createdAt":1.5e3,"id":"a","parentId":null}`,
		`{"a":true,"b":false,"c":null,"d":-12.5e-3,"id":"a","metadata":{"compare":true},"tools":[{"id":"t"}],"z":{}}`,
		`{"compressedMessages":[{"lastMessageId":"m"}],"id":"g","role":"compressedGroup","usage":{"totalTokens":3}}`,
		` { "content" : "x" , "id" : "a" } `,
	} {
		want, err := decodeObject(s, 0)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		for k := range want {
			if !indexedField(k) {
				delete(want, k)
			}
		}
		got, n, err := decodeIndexed(s)
		if err != nil || !reflect.DeepEqual(got, want) || n != fieldCount(s) {
			t.Errorf("%s: decoded %#v, %d fields, %v; want %#v, %d fields", s, got, n, err, want, fieldCount(s))
		}
	}
	for _, bad := range []string{``, `[]`, `{"id":"a"`, `{"id":"a",}`, `{"id" "a"}`, `{"content":"x}`, `{"id":"a"} x`, `{"content":[1,2}`} {
		if _, _, err := decodeIndexed(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
