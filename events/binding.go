package events

import (
	"bytes"
	"context"
	"net/url"
	"strings"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/binding/format"
	"github.com/cloudevents/sdk-go/v2/binding/spec"
)

// NewMessage adapts a NATS message to sdk-go's binding.Message
// (binding.ToEvent(ctx, events.NewMessage(m))). It reads both content modes
// as Decode does but does not validate the data; prefer Decode. Finish does
// nothing: acknowledging is the caller's job.
func NewMessage(m Msg) binding.Message {
	return &message{m: m}
}

type message struct{ m Msg }

var _ binding.Message = (*message)(nil)

var versions = spec.WithPrefix(headerPrefix)

func (m *message) ReadEncoding() binding.Encoding {
	h := m.m.Headers()
	if ct, ok := contentType(h); ok && isCloudEventsContentType(ct) {
		return binding.EncodingStructured
	}
	if _, ok := h[headerPrefix+"specversion"]; ok {
		return binding.EncodingBinary
	}
	return binding.EncodingUnknown
}

func (m *message) ReadStructured(ctx context.Context, w binding.StructuredWriter) error {
	if m.ReadEncoding() != binding.EncodingStructured {
		return binding.ErrNotStructured
	}
	return w.SetStructuredEvent(ctx, format.JSON, bytes.NewReader(m.m.Data()))
}

func (m *message) ReadBinary(ctx context.Context, w binding.BinaryWriter) error {
	if m.ReadEncoding() != binding.EncodingBinary {
		return binding.ErrNotBinary
	}
	h := m.m.Headers()
	sv := h[headerPrefix+"specversion"]
	version := versions.Version(unescapeHeader(sv[0]))
	if version == nil {
		return binding.ErrUnknownEncoding
	}
	hasCT := false
	for k, vs := range h {
		if !strings.HasPrefix(k, headerPrefix) || len(vs) == 0 {
			continue
		}
		v := unescapeHeader(vs[0])
		if attr := version.Attribute(k); attr != nil {
			if attr.Kind() == spec.SpecVersion {
				continue
			}
			if attr.Kind() == spec.DataContentType {
				hasCT = true
			}
			if err := w.SetAttribute(attr, v); err != nil {
				return err
			}
		} else if err := w.SetExtension(strings.TrimPrefix(k, headerPrefix), v); err != nil {
			return err
		}
	}
	if ct, ok := contentType(h); ok && !hasCT {
		if err := w.SetAttribute(version.AttributeFromKind(spec.DataContentType), ct); err != nil {
			return err
		}
	}
	if d := m.m.Data(); len(d) > 0 {
		return w.SetData(bytes.NewReader(d))
	}
	return nil
}

func (m *message) Finish(error) error { return nil }

var _ binding.MessageMetadataReader = (*message)(nil)

// GetAttribute implements binding.MessageMetadataReader for binary mode.
func (m *message) GetAttribute(k spec.Kind) (spec.Attribute, any) {
	h := m.m.Headers()
	sv, ok := h[headerPrefix+"specversion"]
	if !ok || len(sv) == 0 {
		return nil, nil
	}
	version := versions.Version(unescapeHeader(sv[0]))
	if version == nil {
		return nil, nil
	}
	attr := version.AttributeFromKind(k)
	if attr == nil {
		return nil, nil
	}
	if vs, ok := h[attr.PrefixedName()]; ok && len(vs) > 0 {
		return attr, unescapeHeader(vs[0])
	}
	return attr, nil
}

// GetExtension implements binding.MessageMetadataReader for binary mode.
func (m *message) GetExtension(name string) any {
	if vs, ok := m.m.Headers()[headerPrefix+name]; ok && len(vs) > 0 {
		return unescapeHeader(vs[0])
	}
	return nil
}

func unescapeHeader(v string) string {
	if strings.IndexByte(v, '%') < 0 {
		return v
	}
	if u, err := url.PathUnescape(v); err == nil {
		return u
	}
	return v
}
