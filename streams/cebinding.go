package streams

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"strings"
	"unicode/utf8"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/binding/format"
	"github.com/cloudevents/sdk-go/v2/binding/spec"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/nats-io/nats.go"
)

// This file is the CloudEvents NATS protocol binding over message headers
// (NATS 2.2+), written here because the SDK's NATS bindings live in
// separate modules built on the legacy JetStream API.
//
// Binary mode: every attribute travels as a header "ce-<name>" with its
// value percent-encoded, except datacontenttype, which is "content-type";
// the payload is the event data. Structured mode: "content-type:
// application/cloudevents+json" and the payload is the JSON event format.

// Mode is a CloudEvents content mode.
type Mode int

const (
	// Structured puts the whole event, JSON-encoded, in the payload.
	Structured Mode = iota
	// Binary puts attributes in ce-* headers and only data in the payload.
	Binary
)

const (
	headerPrefix      = "ce-"
	HeaderContentType = "content-type"
	// headerMsgID is JetStream's deduplication header.
	headerMsgID = "Nats-Msg-Id"
)

// specs maps attribute names to header names for binary mode.
var specs = spec.WithPrefixMatchExact(func(name string) string {
	if name == "datacontenttype" {
		return HeaderContentType
	}
	return headerPrefix + name
}, headerPrefix)

// natsMessage is a received NATS message seen as a binding.Message.
type natsMessage struct {
	header  map[string]string // lower-cased keys, first values, percent-decoded ce-*
	body    []byte
	format  format.Format
	version spec.Version
	// badHeader is the first ce-* header whose value is not valid
	// percent-encoding; DecodeEvent refuses the message for it.
	badHeader string
}

var (
	_ binding.Message               = (*natsMessage)(nil)
	_ binding.MessageMetadataReader = (*natsMessage)(nil)
)

func newNATSMessage(h nats.Header, body []byte) *natsMessage {
	if vs := h[HeaderContentType]; len(vs) > 0 && vs[0] == ContentTypeCloudEvents {
		// What EncodeEvent writes in structured mode: only the payload is
		// read (toEvent), so the headers need no copy.
		return &natsMessage{body: body, format: format.JSON}
	}
	m := &natsMessage{header: make(map[string]string, len(h)), body: body}
	for k, vs := range h {
		if len(vs) == 0 {
			continue
		}
		k = strings.ToLower(k)
		v := vs[0]
		if strings.HasPrefix(k, headerPrefix) {
			var ok bool
			if v, ok = percentDecode(v); !ok && (m.badHeader == "" || k < m.badHeader) {
				m.badHeader = k
			}
		}
		m.header[k] = v
	}
	if ct := m.header[HeaderContentType]; ct != "" && isCloudEventsMedia(ct) {
		m.format = format.Lookup(ct)
		if m.format == nil {
			// Ask for the JSON format even with parameters such as charset.
			m.format = format.JSON
		}
		return m
	}
	if sv, ok := m.header[specs.PrefixedSpecVersionName()]; ok {
		m.version = specs.Version(sv)
	}
	return m
}

func isCloudEventsMedia(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && strings.HasPrefix(mt, "application/cloudevents")
}

func (m *natsMessage) ReadEncoding() binding.Encoding {
	switch {
	case m.format != nil:
		return binding.EncodingStructured
	case m.version != nil:
		return binding.EncodingBinary
	}
	return binding.EncodingUnknown
}

func (m *natsMessage) ReadStructured(ctx context.Context, w binding.StructuredWriter) error {
	if m.format == nil {
		return binding.ErrNotStructured
	}
	return w.SetStructuredEvent(ctx, m.format, bytes.NewReader(m.body))
}

func (m *natsMessage) ReadBinary(_ context.Context, w binding.BinaryWriter) error {
	if m.version == nil {
		return binding.ErrNotBinary
	}
	for k, v := range m.header {
		if attr := m.version.Attribute(k); attr != nil {
			if err := w.SetAttribute(attr, v); err != nil {
				return err
			}
			continue
		}
		if name, ok := strings.CutPrefix(k, headerPrefix); ok && name != "" {
			if err := w.SetExtension(name, v); err != nil {
				return err
			}
		}
	}
	if len(m.body) > 0 {
		return w.SetData(bytes.NewReader(m.body))
	}
	return nil
}

// GetAttribute returns a binary-mode attribute (the transformers of the
// SDK read them this way).
func (m *natsMessage) GetAttribute(k spec.Kind) (spec.Attribute, any) {
	if m.version == nil {
		return nil, nil
	}
	attr := m.version.AttributeFromKind(k)
	if attr == nil {
		return nil, nil
	}
	if v, ok := m.header[attr.PrefixedName()]; ok {
		return attr, v
	}
	return attr, nil
}

// GetExtension returns a binary-mode extension attribute.
func (m *natsMessage) GetExtension(name string) any {
	if v, ok := m.header[headerPrefix+name]; ok {
		return v
	}
	return nil
}

func (m *natsMessage) Finish(error) error { return nil }

// errNotCloudEvent says a message is in neither content mode.
var errNotCloudEvent = errors.New("neither a structured (content-type application/cloudevents+json) nor a binary (ce-specversion header) CloudEvent")

// DecodeEvent reads a CloudEvent from a NATS message's headers and payload,
// in either content mode, and validates it.
func DecodeEvent(h nats.Header, payload []byte) (*event.Event, error) {
	m := newNATSMessage(h, payload)
	if m.badHeader != "" {
		return nil, &AttributeError{Attr: strings.TrimPrefix(m.badHeader, headerPrefix), Msg: "malformed percent-encoding (a % not followed by two hex digits)"}
	}
	if m.ReadEncoding() == binding.EncodingUnknown {
		return nil, errNotCloudEvent
	}
	if m.format == format.JSON {
		if err := checkEnvelopeNames(m.body); err != nil {
			return nil, err
		}
	}
	ev, err := toEvent(m)
	if err != nil {
		return nil, err
	}
	// The SDK's setters, which binary mode goes through, trim spaces off
	// these attributes; a JSON event (structured mode) is read without
	// them. Set them again, so that an event reads the same in either mode
	// and survives re-encoding in the other (found by FuzzDecodeEvent).
	ev.SetID(ev.ID())
	ev.SetType(ev.Type())
	ev.SetSubject(ev.Subject())
	ev.SetDataContentType(ev.DataContentType())
	ev.SetDataSchema(ev.DataSchema())
	if err := ev.Validate(); err != nil {
		return nil, err
	}
	if hasControl(ev.ID()) {
		return nil, fmt.Errorf("id %q holds control characters", ev.ID())
	}
	if err := checkEnvelope(ev); err != nil {
		return nil, err
	}
	return ev, nil
}

// AttributeError is a fault of one attribute of an event's envelope; decode
// names the attribute in the rejection (RejectError.Path).
type AttributeError struct {
	Attr string
	Msg  string
}

func (e *AttributeError) Error() string { return e.Attr + ": " + e.Msg }

// checkEnvelope refuses what schemas/cloudevent.json does not admit and
// the SDK reads anyway: another specversion than 1.0 (the SDK reads 0.3,
// whose attributes differ), and attributes that are not Unicode text (a
// binary-mode header may percent-encode any byte; JSON writes what it
// cannot encode as U+FFFD, so such an attribute would not survive being
// passed on).
func checkEnvelope(ev *event.Event) error {
	if v := ev.SpecVersion(); v != event.CloudEventsVersionV1 {
		return &AttributeError{Attr: "specversion", Msg: fmt.Sprintf("must be %q, not %q", event.CloudEventsVersionV1, v)}
	}
	for _, a := range [...]struct{ name, v string }{
		{"id", ev.ID()}, {"source", ev.Source()}, {"type", ev.Type()}, {"subject", ev.Subject()},
		{"dataschema", ev.DataSchema()}, {"datacontenttype", ev.DataContentType()},
	} {
		if !utf8.ValidString(a.v) {
			return &AttributeError{Attr: a.name, Msg: "invalid UTF-8"}
		}
	}
	if c, ok := ev.Context.(*event.EventContextV1); ok {
		for name, v := range c.Extensions {
			if s, ok := v.(string); ok && !utf8.ValidString(s) {
				return &AttributeError{Attr: name, Msg: "invalid UTF-8"}
			}
		}
	}
	return nil
}

// checkEnvelopeNames refuses a JSON event format whose object names an
// attribute twice: the SDK keeps the last, another reader of the events
// stream may keep the first (see dataWalk.key). Only the top level is
// read here; the data is checked as data.
func checkEnvelopeNames(body []byte) error {
	w := getDataWalk()
	defer putDataWalk(w)
	depth := 0
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '{', '[':
			if depth++; depth == 1 {
				w.open(true)
			}
		case '}', ']':
			depth--
		case '"':
			end := stringEnd(body, i)
			if end == len(body) {
				return nil // unterminated: the parser refuses it
			}
			if depth == 1 && isNameColon(body[end+1:]) {
				decoded := body[i+1 : end]
				if bytes.IndexByte(decoded, '\\') >= 0 {
					var s string
					if json.Unmarshal(body[i:end+1], &s) != nil {
						return nil // the parser refuses it
					}
					decoded = []byte(s)
				}
				if w.key(decoded) != nil {
					return &AttributeError{Attr: string(decoded), Msg: "attribute given twice"}
				}
			}
			i = end
		}
	}
	return nil
}

// isNameColon reports whether rest, what follows a string, starts with a
// colon after any white space: the string was a name.
func isNameColon(rest []byte) bool {
	rest = bytes.TrimLeft(rest, " \t\r\n")
	return len(rest) > 0 && rest[0] == ':'
}

// toEvent is binding.ToEvent, but reads the JSON event format itself with
// the SDK's parser (Event.UnmarshalJSON) after one validity check: the
// binding's route copies the payload and has encoding/json scan it twice
// before handing it to that same parser, which was a third of the time
// the worker spent decoding an event. FuzzDecodeEvent holds the two to
// the same events and errors.
func toEvent(m *natsMessage) (*event.Event, error) {
	body := bytes.TrimLeft(m.body, " \t\r\n")
	if m.format != format.JSON || len(body) == 0 || body[0] != '{' {
		return binding.ToEvent(context.Background(), m)
	}
	if !json.Valid(body) {
		return nil, errors.New("invalid JSON event format")
	}
	// Not event.New: the parser sets the context from the specversion it
	// reads (and fails without one), so the one New makes is thrown away.
	var ev event.Event
	if err := ev.UnmarshalJSON(bytes.TrimRight(body, " \t\r\n")); err != nil {
		return nil, err
	}
	return &ev, nil
}

// EncodeEvent writes ev as a NATS message to subject in the given mode. The
// message carries Nats-Msg-Id = the event id, so that JetStream drops a
// republished copy within its duplicate window.
func EncodeEvent(subject string, ev *event.Event, mode Mode) (*nats.Msg, error) {
	if err := ev.Validate(); err != nil {
		return nil, fmt.Errorf("streams: encode event: %w", err)
	}
	msg := nats.NewMsg(subject)
	msg.Header.Set(headerMsgID, ev.ID())
	if mode == Structured {
		if jsonContent(ev.DataContentType()) && !ev.DataBase64 && len(ev.Data()) > 0 && !json.Valid(ev.Data()) {
			// Data read from a binary-mode event need not be the JSON its
			// content type (or its absence) claims; written inline it would
			// break the envelope, so it goes as data_base64.
			c := ev.Clone()
			c.DataBase64 = true
			ev = &c
		}
		body, err := ev.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("streams: encode event: %w", err)
		}
		msg.Header.Set(HeaderContentType, ContentTypeCloudEvents)
		msg.Data = body
		return msg, nil
	}
	version := specs.Version(ev.SpecVersion())
	if version == nil {
		return nil, fmt.Errorf("streams: encode event: unknown specversion %q", ev.SpecVersion())
	}
	for _, attr := range version.Attributes() {
		v := attr.Get(ev.Context)
		if v == nil {
			continue
		}
		s, err := types.Format(v)
		if err != nil {
			return nil, fmt.Errorf("streams: encode event: %s: %w", attr.Name(), err)
		}
		if attr.Kind() == spec.DataContentType {
			msg.Header.Set(HeaderContentType, s)
			continue
		}
		msg.Header.Set(attr.PrefixedName(), percentEncode(s))
	}
	for name, v := range ev.Extensions() {
		s, err := types.Format(v)
		if err != nil {
			return nil, fmt.Errorf("streams: encode event: extension %s: %w", name, err)
		}
		msg.Header.Set(headerPrefix+name, percentEncode(s))
	}
	msg.Data = ev.Data()
	return msg, nil
}

// percentEncode escapes what a header value may not hold: bytes outside
// printable ASCII, space, '"' and '%' (NATS binding §3.1.3.2).
func percentEncode(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c > 0x20 && c < 0x7f && c != '"' && c != '%' {
			if b.Len() > 0 {
				b.WriteByte(c)
			}
			continue
		}
		if b.Len() == 0 {
			b.Grow(len(s) + 8)
			b.WriteString(s[:i])
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	if b.Len() == 0 {
		return s
	}
	return b.String()
}

// percentDecode reverses percentEncode. ok is false when s holds a '%'
// not followed by two hex digits, which is kept as it is: a publisher that
// sent it meant something percentEncode cannot have written.
func percentDecode(s string) (_ string, ok bool) {
	if !strings.Contains(s, "%") {
		return s, true
	}
	ok = true
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' {
			if i+2 < len(s) {
				if hi, lo := unhex(s[i+1]), unhex(s[i+2]); hi >= 0 && lo >= 0 {
					b.WriteByte(byte(hi<<4 | lo))
					i += 2
					continue
				}
			}
			ok = false
		}
		b.WriteByte(s[i])
	}
	return b.String(), ok
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// jsonContent reports whether a data content type makes structured mode
// write the data inline as JSON: none at all, or a JSON media type.
func jsonContent(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	return mt == "" || mt == "application/json" || mt == "text/json" || strings.HasSuffix(mt, "+json")
}

// extension returns ev's extension attribute name (lower case, as the
// specification has them) without the copy of them all that
// ev.Extensions() makes: it runs several times per event.
func extension(ev *event.Event, name string) (any, bool) {
	switch c := ev.Context.(type) {
	case *event.EventContextV1:
		v, ok := c.Extensions[name]
		return v, ok
	case *event.EventContextV03:
		v, ok := c.Extensions[name]
		return v, ok
	}
	v, ok := ev.Extensions()[name]
	return v, ok
}
