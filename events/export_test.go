package events

import (
	"context"
	"io"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/binding/spec"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/nats-io/nats.go"
)

// EncodeBinarySDK is Encode in binary mode with the headers written by the
// sdk-go binding (binding.Write onto a headerWriter), as Encode wrote them
// before writeBinary: the oracle writeBinary is held to.
func EncodeBinarySDK(e Event) (*nats.Msg, error) {
	ce, subject, err := cloudEvent(&e)
	if err != nil {
		return nil, err
	}
	w := &sdkWriter{headerWriter: headerWriter{h: nats.Header{}}}
	if _, err := binding.Write(binding.WithForceBinary(context.Background()), binding.ToMessage(ce), nil, w); err != nil {
		return nil, err
	}
	return &nats.Msg{Subject: subject, Header: w.h, Data: w.data}, nil
}

// sdkWriter is a binding.BinaryWriter onto NATS headers, writing each
// attribute the binding formats as headerWriter writes it.
type sdkWriter struct {
	headerWriter
	data []byte
}

var _ binding.BinaryWriter = (*sdkWriter)(nil)

func (w *sdkWriter) Start(context.Context) error { return nil }
func (w *sdkWriter) End(context.Context) error   { return nil }

func (w *sdkWriter) SetData(r io.Reader) (err error) {
	w.data, err = io.ReadAll(r)
	return err
}

func (w *sdkWriter) SetAttribute(a spec.Attribute, v any) error { return w.SetExtension(a.Name(), v) }

func (w *sdkWriter) SetExtension(name string, v any) error {
	if v == nil {
		return nil
	}
	s, err := types.Format(v)
	if err != nil {
		return err
	}
	w.setString(headerPrefix+name, s)
	return nil
}

// PlainSource is plainSource, for TestPlainSource.
func PlainSource(s string) bool { return plainSource(s) }

// EncodeBaseline is Encode in binary mode as it was before the typed
// checks and the fast binary path: the data validated as a parsed tree,
// the sdk event built (URI parsing included), the headers written from it.
func EncodeBaseline(e Event) (*nats.Msg, error) {
	data, subject, err := prepareWith(&e, false)
	if err != nil {
		return nil, err
	}
	if _, err := sdkEvent(&e, data); err != nil {
		return nil, err
	}
	msg := &nats.Msg{Subject: subject, Header: make(nats.Header, 10+len(e.Extensions)), Data: data}
	writeBinary(&e, &headerWriter{h: msg.Header})
	return msg, nil
}

// MarshalData is marshalData, for TestMarshalDataIsJSONMarshal.
func MarshalData(d Data) ([]byte, error) { return marshalData(d) }
