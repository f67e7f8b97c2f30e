package streams

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/convstream/convstream/conversation"
)

// The files a contract list is written in besides this package. A code
// added to RejectCodes or FailureCodes fails TestContractLists, a type
// added to Types TestTypesListed, until each of them lists it too (the
// TypeScript types after `npm run gen:types`).
const (
	docsEvents     = "../docs/events.md"
	schemasDir     = "../schemas/"
	tsGeneratedDir = "../clients/typescript/src/generated/"
)

// TestContractLists checks each list of codes against the schema's enum,
// the table of docs/events.md and the TypeScript client's generated type.
func TestContractLists(t *testing.T) {
	lists := []struct {
		name       string
		codes      []string
		schema     string // the file in schemas/ and, with .ts, in the generated types
		docsMarker string // the line the docs' table follows
	}{
		{"RejectCodes", codeStrings(RejectCodes()), TypeEventRejected, "## Rejections (out)"},
		{"FailureCodes", codeStrings(FailureCodes()), TypePipelineFailed, "Failure codes (`convstream.pipeline.failed.v1`):"},
	}
	for _, l := range lists {
		t.Run(l.name+"/schema", func(t *testing.T) {
			sameCodes(t, "schemas/"+l.schema+".json", l.codes, schemaEnum(t, schemasDir+l.schema+".json", "code"))
		})
		t.Run(l.name+"/docs", func(t *testing.T) {
			sameCodes(t, "docs/events.md", l.codes, docsTable(t, docsEvents, l.docsMarker))
		})
		t.Run(l.name+"/typescript", func(t *testing.T) {
			sameCodes(t, "the TypeScript type", l.codes, tsUnion(t, tsGeneratedDir+l.schema+".ts", "code"))
		})
	}
}

// TestCodesListed: every RejectCode and FailureCode constant declared is
// in its list, once, so that the list is the one place a code is added.
func TestCodesListed(t *testing.T) {
	declared := declaredConsts(t, "codes.go")
	for typ, list := range map[string][]string{
		"RejectCode":  codeStrings(RejectCodes()),
		"FailureCode": codeStrings(FailureCodes()),
	} {
		sameCodes(t, typ+" constants", list, declared[typ])
		for i, c := range list {
			if slices.Index(list, c) != i {
				t.Errorf("%s %q listed twice", typ, c)
			}
		}
	}
}

func TestRejectionOf(t *testing.T) {
	re := Reject(CodeUnknownType, "x")
	for _, c := range []struct {
		err  error
		want RejectCode
	}{
		{conversation.ErrCycle, CodeCycle},
		{fmt.Errorf("update m1: %w", conversation.ErrMessageExists), CodeExists},
		{fmt.Errorf("delete m1: %w", conversation.ErrMessageNotFound), CodeNotFound},
		{conversation.ErrTooManyMessages, CodeTooManyMessages},
		{fmt.Errorf("context tree: %w", conversation.ErrTooDeep), CodeTooDeep},
		{conversation.ErrInvalidMessage, CodeInvalidData},
		{errors.New("anything else"), CodeInvalidData},
		{fmt.Errorf("wrapped: %w", re), CodeUnknownType},
	} {
		got := RejectionOf(c.err)
		if got.Code != c.want || !errors.Is(got, c.err) && !errors.Is(c.err, got) {
			t.Errorf("RejectionOf(%v) = %v (%v), want code %s wrapping it", c.err, got, got.Err, c.want)
		}
	}
	if got := RejectionOf(fmt.Errorf("wrapped: %w", re)); got != re {
		t.Errorf("a rejection is not returned as it is: %v", got)
	}
}

// TestRejectCodeSentinel: a code matches, by errors.Is, the rejections of
// that code however wrapped, as a JetStream error code does in nats.go.
func TestRejectCodeSentinel(t *testing.T) {
	err := fmt.Errorf("apply: %w", RejectErr(CodeNotFound, conversation.ErrMessageNotFound))
	if !errors.Is(err, CodeNotFound) || !errors.Is(err, &RejectError{Code: CodeNotFound}) {
		t.Error("a not_found rejection does not match CodeNotFound")
	}
	if errors.Is(err, CodeExists) || errors.Is(err, &RejectError{Code: CodeExists}) {
		t.Error("a not_found rejection matches CodeExists")
	}
	if !errors.Is(err, conversation.ErrMessageNotFound) {
		t.Error("the cause is lost")
	}
	if plain := fmt.Errorf("apply: %w", conversation.ErrMessageNotFound); errors.Is(plain, CodeNotFound) {
		t.Error("an error that is no rejection matches a code")
	}
}

func TestDegrades(t *testing.T) {
	var got []RejectCode
	for _, c := range RejectCodes() {
		if c.Degrades() {
			got = append(got, c)
		}
	}
	if want := []RejectCode{CodeTooManyMessages, CodeSnapshotTooLarge, CodeTooDeep}; !slices.Equal(got, want) {
		t.Errorf("degrading codes %v, want %v", got, want)
	}
	// The conversation limits' table names the codes that degrade.
	sameCodes(t, "docs/operations.md's conversation limits", codeStrings(got),
		docsColumn(t, "../docs/operations.md", "## Conversation limits and the degraded state", -1))
	if RejectCode("no_such_code").Degrades() {
		t.Error("an unknown code degrades")
	}
}

func codeStrings[C ~string](codes []C) []string {
	out := make([]string, len(codes))
	for i, c := range codes {
		out[i] = string(c)
	}
	return out
}

// sameCodes reports each code of want missing from got, and each of got
// not in want, naming where got was read.
func sameCodes(t *testing.T, where string, want, got []string) {
	t.Helper()
	if len(got) == 0 {
		t.Fatalf("%s: no codes found", where)
	}
	for _, c := range want {
		if !slices.Contains(got, c) {
			t.Errorf("%s does not list %q", where, c)
		}
	}
	for _, c := range got {
		if !slices.Contains(want, c) {
			t.Errorf("%s lists %q, which the contract does not", where, c)
		}
	}
}

// schemaEnum returns the enum of the property prop of the JSON Schema in
// file.
func schemaEnum(t *testing.T, file, prop string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Properties map[string]struct {
			Enum []string `json:"enum"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return s.Properties[prop].Enum
}

// docsTable returns the first cells, unquoted, of the rows of the first
// Markdown table after the line marker in file.
func docsTable(t *testing.T, file, marker string) []string {
	t.Helper()
	return docsColumn(t, file, marker, 0)
}

// docsColumn returns the cells of column col (-1: the last), unquoted, of
// the rows of the first Markdown table after the line marker in file.
func docsColumn(t *testing.T, file, marker string, col int) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	start := slices.Index(lines, marker)
	if start < 0 {
		t.Fatalf("%s: no line %q", file, marker)
	}
	var cells []string
	inTable := false
	for _, line := range lines[start+1:] {
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		if !inTable { // the header row, then the separator
			inTable = true
			continue
		}
		row := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if strings.TrimSpace(row[0]) == "---" {
			continue
		}
		i := col
		if i < 0 {
			i += len(row)
		}
		cells = append(cells, strings.Trim(strings.TrimSpace(row[i]), "`"))
	}
	return cells
}

// tsUnion returns the string literals of the union type of field in the
// TypeScript file.
func tsUnion(t *testing.T, file, field string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(field) + `\??:([^;]*);`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s: no field %s", file, field)
	}
	var out []string
	for _, lit := range regexp.MustCompile(`"([^"]*)"`).FindAllSubmatch(m[1], -1) {
		out = append(out, string(lit[1]))
	}
	return out
}

// declaredConsts returns the values of the string constants declared in
// file, by their type's name.
func declaredConsts(t *testing.T, file string) map[string][]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			typ, ok := v.Type.(*ast.Ident)
			if !ok {
				continue
			}
			for _, val := range v.Values {
				if lit, ok := val.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					out[typ.Name] = append(out[typ.Name], strings.Trim(lit.Value, `"`))
				}
			}
		}
	}
	return out
}
