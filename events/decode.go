package events

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"mime"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/carddrift/carddrift/detector/jcs"
	"github.com/carddrift/carddrift/schemas"
	"github.com/carddrift/carddrift/store/topology"
)

// Decode reads a CloudEvent from a NATS message in either content mode
// (structured: content-type application/cloudevents+json; binary: a
// ce-specversion header, values percent-decoded) and validates its data
// against the schema its dataschema names, or its type's current one,
// whose id the returned DataSchema holds. Every failure is a *DecodeError
// whose Err is ErrMalformedEnvelope, ErrUnknownType or ErrSchemaViolation.
// It does not retain m's data. Safe for concurrent use.
func Decode(m Msg) (Event, error) {
	d := decoder{subject: m.Subject()}
	h := m.Headers()
	if ct, ok := contentType(h); ok && isCloudEventsContentType(ct) {
		d.mode = Structured
		return d.structured(ct, m.Data())
	}
	return d.binary(h, m.Data())
}

type decoder struct {
	subject string
	mode    Mode
	ev      Event

	specversion     string
	datacontenttype string
}

func (d *decoder) errorf(kind error, attr, reason string, cause error) error {
	return &DecodeError{
		Err: kind, Mode: d.mode, Subject: d.subject,
		Type: d.ev.Type, ID: d.ev.ID, Source: d.ev.Source,
		Attribute: attr, Reason: reason, Cause: cause,
	}
}

func (d *decoder) malformed(attr, reason string) error {
	return d.errorf(ErrMalformedEnvelope, attr, reason, nil)
}

func contentType(h headerMap) (string, bool) {
	if v, ok := h[headerContentType]; ok && len(v) > 0 {
		return v[0], true
	}
	if v, ok := h["Content-Type"]; ok && len(v) > 0 {
		return v[0], true
	}
	return "", false
}

type headerMap = map[string][]string

func isCloudEventsContentType(ct string) bool {
	return len(ct) >= len("application/cloudevents") && strings.EqualFold(ct[:len("application/cloudevents")], "application/cloudevents")
}

// isJSONContentType: application/json or any +json, with parameters.
func isJSONContentType(ct string) bool {
	mt := mediaType(ct)
	if strings.EqualFold(mt, contentTypeJSON) {
		return true
	}
	if len(mt) > 5 && strings.EqualFold(mt[len(mt)-5:], "+json") {
		_, _, err := mime.ParseMediaType(ct)
		return err == nil
	}
	return false
}

func mediaType(ct string) string {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.TrimSpace(mt)
}

func (d *decoder) binary(h headerMap, data []byte) (Event, error) {
	var err error
	var seenSpec bool
	for k, vs := range h {
		if len(k) < len(headerPrefix) || k[:len(headerPrefix)] != headerPrefix {
			continue
		}
		if len(vs) != 1 {
			return Event{}, d.malformed(k, "header repeated")
		}
		v := vs[0]
		if strings.IndexByte(v, '%') >= 0 {
			if v, err = url.PathUnescape(v); err != nil {
				return Event{}, d.malformed(k, "bad percent-encoding")
			}
		}
		if !utf8.ValidString(v) {
			return Event{}, d.malformed(k, "invalid UTF-8")
		}
		name := k[len(headerPrefix):]
		if _, bit := attribute(name); bit != 0 && bit < bData {
			seenSpec = seenSpec || bit == bSpec
			err = d.set(bit, k, v)
		} else {
			err = d.extension(name, v)
		}
		if err != nil {
			return Event{}, err
		}
	}
	if !seenSpec {
		return Event{}, d.malformed("ce-specversion", "not a CloudEvent: no ce-specversion header and no content-type application/cloudevents+json")
	}
	if d.datacontenttype == "" {
		if ct, ok := contentType(h); ok {
			d.datacontenttype = ct
		}
	}
	s, err := d.envelope()
	if err != nil {
		return Event{}, err
	}
	if len(data) == 0 {
		return Event{}, d.noData()
	}
	data, owned := ownCopy(data)
	v, verr, err := readAll(s, data, owned)
	if err != nil {
		return Event{}, d.errorf(ErrMalformedEnvelope, "data", err.Error(), err)
	}
	return d.finish(s, v, verr)
}

func (d *decoder) noData() error {
	return d.errorf(ErrSchemaViolation, "data", "event has no data",
		&schemas.ValidationError{Type: d.ev.Type, Reason: "event has no data"})
}

func (d *decoder) extension(name, v string) error {
	if !validExtensionName(name) {
		return d.malformed(name, "invalid extension attribute name (want [a-z0-9]+)")
	}
	if d.ev.Extensions == nil {
		d.ev.Extensions = make(map[string]string, 2)
	}
	if _, dup := d.ev.Extensions[name]; dup {
		return d.malformed(name, "attribute repeated")
	}
	d.ev.Extensions[name] = v
	return nil
}

func validExtensionName(name string) bool {
	if name == "" || name == "data" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// set sets the context attribute of bit (bSpec to bCT) to v.
func (d *decoder) set(bit uint16, attr, v string) error {
	var err error
	switch bit {
	case bSpec:
		d.specversion = v
	case bID:
		d.ev.ID = v
	case bSource:
		d.ev.Source = v
	case bType:
		d.ev.Type = v
	case bSubject, bSchema:
		if v == "" {
			return d.malformed(attr, "empty")
		}
		if bit == bSubject {
			d.ev.Subject = v
		} else {
			d.ev.DataSchema = v
		}
	case bTime:
		if d.ev.Time, err = time.Parse(time.RFC3339Nano, v); err != nil {
			return d.malformed(attr, "not an RFC 3339 timestamp")
		}
	case bCT:
		d.datacontenttype = v
	}
	return nil
}

// envelope checks the attributes and returns the schema of the data.
func (d *decoder) envelope() (*schemas.Schema, error) {
	if d.specversion != "1.0" {
		return nil, d.malformed("specversion", "unsupported specversion "+quote(d.specversion)+" (want 1.0)")
	}
	if d.ev.ID == "" {
		return nil, d.malformed("id", "missing or empty")
	}
	if d.ev.Source == "" {
		return nil, d.malformed("source", "missing or empty")
	}
	if !validURIReference(d.ev.Source) {
		return nil, d.malformed("source", "not a URI-reference")
	}
	if d.ev.Type == "" {
		return nil, d.malformed("type", "missing or empty")
	}
	if d.datacontenttype != "" && !isJSONContentType(d.datacontenttype) {
		return nil, d.malformed("datacontenttype", quote(d.datacontenttype)+" is not JSON")
	}
	return d.schema()
}

func (d *decoder) schema() (*schemas.Schema, error) {
	if d.ev.DataSchema != "" {
		s, err := schemas.ByID(d.ev.DataSchema)
		if err != nil {
			return nil, d.errorf(ErrUnknownType, "dataschema", "unknown schema "+quote(d.ev.DataSchema), err)
		}
		if s.Type != d.ev.Type {
			return nil, d.malformed("dataschema", "schema "+quote(d.ev.DataSchema)+" is not for type "+quote(d.ev.Type))
		}
		return s, nil
	}
	s, err := schemas.Lookup(d.ev.Type)
	if err != nil {
		return nil, d.errorf(ErrUnknownType, "type", "no schema for "+quote(d.ev.Type), err)
	}
	return s, nil
}

// validURIReference reports whether s is an ASCII URI-reference that
// url.Parse gives back unchanged (the form Encode writes).
func validURIReference(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c <= ' ' || c >= 0x7f, c == '"', c == '<', c == '>', c == '\\', c == '^', c == '`', c == '{', c == '|', c == '}':
			return false
		case c == '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return false
			}
		}
	}
	if _, ok := validSources.Load(s); ok {
		return true
	}
	u, err := url.Parse(s)
	if err != nil || u.String() != s {
		return false
	}
	if validSourceCount.Add(1) <= maxValidSources {
		validSources.Store(strings.Clone(s), struct{}{}) // s may be a piece of a message
	}
	return true
}

// CheckSource returns an error wrapping ErrInvalidEvent for a source that
// is empty or not a URI-reference in the form Encode writes.
func CheckSource(source string) error {
	if source == "" || !validURIReference(source) {
		return fmt.Errorf("%w: source %q is not a URI-reference", ErrInvalidEvent, source)
	}
	return nil
}

// validSources caches sources that passed: a stream has few producers, and
// url.Parse is a noticeable part of decoding a small event.
var (
	validSources     sync.Map
	validSourceCount atomic.Int64
)

const maxValidSources = 4096

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// finish checks the subject attribute against the conforming data.
func (d *decoder) finish(s *schemas.Schema, data Data, verr error) (Event, error) {
	if verr != nil {
		return Event{}, d.violation(verr)
	}
	if task, _ := data.ids(); d.ev.Subject != "" && d.ev.Subject != task {
		return Event{}, d.malformed("subject", "subject "+quote(d.ev.Subject)+" is not the data's task id "+quote(task))
	}
	d.ev.Data = data
	d.ev.DataSchema = s.ID
	return d.ev, nil
}

// readAll reads data, one JSON value, against s: the typed data and its
// violation, or the syntax error.
func readAll(s *schemas.Schema, data []byte, owned bool) (Data, error, error) {
	x := getReading(data)
	defer putReading(x)
	v, verr := x.read(s, data, owned)
	if isSyntax(verr) {
		return nil, nil, verr
	}
	if err := x.sc.End(); err != nil {
		return nil, nil, err
	}
	return v, verr, nil
}

// read reads the data, the next value of x's scanner, against s.
func (x *reading) read(s *schemas.Schema, data []byte, owned bool) (Data, error) {
	x.r.Reset(s, &x.sc, data, owned)
	v := x.readData(s.Type)
	return v, x.r.Err()
}

func isSyntax(err error) bool {
	_, ok := err.(*jcs.SyntaxError)
	return ok
}

func (d *decoder) violation(err error) error {
	de := d.errorf(ErrSchemaViolation, "", "", err).(*DecodeError)
	var verr *schemas.ValidationError
	if errors.As(err, &verr) {
		de.Field, de.Reason = verr.Field, verr.Reason
	} else {
		de.Reason = err.Error()
	}
	return de
}

func quote(s string) string {
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return `"` + strings.ToValidUTF8(s, "\uFFFD") + `"`
}

// structured reads a structured-mode event in one pass when type (and
// dataschema) precede data, as Encode writes them; else data is read after.
func (d *decoder) structured(ct string, b []byte) (Event, error) {
	if !strings.EqualFold(mediaType(ct), ContentTypeStructured) {
		return Event{}, d.malformed(headerContentType, "unsupported CloudEvents format "+quote(ct)+" (want "+ContentTypeStructured+")")
	}
	if i := jsonStart(b); i >= len(b) || b[i] != '{' {
		return Event{}, d.malformed("", "structured event is not a JSON object")
	}
	b, owned := ownCopy(b)
	x := getReading(b)
	defer putReading(x)
	sc := &x.sc
	syntax := func(err error) (Event, error) {
		return Event{}, d.errorf(ErrMalformedEnvelope, "", err.Error(), err)
	}
	if _, _, err := sc.Value(); err != nil { // the '{'
		return syntax(err)
	}
	var (
		seen       uint16
		raw        []byte // the data member
		read       *schemas.Schema
		data       Data
		verr       error
		dataBase64 string
		haveB64    bool
	)
	for {
		k, more, err := sc.NextKey()
		if errors.Is(err, jcs.ErrDuplicateKey) {
			if name, bit := attribute(k); bit != 0 {
				return Event{}, d.malformed(name, "member repeated")
			}
			return Event{}, d.malformed(strings.Clone(k), "attribute repeated")
		}
		if err != nil {
			return syntax(err)
		}
		if !more {
			break
		}
		k, bit := attribute(k)
		if bit == 0 && !owned {
			k = strings.Clone(k)
		}
		seen |= bit
		start := sc.Pos()
		if bit == bData {
			if read = d.known(); read != nil {
				data, verr = x.read(read, b, owned)
				if isSyntax(verr) {
					return syntax(verr)
				}
			} else if _, _, err := skipValue(sc); err != nil {
				return syntax(err)
			}
			raw = b[start:sc.Pos()]
			continue
		}
		kind, sv, err := skipValue(sc)
		if err != nil {
			return syntax(err)
		}
		if kind == jcs.Null { // null attributes are absent
			continue
		}
		if bit != 0 && kind != jcs.String {
			return Event{}, d.malformed(k, "not a string")
		}
		if !owned && kind == jcs.String && !sc.Escaped() {
			sv = strings.Clone(sv)
		}
		switch {
		case bit == bB64:
			dataBase64, haveB64 = sv, true
		case bit != 0:
			if err := d.set(bit, k, sv); err != nil {
				return Event{}, err
			}
		default:
			s, ok := scalarString(kind, sv)
			if !ok {
				return Event{}, d.malformed(k, "extension attribute is not a string, number or boolean")
			}
			if err := d.extension(k, s); err != nil {
				return Event{}, err
			}
		}
	}
	if err := sc.End(); err != nil {
		return syntax(err)
	}
	if seen&bSpec == 0 {
		return Event{}, d.malformed("specversion", "missing")
	}
	s, err := d.envelope()
	if err != nil {
		return Event{}, err
	}
	switch {
	case raw != nil && haveB64:
		return Event{}, d.malformed("data_base64", "both data and data_base64")
	case haveB64:
		dec, err := base64.StdEncoding.DecodeString(dataBase64)
		if err != nil {
			return Event{}, d.malformed("data_base64", "invalid base64")
		}
		if len(dec) == 0 {
			return Event{}, d.noData()
		}
		if data, verr, err = readAll(s, dec, true); err != nil {
			return Event{}, d.errorf(ErrMalformedEnvelope, "data_base64", err.Error(), err)
		}
	case raw == nil:
		return Event{}, d.noData()
	case read != s: // read again against the schema the envelope names
		sc.Reset(raw, jsonLimits)
		data, verr = x.read(s, raw, owned)
	}
	return d.finish(s, data, verr)
}

// known returns the schema the attributes so far name, or nil.
func (d *decoder) known() *schemas.Schema {
	if d.ev.Type == "" {
		return nil
	}
	s, _ := d.schema()
	return s
}

// skipValue reads the next value, passing over what it holds.
func skipValue(sc *jcs.Scanner) (jcs.Kind, string, error) {
	k, s, err := sc.Value()
	if err == nil && (k == jcs.Object || k == jcs.Array) {
		err = sc.Skip()
	}
	return k, s, err
}

// The members of a structured event that are context attributes or data.
const (
	bSpec = 1 << iota
	bID
	bSource
	bType
	bSubject
	bTime
	bSchema
	bCT
	bData
	bB64
)

// attribute returns the constant name and the bit of member k; k and 0 for
// an extension.
func attribute(k string) (string, uint16) {
	switch k {
	case "specversion":
		return "specversion", bSpec
	case "id":
		return "id", bID
	case "source":
		return "source", bSource
	case "type":
		return "type", bType
	case "subject":
		return "subject", bSubject
	case "time":
		return "time", bTime
	case "dataschema":
		return "dataschema", bSchema
	case "datacontenttype":
		return "datacontenttype", bCT
	case "data":
		return "data", bData
	case "data_base64":
		return "data_base64", bB64
	}
	return k, 0
}

func jsonStart(b []byte) int {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

func scalarString(k jcs.Kind, s string) (string, bool) {
	switch k {
	case jcs.String, jcs.Number:
		return s, true
	case jcs.True:
		return "true", true
	case jcs.False:
		return "false", true
	}
	return "", false
}

// CheckSubject returns nil when the lifecycle event ev belongs on
// a2a.task.<kind>.<task> (kind of its type, Token of its task id), and an
// error wrapping ErrSubjectMismatch otherwise or for any other event.
func CheckSubject(ev Event, kind, task string) error {
	if ev.Data == nil || !isInbound(ev.Type) || ev.Data.EventType() != ev.Type {
		return fmt.Errorf("%w: type %s is not a lifecycle event's", ErrSubjectMismatch, quote(ev.Type))
	}
	if want := ev.Type[len(inboundPrefix):]; kind != want {
		return fmt.Errorf("%w: kind token %s, type %s", ErrSubjectMismatch, quote(kind), quote(ev.Type))
	}
	if id, _ := ev.Data.ids(); Token(id) != task {
		return fmt.Errorf("%w: task token %s, data.taskId %s", ErrSubjectMismatch, quote(task), quote(id))
	}
	return nil
}

// CheckStoredSubject is CheckSubject for the full stored subject: prefix
// ("a2a.task." by default), kind, task and, when partitioned, a partition
// number (which one is not checked: a repartitioned stream keeps old ones).
func CheckStoredSubject(ev Event, subject, prefix string, partitioned bool) error {
	rest, ok := strings.CutPrefix(subject, prefix)
	if !ok {
		return fmt.Errorf("%w: subject %s is not under %s", ErrSubjectMismatch, quote(subject), quote(prefix))
	}
	kind, rest, _ := strings.Cut(rest, ".")
	task, part, hasPart := strings.Cut(rest, ".")
	if hasPart != partitioned || hasPart && !isPartition(part) {
		shape := "<kind>.<task>"
		if partitioned {
			shape += ".<partition>"
		}
		return fmt.Errorf("%w: subject %s is not %s%s", ErrSubjectMismatch, quote(subject), prefix, shape)
	}
	return CheckSubject(ev, kind, task)
}

// isPartition: a decimal below topology.MaxPartitions, no leading zeros.
func isPartition(s string) bool {
	if s == "" || len(s) > 4 || len(s) > 1 && s[0] == '0' {
		return false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n < topology.MaxPartitions
}

// MaxDepth is the deepest nesting of arrays and objects Decode accepts in a
// message (the structured envelope counts as one level).
const MaxDepth = 64

// jsonLimits: no size limit (the NATS server bounds a message).
var jsonLimits = jcs.Limits{MaxBytes: math.MaxInt, MaxDepth: MaxDepth}

// reading is a pooled jcs.Scanner (the canonicalizer's strict scanner) and
// the schemas.Reader that reads the data with it.
type reading struct {
	sc jcs.Scanner
	r  schemas.Reader

	data    []reflect.Value // by dataTypes' index: the value readData reads into
	used    reflect.Value   // the one last read into, zeroed when put back
	touches int             // findings with touches, of the drift being read
}

var readings = sync.Pool{New: func() any { return new(reading) }}

func getReading(data []byte) *reading {
	x := readings.Get().(*reading)
	x.sc.Reset(data, jsonLimits) // cannot fail: there is no size limit
	return x
}

func putReading(x *reading) {
	x.sc.Reset(nil, jcs.Limits{})
	x.r = schemas.Reader{}
	if x.used.IsValid() {
		x.used.SetZero()
	}
	readings.Put(x)
}

// maxOwnedCopy is the largest message Decode copies whole, so that its
// strings are pieces of one copy instead of one allocation each; larger
// messages copy each string out.
const maxOwnedCopy = 2048

func ownCopy(b []byte) ([]byte, bool) {
	if len(b) > maxOwnedCopy {
		return b, false
	}
	return bytes.Clone(b), true
}
