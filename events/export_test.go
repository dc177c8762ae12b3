package events

import (
	"context"

	"github.com/cloudevents/sdk-go/v2/binding"
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
	w := &headerWriter{h: nats.Header{}}
	if _, err := binding.Write(binding.WithForceBinary(context.Background()), binding.ToMessage(ce), nil, w); err != nil {
		return nil, err
	}
	return &nats.Msg{Subject: subject, Header: w.h, Data: w.data}, nil
}
