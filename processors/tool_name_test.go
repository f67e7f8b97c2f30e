package processors_test

import (
	"strings"
	"testing"

	"github.com/convstream/convstream/processors"
)

func TestToolNameGenerate(t *testing.T) {
	r := processors.NewToolNameResolver()
	long := strings.Repeat("x", 70)
	cases := []struct{ identifier, api, typ, want string }{
		{"lobe-web-browsing", "search", "builtin", "lobe-web-browsing____search"},
		{"lobe-web-browsing", "search", "", "lobe-web-browsing____search"},
		{"plugin", "api", "default", "plugin____api"},
		{"custom_mcp", "run", "mcp", "custom_mcp____run____mcp"},
		// Characters strict providers reject are hashed (MD5, 12 hex digits).
		{"custom_mcp", "中文API", "mcp", "custom_mcp____MD5HASH_4521b6841158____mcp"},
		// Too long: the API name is hashed first, then the identifier.
		{"a-long-identifier-name-exceeding", "some-quite-long-api-name-too-long", "", "a-long-identifier-name-exceeding____MD5HASH_" + md5Prefix("some-quite-long-api-name-too-long")},
		{"a-very-long-identifier-name-that-exceeds", "some-quite-long-api-name", "", "MD5HASH_ab0ca56b500b____MD5HASH_" + md5Prefix("some-quite-long-api-name")},
		{long, "api", "", "MD5HASH_7d56c0f83fd1____MD5HASH_" + md5Prefix("api")},
	}
	for _, c := range cases {
		if got := r.Generate(c.identifier, c.api, c.typ); got != c.want {
			t.Errorf("Generate(%q, %q, %q) = %q, want %q", c.identifier, c.api, c.typ, got, c.want)
		}
		if got := r.Generate(c.identifier, c.api, c.typ); len(got) >= 64 {
			t.Errorf("Generate(%q, %q, %q) is %d long", c.identifier, c.api, c.typ, len(got))
		}
	}
}

func TestToolNameResolve(t *testing.T) {
	r := processors.NewToolNameResolver()
	long := strings.Repeat("x", 70)
	manifests := map[string]processors.ToolManifest{
		"lobe-web-browsing": {Identifier: "lobe-web-browsing", API: []processors.ToolAPI{{Name: "search"}, {Name: "crawl"}}},
		"lobe-activator":    {Identifier: "lobe-activator", Type: "builtin", API: []processors.ToolAPI{{Name: "activateTools"}}},
		long:                {Identifier: long, Type: "plugin", API: []processors.ToolAPI{{Name: "中文API"}}},
		"dup-a":             {Identifier: "dup-a", API: []processors.ToolAPI{{Name: "shared"}}},
		"dup-b":             {Identifier: "dup-b", API: []processors.ToolAPI{{Name: "shared"}}},
	}
	hashed := r.Generate(long, "中文API", "plugin")
	calls := []processors.ToolCallRef{
		{ID: "1", Name: "lobe-web-browsing____search", Arguments: `{"q":"go"}`},
		{ID: "2", Name: hashed, Arguments: "{}"},
		{ID: "3", Name: "activateTools", Arguments: "{}"}, // missing prefix, unique
		{ID: "4", Name: "shared", Arguments: "{}"},        // missing prefix, ambiguous: dropped
		{ID: "5", Name: "custom____run____mcp"},
	}
	got := r.Resolve(calls, manifests, nil)
	if len(got) != 4 {
		t.Fatalf("resolved %d calls: %+v", len(got), got)
	}
	want := []processors.ResolvedToolCall{
		{ID: "1", Identifier: "lobe-web-browsing", APIName: "search", Type: "builtin", Arguments: `{"q":"go"}`},
		{ID: "2", Identifier: long, APIName: "中文API", Type: "plugin", Arguments: "{}"},
		{ID: "3", Identifier: "lobe-activator", APIName: "activateTools", Type: "builtin", Arguments: "{}"},
		{ID: "5", Identifier: "custom", APIName: "run", Type: "mcp"},
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("call %d = %+v, want %+v", i, got[i], want[i])
		}
	}

	// Only offered tools resolve; the offered list also disambiguates bare names.
	offered := []string{"dup-a____shared", "lobe-web-browsing____search"}
	got = r.Resolve(calls, manifests, offered)
	if len(got) != 2 || got[0].ID != "1" || got[1].ID != "4" || got[1].Identifier != "dup-a" {
		t.Fatalf("with offered list: %+v", got)
	}
}
