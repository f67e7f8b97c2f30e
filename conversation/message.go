package conversation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/convstream/convstream/internal/jsvalue"
)

// ErrInvalidMessage is returned for a message that cannot take part in a
// conversation: not a JSON object, or without a string id.
var ErrInvalidMessage = errors.New("conversation: invalid message")

// Message is one chat message, kept as the JSON object it arrived as so that
// every field, known or not, passes through untouched. The fields the parser
// reads are decoded once, when the message is built. A Message is immutable:
// methods that change it return a new Message.
//
// A message built by NewMessage keeps its object only as compact JSON (see
// raw), which takes a fraction of the memory of a decoded map; the rest of
// the object is decoded when something asks for it. Messages the parser
// derives (virtual entries, display copies) keep a decoded map instead.
type Message struct {
	// raw is the object encoded as encoding/json encodes a map (compact,
	// keys sorted), or "" for a derived message (see msgExtra.fields).
	// The spans below, and the strings of the extras, point into it where
	// they can.
	raw string

	// The id, role and parentId strings, as spans of raw (see strAt): a
	// message in a slab then holds two pointers for the collector to scan,
	// raw and x, rather than five.
	idAt, roleAt, parentAt strAt

	idHash     uint64 // of id, for the index (see idIndex)
	parentHash uint64 // of parentID
	flags      msgFlags
	nfields    uint16 // the number of fields, capped: a size for decoding
	hasParent  bool   // parentId is a string (an empty string counts)
	parentNull bool   // parentId is absent or null
	// parentTruthy: parentId is a truthy non-string (it names no message,
	// yet the message is a root rather than unreachable).
	parentTruthy bool
	inThread     bool // truthy threadId
	// The fields above, 64 bytes, are those the indexing reads of every
	// message.
	createdAt float64
	updatedAt float64
	x         *msgExtra
}

// msgExtra holds what only some messages have (assistants and tool
// results, mostly), so that a plain message does not pay for it.
type msgExtra struct {
	agentID    key
	toolCallID key
	tools      []toolRef
	rare       *msgRare
}

// msgRare holds what few messages have.
type msgRare struct {
	fields     map[string]any // the object of a derived message
	groupID    string
	signal     *signal
	subAgentID any // metadata.subAgentId, when flagSubAgent
	// metadata.activeBranchIndex, when it is a number.
	activeBranch    float64
	hasActiveBranch bool
	// lastCompressed is what a compressedGroup hides last (lastCompressedID).
	lastCompressed    string
	hasLastCompressed bool
	// own holds the id, role and parentId strings that raw does not (see
	// strAt), indexed by ownID, ownRole and ownParent.
	own *[3]string
}

// strAt is where a message keeps one of its id, role and parentId
// strings: the span raw[off:off+n], or, when off is ownStr, the string
// msgRare.own[n] (a derived message's, or one whose JSON form has escapes).
type strAt struct{ off, n uint32 }

const ownStr = math.MaxUint32

// Indexes of msgRare.own.
const (
	ownID = iota
	ownRole
	ownParent
)

// str returns the string that at names.
func (m *Message) str(at strAt) string {
	if at.off != ownStr {
		// strAt made the span from raw, which never changes under it
		// (rebase moves it to an equal copy): no bounds to check.
		return unsafe.String((*byte)(unsafe.Add(unsafe.Pointer(unsafe.StringData(m.raw)), at.off)), at.n)
	}
	return m.x.rare.own[at.n]
}

// strAt returns where m keeps s, its string number i (ownID, ownRole or
// ownParent): a span of raw when raw holds its bytes (see sub), or else
// its own copy in the message's msgRare, made when needed. The extras must
// be the message's own.
func (m *Message) strAt(s string, i int) strAt {
	if s == "" {
		return strAt{}
	}
	if s = m.sub(s); within(m.raw, s) {
		off := uintptr(unsafe.Pointer(unsafe.StringData(s))) - uintptr(unsafe.Pointer(unsafe.StringData(m.raw)))
		return strAt{uint32(off), uint32(len(s))}
	}
	if m.x == nil {
		m.x = &msgExtra{}
	}
	if m.x.rare == nil {
		m.x.rare = &msgRare{}
	}
	r := m.x.rare
	if r.own == nil {
		r.own = new([3]string)
	}
	r.own[i] = s
	return strAt{ownStr, uint32(i)}
}

// setStrs sets the message's id, role and parentId strings.
func (m *Message) setStrs(id, role, parent string) {
	m.idAt, m.roleAt, m.parentAt = m.strAt(id, ownID), m.strAt(role, ownRole), m.strAt(parent, ownParent)
}

// empty reports whether x holds nothing, so that a message needs none.
func (x *msgExtra) empty() bool {
	return x.agentID.kind == keyAbsent && x.toolCallID.kind == keyAbsent && x.tools == nil && x.rare == nil
}

// empty reports whether r holds nothing, so that a message needs none.
func (r *msgRare) empty() bool {
	return r.fields == nil && r.groupID == "" && r.signal == nil && r.subAgentID == nil &&
		!r.hasActiveBranch && !r.hasLastCompressed && r.own == nil
}

// Readers of msgExtra and msgRare that need no nil check.

func (m *Message) rare() *msgRare {
	if m.x == nil {
		return nil
	}
	return m.x.rare
}

func (m *Message) groupID() string {
	if r := m.rare(); r != nil {
		return r.groupID
	}
	return ""
}

func (m *Message) agentID() key {
	if m.x == nil {
		return key{kind: keyAbsent}
	}
	return m.x.agentID
}

func (m *Message) toolCallID() key {
	if m.x == nil {
		return key{kind: keyAbsent}
	}
	return m.x.toolCallID
}

func (m *Message) tools() []toolRef {
	if m.x == nil {
		return nil
	}
	return m.x.tools
}

func (m *Message) signal() *signal {
	if r := m.rare(); r != nil {
		return r.signal
	}
	return nil
}

// msgFlags caches metadata switches that the parser tests often.
type msgFlags uint16

const (
	flagSupervisor   msgFlags = 1 << iota // metadata.orchestrationRole == "supervisor" or truthy isSupervisor
	flagIsSupervisor                      // truthy metadata.isSupervisor (the legacy flag alone)
	flagCompare                           // metadata.compare === true
	flagCouncil                           // metadata.agentCouncil === true
	flagActiveColumn                      // metadata.activeColumn === true
	flagSubAgent                          // metadata.scope == "sub_agent" with a truthy subAgentId
	flagLiftUsage                         // no truthy usage, but a truthy metadata.usage to lift
	flagTrimMeta                          // a tool-using assistant whose metadata the message map trims
)

// toolRef is the part of an assistant's tool call the parser needs.
type toolRef struct {
	id          key
	resultMsgID string // truthy string result_msg_id, or ""
}

// signal is the external-signal lineage kept in metadata.signal.
type signal struct {
	kind            string
	sequence        float64
	hasSequence     bool
	sourceToolCall  any
	hasSourceCall   bool
	sourceToolName  any
	hasSourceName   bool
	sequenceRaw     any
	hasSequenceRaw  bool
	isCallback      bool
	isTaskCompleted bool
}

// NewMessage builds a Message from a decoded JSON object. The only
// requirement is a string "id". The message keeps the object as compact
// JSON, not the map: the caller may reuse the map afterwards, and a field
// read back through Get or Fields is a fresh decoded value.
func NewMessage(fields map[string]any) (*Message, error) {
	id, err := checkID(fields)
	if err != nil {
		return nil, err
	}
	var raw string
	var scratch [1024]byte // most messages encode without allocating here
	if enc, plain := appendPlain(scratch[:0], fields, 0); plain {
		raw = string(enc)
	} else {
		enc, err := json.Marshal(fields)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidMessage, err)
		}
		// enc is not kept anywhere else: the message takes it over as its
		// immutable string, instead of copying it.
		raw = unsafe.String(unsafe.SliceData(enc), len(enc))
		// Index what the JSON says, as later reads decode it: a Go value
		// of another type or a string of invalid UTF-8 reads back changed.
		if fields, err = decodeObject(raw, len(fields)); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidMessage, err)
		}
		id, _ = fields["id"].(string)
	}
	return stored(raw, id, fields, len(fields)), nil
}

// stored makes the Message that keeps raw, an object of nfields fields
// whose decoded form (all of it, or what the parser reads) is fields and
// whose id is id.
func stored(raw, id string, fields map[string]any, nfields int) *Message {
	m := &Message{raw: raw, nfields: uint16(min(nfields, math.MaxUint16))}
	m.index(fields, id)
	m.share()
	return m
}

// NewMessageJSON builds a Message from the JSON text of an object, as
// NewMessage does from its decoded form.
func NewMessageJSON(data []byte) (*Message, error) {
	f, err := DecodeFields(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidMessage, err)
	}
	return NewMessage(f)
}

// NewMessageCanonical builds a Message from bytes that Message.JSON
// returned, as NewMessage would, but keeps them as they are: it neither
// validates them (beyond decoding what the parser reads) nor re-encodes
// them, which is most of what NewMessageJSON costs. It is for storage that
// holds what JSON returned and guards it with a checksum of its own; text
// that is not valid, compact JSON with its keys sorted gives a Message
// whose JSON is that text, or an error. The bytes are copied.
func NewMessageCanonical(data []byte) (*Message, error) {
	return newMessageCanonical(string(data))
}

// newMessageCanonical is NewMessageCanonical for JSON the message may keep
// as it is.
func newMessageCanonical(raw string) (*Message, error) {
	// Only what the parser reads is decoded: the rest, the content above
	// all, stays in raw for whoever reads it.
	fields, n, err := decodeIndexed(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidMessage, err)
	}
	id, err := checkID(fields)
	if err != nil {
		return nil, err
	}
	return stored(raw, id, fields, n), nil
}

// DecodeFields decodes the JSON text of an object into the values
// json.Unmarshal gives a map[string]any (nil when the text is null), and
// refuses what it refuses, in about half its time.
func DecodeFields(data []byte) (map[string]any, error) {
	// The package's decoder is faster than encoding/json's, but lenient:
	// it reads only what json.Valid accepts, and only valid UTF-8, which
	// encoding/json would mend.
	if s := bytes.TrimLeft(data, " \t\r\n"); len(s) > 0 && s[0] == '{' && utf8.Valid(data) && json.Valid(data) {
		if f, err := decodeObject(string(data), 0); err == nil {
			return f, nil
		}
	}
	var f map[string]any
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	return f, nil
}

// checkID returns the string id of a message's fields.
func checkID(fields map[string]any) (string, error) {
	if fields == nil {
		return "", fmt.Errorf("%w: not a JSON object", ErrInvalidMessage)
	}
	id, ok := fields["id"].(string)
	if !ok {
		if _, present := fields["id"]; !present {
			return "", fmt.Errorf("%w: missing id", ErrInvalidMessage)
		}
		return "", fmt.Errorf("%w: id must be a string, got %s", ErrInvalidMessage, jsvalue.TypeName(fields["id"]))
	}
	return id, nil
}

// MustMessage is like NewMessage but panics on error. It is meant for tests
// and literals known to be valid.
func MustMessage(fields map[string]any) *Message {
	m, err := NewMessage(fields)
	if err != nil {
		panic(err)
	}
	return m
}

// index decodes the fields the parser reads from f, the message's object
// with id id.
//
// A field read here must be in indexedField too.
func (m *Message) index(f map[string]any, id string) {
	var x msgExtra
	var r msgRare
	role, _ := f["role"].(string)
	var parent string
	m.idHash = hashID(id)
	switch p := f["parentId"].(type) {
	case string:
		parent, m.hasParent = p, true
		m.parentHash = hashID(p)
	case nil:
		m.parentNull = true
	default:
		m.parentTruthy = truthy(p)
	}
	m.inThread = truthy(f["threadId"])
	r.groupID = truthyString(f["groupId"])
	x.agentID = keyOf(f, "agentId")
	x.toolCallID = keyOf(f, "tool_call_id")
	if tools, ok := f["tools"].([]any); ok && len(tools) > 0 {
		x.tools = make([]toolRef, len(tools))
		for i, t := range tools {
			if obj, ok := t.(map[string]any); ok {
				x.tools[i] = toolRef{id: keyOf(obj, "id"), resultMsgID: truthyString(obj["result_msg_id"])}
			} else {
				x.tools[i] = toolRef{id: key{kind: keyAbsent}}
			}
		}
	}
	if role == "compressedGroup" {
		r.lastCompressed, r.hasLastCompressed = lastCompressedID(f)
	}
	m.createdAt = timeOf(f["createdAt"], hasKey(f, "createdAt"))
	m.updatedAt = toNumber(f["updatedAt"], hasKey(f, "updatedAt"))
	md, _ := f["metadata"].(map[string]any)
	if role == "assistant" && nonEmptyList(f["tools"]) && truthy(f["metadata"]) {
		m.flags |= flagTrimMeta
	}
	if md != nil {
		m.indexMetadata(f, md, &r)
	}
	if !r.empty() {
		x.rare = &r
	}
	if !x.empty() {
		m.x = &x
	}
	m.setStrs(id, role, parent)
}

// indexMetadata decodes the metadata switches of a message with object f
// and metadata md.
func (m *Message) indexMetadata(f, md map[string]any, r *msgRare) {
	r.activeBranch, r.hasActiveBranch = md["activeBranchIndex"].(float64)
	if md["scope"] == "sub_agent" && truthy(md["subAgentId"]) {
		m.flags |= flagSubAgent
		r.subAgentID = md["subAgentId"]
	}
	if truthy(md["usage"]) && !truthy(f["usage"]) {
		m.flags |= flagLiftUsage
	}
	if truthy(md["isSupervisor"]) {
		m.flags |= flagIsSupervisor | flagSupervisor
	}
	if md["orchestrationRole"] == "supervisor" {
		m.flags |= flagSupervisor
	}
	if md["compare"] == true {
		m.flags |= flagCompare
	}
	if md["agentCouncil"] == true {
		m.flags |= flagCouncil
	}
	if md["activeColumn"] == true {
		m.flags |= flagActiveColumn
	}
	if s, ok := md["signal"]; ok && s != nil {
		sig := &signal{}
		if obj, ok := s.(map[string]any); ok {
			sig.kind, _ = obj["type"].(string)
			sig.sourceToolCall, sig.hasSourceCall = obj["sourceToolCallId"]
			sig.sourceToolName, sig.hasSourceName = obj["sourceToolName"]
			sig.sequenceRaw, sig.hasSequenceRaw = obj["sequence"]
			if sig.hasSequenceRaw && sig.sequenceRaw != nil {
				sig.sequence, sig.hasSequence = toNumber(sig.sequenceRaw, true), true
			}
		}
		sig.isCallback = sig.kind == "tool-stdout" || sig.kind == "tool-callback"
		sig.isTaskCompleted = sig.kind == "task-completion"
		if truthy(s) {
			r.signal = sig
		}
	}
}

// share points the decoded strings of a message built from raw at raw's
// memory, so that they cost nothing beyond it and keep no other memory
// alive (an update's fields come from the old message's JSON). A string
// whose JSON form differs (it has escapes) keeps its own copy.
func (m *Message) share() { m.eachString(m.sub) }

// eachString replaces each decoded string the message keeps with f of it.
func (m *Message) eachString(f func(string) string) {
	x := m.x
	if x == nil {
		return
	}
	x.agentID.s = f(x.agentID.s)
	x.toolCallID.s = f(x.toolCallID.s)
	for i := range x.tools {
		x.tools[i].id.s = f(x.tools[i].id.s)
		x.tools[i].resultMsgID = f(x.tools[i].resultMsgID)
	}
	if r := x.rare; r != nil {
		r.groupID = f(r.groupID)
		r.lastCompressed = f(r.lastCompressed)
		r.subAgentID = mapAny(r.subAgentID, f)
		if r.signal != nil {
			// A copy: the signal may be shared with the message this one
			// was made from.
			sig := *r.signal
			sig.kind = f(sig.kind)
			sig.sourceToolCall = mapAny(sig.sourceToolCall, f)
			sig.sourceToolName = mapAny(sig.sourceToolName, f)
			sig.sequenceRaw = mapAny(sig.sequenceRaw, f)
			r.signal = &sig
		}
	}
}

// mapAny is f for a decoded value that may be a string.
func mapAny(v any, f func(string) string) any {
	if s, ok := v.(string); ok {
		return f(s)
	}
	return v
}

// rebase moves the message onto raw, a copy of its JSON elsewhere in
// memory: the strings that pointed into the old copy point at the same
// bytes of the new one. The extras are the message's own (see
// arena.adopt).
func (m *Message) rebase(raw string) {
	old := m.raw
	base := uintptr(unsafe.Pointer(unsafe.StringData(old)))
	m.raw = raw
	m.eachString(func(s string) string {
		if s == "" || !within(old, s) {
			return s
		}
		off := int(uintptr(unsafe.Pointer(unsafe.StringData(s))) - base)
		return raw[off : off+len(s)]
	})
}

// sub returns s as a substring of m.raw when raw holds its bytes.
func (m *Message) sub(s string) string {
	if s == "" {
		return ""
	}
	if within(m.raw, s) {
		return s // decoded from raw, as NewMessageCanonical does
	}
	if i := strings.Index(m.raw, s); i >= 0 {
		return m.raw[i : i+len(s)]
	}
	return s
}

// within reports whether s's bytes lie inside outer's.
func within(outer, s string) bool {
	o, p := uintptr(unsafe.Pointer(unsafe.StringData(outer))), uintptr(unsafe.Pointer(unsafe.StringData(s)))
	return p >= o && p+uintptr(len(s)) <= o+uintptr(len(outer))
}

// ID returns the message id.
func (m *Message) ID() string { return m.str(m.idAt) }

// Role returns the message role, or "" when it has none.
func (m *Message) Role() string { return m.str(m.roleAt) }

// ParentID returns the parent id and whether the message names one.
func (m *Message) ParentID() (string, bool) { return m.str(m.parentAt), m.hasParent }

// parentID returns the parent id, or "" when the message names none.
func (m *Message) parentID() string { return m.str(m.parentAt) }

// Get returns one field of the message and whether it is present.
func (m *Message) Get(name string) (any, bool) {
	if m.raw == "" {
		v, ok := m.x.rare.fields[name]
		return v, ok
	}
	return lookupField(m.raw, name)
}

// Fields returns every field of the message. The map may be shared:
// callers must treat it as read-only.
func (m *Message) Fields() map[string]any { return m.view() }

// Len returns the number of fields.
func (m *Message) Len() int {
	if m.raw == "" {
		return len(m.x.rare.fields)
	}
	return fieldCount(m.raw)
}

// view returns the message's object, decoded from raw when it has one. The
// result may be the message's own map: it must not be changed.
func (m *Message) view() map[string]any {
	if m.raw == "" {
		return m.x.rare.fields
	}
	f, err := decodeObject(m.raw, int(m.nfields))
	if err != nil {
		// raw is what json.Marshal wrote; this cannot happen.
		return map[string]any{"id": m.ID()}
	}
	return f
}

// object returns a copy of the message's object that the caller owns.
func (m *Message) object() map[string]any {
	if m.raw == "" {
		return maps.Clone(m.x.rare.fields)
	}
	return m.view()
}

// With returns a copy of the message with field name set to value.
func (m *Message) With(name string, value any) *Message {
	f := m.object()
	f[name] = value
	return rebuild(f, m.ID())
}

// Without returns a copy of the message without the named fields.
func (m *Message) Without(names ...string) *Message {
	f := m.object()
	for _, n := range names {
		delete(f, n)
	}
	return rebuild(f, m.ID())
}

// withSubAgent returns the message with agentId set to its sub-agent's
// id (metadata.subAgentId), so that its run never merges with another
// agent's; it must carry flagSubAgent. A stored message stays stored: the
// field is set in its JSON, which is cheaper than decoding it.
func (m *Message) withSubAgent() *Message {
	v := m.x.rare.subAgentID
	if m.raw == "" {
		return m.With("agentId", v)
	}
	enc, err := json.Marshal(v)
	if err != nil {
		return m.With("agentId", v)
	}
	raw, ok := setRawField(m.raw, "agentId", enc)
	if !ok {
		return m.With("agentId", v)
	}
	// share rewrites the strings of the copy: it needs its own extras.
	n, x, r := *m, *m.x, *m.x.rare
	n.raw, n.x, x.rare, r.own = raw, &x, &r, nil
	x.agentID = keyOfValue(v, true)
	x.tools = slices.Clone(x.tools)
	n.setStrs(m.ID(), m.Role(), m.parentID())
	n.share()
	return &n
}

// rebuild makes a derived Message, which keeps f, from fields that are
// known to carry id, keeping id even if a caller removed or changed it.
func rebuild(f map[string]any, id string) *Message {
	if s, ok := f["id"].(string); ok {
		id = s
	}
	n := &Message{}
	n.index(f, id)
	if n.x == nil {
		n.x = &msgExtra{}
	}
	if n.x.rare == nil {
		n.x.rare = &msgRare{}
	}
	n.x.rare.fields = f
	return n
}

// Derived reports whether m holds its object as a map rather than as the
// stored JSON it was built from: a virtual message of a flat list, one
// the flat list changed, or one built from a map. Its map costs several
// times its JSON, and JSON encodes it anew on every call.
func (m *Message) Derived() bool { return m.raw == "" }

// JSON returns the message's JSON object, the bytes MarshalJSON returns.
// For a message built by NewMessage it is the stored encoding itself,
// without a copy: the caller must not modify it.
func (m *Message) JSON() ([]byte, error) {
	if m.raw == "" {
		return json.Marshal(m.x.rare.fields)
	}
	return unsafe.Slice(unsafe.StringData(m.raw), len(m.raw)), nil
}

// MarshalJSON encodes the message as its JSON object.
func (m *Message) MarshalJSON() ([]byte, error) {
	if m.raw == "" {
		return json.Marshal(m.x.rare.fields)
	}
	return []byte(m.raw), nil
}

// UnmarshalJSON decodes a JSON object into the message.
func (m *Message) UnmarshalJSON(data []byte) error {
	n, err := NewMessageJSON(data)
	if err != nil {
		return err
	}
	*m = *n
	return nil
}

// messageOverhead is what a stored message costs beyond its JSON, for
// Conversation.Bytes: the Message and its optional parts, its rows in the
// table and the index, rounded up.
const messageOverhead = 256

// footprint approximates the memory m holds in a Conversation. A message
// built from a map (not by NewMessage or NewMessageJSON) keeps the map:
// Go maps cost several times their JSON.
func (m *Message) footprint() int {
	if m.raw == "" {
		return 8 * messageOverhead
	}
	return len(m.raw) + messageOverhead
}
