package events

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/cloudevents/sdk-go/v2/binding/format"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/nats-io/nats.go"

	"github.com/carddrift/carddrift/schemas"
)

// Encode validates e and encodes it as a NATS message on Subject(e.Data).
// It fills an empty Type, Subject (the task id) and DataSchema (the type's
// current schema); errors wrap ErrInvalidEvent when they contradict the
// data, or ErrSchemaViolation and a *schemas.ValidationError. It sets no
// Nats-Msg-Id (publish.Publisher does). Binary header values are
// percent-encoded like the CloudEvents HTTP binding (space, '"', '%' and
// non-printable-ASCII bytes), so any task id is a safe header value.
func Encode(e Event, mode Mode) (*nats.Msg, error) {
	data, subject, err := prepare(&e)
	if err != nil {
		return nil, err
	}
	msg := &nats.Msg{Subject: subject}
	switch mode {
	case Binary:
		if !binaryReady(&e) { // the sdk event gives the error
			if _, err := sdkEvent(&e, data); err != nil {
				return nil, err
			}
		}
		// 8 attributes and the publisher's Nats-Msg-Id.
		msg.Header = make(nats.Header, 9+len(e.Extensions))
		writeBinary(&e, &headerWriter{h: msg.Header})
		msg.Data = data
	case Structured:
		ce, err := sdkEvent(&e, data)
		if err != nil {
			return nil, err
		}
		b, err := format.JSON.Marshal(ce)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidEvent, err)
		}
		msg.Header = nats.Header{headerContentType: []string{ContentTypeStructured}}
		msg.Data = b
	default:
		return nil, fmt.Errorf("%w: unknown mode %d", ErrInvalidEvent, mode)
	}
	return msg, nil
}

// CloudEvent returns e as an sdk-go event (with Type, Subject and
// DataSchema filled as Encode fills them), after the same checks as Encode.
func CloudEvent(e Event) (*event.Event, error) {
	ce, _, err := cloudEvent(&e)
	return ce, err
}

func cloudEvent(e *Event) (*event.Event, string, error) {
	data, subject, err := prepare(e)
	if err != nil {
		return nil, "", err
	}
	ce, err := sdkEvent(e, data)
	if err != nil {
		return nil, "", err
	}
	return ce, subject, nil
}

// prepare checks and fills e's attributes and returns its validated data
// and its subject.
func prepare(e *Event) ([]byte, string, error) { return prepareWith(e, true) }

// prepareWith with typed false is BenchmarkEncodeTypes' baseline: without
// marshalData and plainSource.
func prepareWith(e *Event, typed bool) ([]byte, string, error) {
	if e.Data == nil {
		return nil, "", fmt.Errorf("%w: no data", ErrInvalidEvent)
	}
	typ := e.Data.EventType()
	if e.Type == "" {
		e.Type = typ
	} else if e.Type != typ {
		return nil, "", fmt.Errorf("%w: type %q but data is %s", ErrInvalidEvent, e.Type, typ)
	}
	task, _ := e.Data.ids()
	if e.Subject == "" {
		e.Subject = task
	} else if e.Subject != task {
		return nil, "", fmt.Errorf("%w: subject %q is not the task id %q", ErrInvalidEvent, e.Subject, task)
	}
	if e.ID == "" {
		return nil, "", fmt.Errorf("%w: no id", ErrInvalidEvent)
	}
	if !utf8.ValidString(e.ID) || !utf8.ValidString(e.Subject) {
		return nil, "", fmt.Errorf("%w: id or task id is not UTF-8", ErrInvalidEvent)
	}
	if !typed || !plainSource(e.Source) {
		if err := CheckSource(e.Source); err != nil {
			return nil, "", err
		}
	}
	var s *schemas.Schema
	var err error
	if e.DataSchema == "" {
		s, err = schemas.Lookup(typ)
		if err != nil {
			return nil, "", fmt.Errorf("%w: %w", ErrInvalidEvent, err)
		}
		e.DataSchema = s.ID
	} else if s, err = schemas.ByID(e.DataSchema); err != nil || s.Type != typ {
		return nil, "", fmt.Errorf("%w: dataschema %q is not a schema of %s", ErrInvalidEvent, e.DataSchema, typ)
	}
	var data []byte
	if typed {
		data, err = marshalData(e.Data)
	} else {
		data, err = json.Marshal(e.Data)
	}
	if err != nil {
		return nil, "", fmt.Errorf("%w: %v", ErrInvalidEvent, err)
	}
	if err := validate(s, typ, data); err != nil {
		return nil, "", err
	}
	subject, err := Subject(e.Data)
	if err != nil {
		return nil, "", err
	}
	return data, subject, nil
}

func validate(s *schemas.Schema, typ string, data []byte) error {
	x := getReading(data)
	defer putReading(x)
	x.r.Reset(s, &x.sc, data, true)
	x.r.Skip()
	err := x.r.Err()
	if err == nil {
		err = x.sc.End()
	}
	switch err.(type) {
	case nil:
		return nil
	case *schemas.ValidationError:
		return fmt.Errorf("events: encode %s: %w: %w", typ, ErrSchemaViolation, err)
	}
	return fmt.Errorf("%w: data: %v", ErrInvalidEvent, err)
}

// sdkEvent builds the sdk-go event of e, checked by prepare, with data.
func sdkEvent(e *Event, data []byte) (*event.Event, error) {
	// Not the sdk setters: they trim spaces, and a task id may have any.
	ct := event.ApplicationJSON
	ec := &event.EventContextV1{
		ID:              e.ID,
		Type:            e.Type,
		DataContentType: &ct,
	}
	src, err := url.Parse(e.Source)
	if err != nil {
		return nil, fmt.Errorf("%w: source: %v", ErrInvalidEvent, err)
	}
	ec.Source = types.URIRef{URL: *src}
	ds, err := url.Parse(e.DataSchema)
	if err != nil {
		return nil, fmt.Errorf("%w: dataschema: %v", ErrInvalidEvent, err)
	}
	ec.DataSchema = &types.URI{URL: *ds}
	if e.Subject != "" {
		subj := e.Subject
		ec.Subject = &subj
	}
	if !e.Time.IsZero() {
		ec.Time = &types.Timestamp{Time: e.Time}
	}
	ce := event.New(event.CloudEventsVersionV1)
	ce.Context = ec
	ce.DataEncoded = data
	for name, v := range e.Extensions {
		if !validExtensionName(name) || isAttributeName(name) {
			return nil, fmt.Errorf("%w: extension name %q", ErrInvalidEvent, name)
		}
		if !utf8.ValidString(v) {
			return nil, fmt.Errorf("%w: extension %q is not UTF-8", ErrInvalidEvent, name)
		}
		if err := ce.Context.SetExtension(name, v); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidEvent, err)
		}
	}
	// Not ce.Validate, which trims spaces too.
	if ce.Source() != e.Source || ce.DataSchema() != e.DataSchema {
		return nil, fmt.Errorf("%w: source or dataschema does not survive URI parsing", ErrInvalidEvent)
	}
	return &ce, nil
}

// binaryReady reports that e, checked by prepare, passes sdkEvent's checks
// too (the source was checked by prepare), so binary mode can skip it.
func binaryReady(e *Event) bool {
	if !schemaURISurvives()[e.DataSchema] {
		return false
	}
	for name, v := range e.Extensions {
		if !validExtensionName(name) || isAttributeName(name) || !event.IsExtensionNameValid(name) || !utf8.ValidString(v) {
			return false
		}
	}
	return true
}

// schemaURISurvives: the schema ids that survive the sdk's URI parsing.
var schemaURISurvives = sync.OnceValue(func() map[string]bool {
	out := map[string]bool{}
	for _, s := range schemas.All() {
		u, err := url.Parse(s.ID)
		out[s.ID] = err == nil && (&types.URI{URL: *u}).String() == s.ID
	}
	return out
})

// plainSource reports, without parsing, that s is a source CheckSource
// accepts: a relative path of unreserved segments ("carddrift/worker-1")
// or a scheme and an opaque part of unreserved characters and colons
// ("urn:client:planner-7"). TestPlainSource holds it to CheckSource.
func plainSource(s string) bool {
	if s == "" {
		return false
	}
	if i := strings.IndexByte(s, ':'); i >= 0 {
		if !isLower(s[0]) {
			return false
		}
		for j := 1; j < i; j++ {
			if c := s[j]; !isLower(c) && !isDigit(c) && c != '+' && c != '-' && c != '.' {
				return false
			}
		}
		opaque := s[i+1:]
		if opaque == "" || opaque[0] == ':' {
			return false
		}
		for j := 0; j < len(opaque); j++ {
			if c := opaque[j]; !isUnreserved(c) && c != ':' {
				return false
			}
		}
		return true
	}
	seg := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '/' {
			if seg == 0 {
				return false // a leading or doubled slash
			}
			seg = 0
			continue
		}
		if !isUnreserved(c) {
			return false
		}
		seg++
	}
	return seg > 0
}

func isLower(c byte) bool { return 'a' <= c && c <= 'z' }
func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isUnreserved(c byte) bool {
	return isLower(c|0x20) || isDigit(c) || c == '-' || c == '.' || c == '_' || c == '~'
}

func isAttributeName(name string) bool {
	_, bit := attribute(name)
	return bit != 0 && bit != bB64
}

// writeBinary writes the binary-mode headers of e as the sdk-go binding
// writes them, without its boxing and copying (TestEncodeBinaryIsSDKBinding
// holds it to the binding).
func writeBinary(e *Event, w *headerWriter) {
	w.setString(headerPrefix+"specversion", event.CloudEventsVersionV1)
	w.setString(headerPrefix+"id", e.ID)
	w.setString(headerPrefix+"source", e.Source)
	w.setString(headerPrefix+"type", e.Type)
	if e.Subject != "" {
		w.setString(headerPrefix+"subject", e.Subject)
	}
	if !e.Time.IsZero() {
		w.setString(headerPrefix+"time", types.FormatTime(e.Time))
	}
	w.setString(headerPrefix+"dataschema", e.DataSchema)
	w.setString(headerPrefix+"datacontenttype", event.ApplicationJSON)
	for name, v := range e.Extensions {
		w.setString(headerName(name), v)
	}
}

// headerWriter writes attributes onto NATS headers.
type headerWriter struct {
	h    nats.Header
	vals []string // backing of the headers' one-value slices
}

func (w *headerWriter) setString(header, s string) {
	if len(w.vals) == cap(w.vals) {
		w.vals = make([]string, 0, 12)
	}
	n := len(w.vals)
	w.vals = append(w.vals, escapeHeader(s))
	w.h[header] = w.vals[n : n+1 : n+1] // capped: an Add to one header cannot write into the next
}

// headerName is headerPrefix+name, built once for the trace context.
func headerName(name string) string {
	switch name {
	case ExtTraceParent:
		return headerPrefix + ExtTraceParent
	case ExtTraceState:
		return headerPrefix + ExtTraceState
	}
	return headerPrefix + name
}

func escapeHeader(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if needsEscape(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	out := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if needsEscape(c) {
			out = append(out, '%', upperHex[c>>4], upperHex[c&0xF])
			continue
		}
		out = append(out, c)
	}
	return string(out)
}

func needsEscape(c byte) bool { return c <= ' ' || c >= 0x7f || c == '"' || c == '%' }
