package streams

import (
	"bytes"
	"slices"

	"github.com/convstream/convstream/internal/jsvalue"
)

// The schemas (schemas/defs.json) give a few fields of event data a type:
// a message's role is a string, its parentId a string or null, its
// metadata an object or null; a group's mode is a string, its
// parentMessageId a string or null. The parser tolerates other types, as
// the reference does, and a message keeps its fields as they came, so an
// event with {"parentId": 7} would reach every snapshot and delta that
// carries the message, which then no longer match their own schemas.
// validate refuses such data (bad_data, naming the field) instead; the
// targeted checks here cost a fraction of validating every event against
// the schemas, which TestEmittedMatchesSchemas does over everything the
// worker publishes.

// shapeRule is one typed field of an event type's data.
type shapeRule struct {
	field string
	// allowed are the kinds the field may have when present.
	allowed []jsvalue.Kind
	// want says what they are, for the rejection.
	want string
}

// shapeRules are the typed fields of each event type's data, from the
// schemas. An update is a merge patch, where null deletes a field: it may
// set role to null.
var shapeRules = map[string][]shapeRule{
	TypeMessageAppended: {
		{"role", kinds(jsvalue.KindString), "must be a string"},
		{"parentId", kinds(jsvalue.KindString, jsvalue.KindNull), "must be a string or null"},
		{"metadata", kinds(jsvalue.KindObject, jsvalue.KindNull), "must be an object or null"},
	},
	TypeMessageUpdated: {
		{"role", kinds(jsvalue.KindString, jsvalue.KindNull), "must be a string, or null to remove it"},
		{"parentId", kinds(jsvalue.KindString, jsvalue.KindNull), "must be a string or null"},
		{"metadata", kinds(jsvalue.KindObject, jsvalue.KindNull), "must be an object or null"},
	},
	TypeGroupsUpserted: {
		{"mode", kinds(jsvalue.KindString), "must be a string"},
		{"parentMessageId", kinds(jsvalue.KindString, jsvalue.KindNull), "must be a string or null"},
	},
}

// kinds lists the kinds a rule allows.
func kinds(k ...jsvalue.Kind) []jsvalue.Kind { return k }

// checkShape refuses decoded data of event type typ whose typed fields
// have another type than the schema gives them.
func checkShape(typ string, data map[string]any) *RejectError {
	for _, r := range shapeRules[typ] {
		if err := r.check(jsvalue.FieldKind(data, r.field)); err != nil {
			return err
		}
	}
	return nil
}

// check refuses a field of kind k that the rule does not allow; an absent
// field (jsvalue.KindUndefined) is allowed.
func (r shapeRule) check(k jsvalue.Kind) *RejectError {
	if k == jsvalue.KindUndefined || slices.Contains(r.allowed, k) {
		return nil
	}
	return RejectAt(CodeBadData, "data."+r.field, "%s", r.want)
}

// appendShapeOK reports whether the canonical JSON text of an append's
// message (compact, keys plain; conversation.CanonicalJSON's output) has
// its typed fields of the types the schema gives them. It reads the kinds
// off the text in one pass over its top level, skipping strings a quote at
// a time.
func appendShapeOK(text []byte) bool {
	rules := shapeRules[TypeMessageAppended]
	depth := 0
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case '"':
			end := stringEnd(text, i)
			if depth == 1 && end+2 < len(text) && text[end+1] == ':' {
				key := text[i+1 : end]
				for _, r := range rules {
					if string(key) == r.field && r.check(jsvalue.KindOfText(text[end+2:])) != nil {
						return false
					}
				}
			}
			i = end
		}
	}
	return true
}

// stringEnd returns the index of the quote closing the JSON string that
// opens at text[i] (len(text) when there is none).
func stringEnd(text []byte, i int) int {
	for j := i + 1; ; {
		k := bytes.IndexByte(text[j:], '"')
		if k < 0 {
			return len(text)
		}
		j += k
		// The quote is escaped when an odd number of backslashes precede it.
		n := 0
		for b := j - 1; b > i && text[b] == '\\'; b-- {
			n++
		}
		if n%2 == 0 {
			return j
		}
		j++
	}
}
