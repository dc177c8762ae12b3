package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// objectMarker starts a KV value that points to an Object Store object
// instead of holding the body. It begins with a NUL byte, which no JSON
// document starts with; a body that happens to start with it is stored in
// the Object Store too, so the two kinds of value never mix up.
const objectMarker = "\x00carddrift:object\n"

// marker is the JSON after objectMarker.
type marker struct {
	Object string `json:"object"` // object name in the Object Store
	Size   int    `json:"size"`
}

// KVCards is Cards in a JetStream KV bucket keyed by the hex of the digest.
// Bodies up to inlineMax bytes are the KV value itself, byte for byte (so
// `nats kv get` shows them); larger ones go to an Object Store under the same
// name, with a small marker in the KV bucket. The Object Store verifies its
// own SHA-256 of the bytes on read; nothing else is verified.
type KVCards struct {
	kv        jetstream.KeyValue
	obj       jetstream.ObjectStore
	inlineMax int
	// objStream is obj's stream (Bind sets it; nil: not checked): Get
	// counts an object's chunks before reading it, because a stream at its
	// byte limit discards the oldest chunks and keeps the object's name,
	// and a read of such an object waits for its missing chunks forever.
	objStream jetstream.Stream
}

// NewKVCards returns Cards stored in kv, with bodies over inlineMax bytes in
// obj. inlineMax must leave room for headers below the bucket's max value
// size and the connection's max payload (Bind derives it from Config); a
// body the server still refuses as too large is moved to obj. It does no
// I/O.
func NewKVCards(kv jetstream.KeyValue, obj jetstream.ObjectStore, inlineMax int) *KVCards {
	return &KVCards{kv: kv, obj: obj, inlineMax: inlineMax}
}

// Put implements Cards. A digest already stored is left as it is.
func (c *KVCards) Put(ctx context.Context, digest string, raw []byte) error {
	key, err := DigestKey(digest)
	if err != nil {
		return err
	}
	if len(raw) <= c.inlineMax && !bytes.HasPrefix(raw, []byte(objectMarker)) {
		_, err := c.kv.Create(ctx, key, raw)
		switch {
		case err == nil, errors.Is(err, jetstream.ErrKeyExists):
			return nil
		case !tooLarge(err):
			return fmt.Errorf("store: put card %s: %w", digest, err)
		}
	}
	return c.putObject(ctx, digest, key, raw)
}

// tooLarge reports whether err is the server or the client refusing a value
// for its size.
func tooLarge(err error) bool {
	return errors.Is(err, jetstream.ErrStreamMessageExceedsMaximum) || errors.Is(err, nats.ErrMaxPayload) ||
		errors.Is(err, jetstream.ErrMaxBytesExceeded)
}

func (c *KVCards) putObject(ctx context.Context, digest, key string, raw []byte) error {
	if c.obj == nil {
		return fmt.Errorf("store: put card %s: %d bytes need an object store and none is configured", digest, len(raw))
	}
	// Skip the upload when the marker is already there (the common case for
	// a card seen before) or the object is.
	// A marker or object whose chunks the store's byte limit discarded
	// (checkChunks) is not the body stored: upload it again.
	if _, err := c.kv.Get(ctx, key); err == nil {
		if err := c.checkChunks(ctx, key); !errors.Is(err, ErrNotFound) {
			return nil
		}
	}
	if _, err := c.obj.GetInfo(ctx, key); err != nil || errors.Is(c.checkChunks(ctx, key), ErrNotFound) {
		if err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			return fmt.Errorf("store: put card %s: %w", digest, err)
		}
		if _, err := c.obj.PutBytes(ctx, key, raw); err != nil {
			return fmt.Errorf("store: put card %s in object store: %w", digest, err)
		}
	}
	m, err := json.Marshal(marker{Object: key, Size: len(raw)})
	if err != nil {
		return fmt.Errorf("store: put card %s: %w", digest, err)
	}
	_, err = c.kv.Create(ctx, key, append([]byte(objectMarker), m...))
	if err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("store: put card %s: %w", digest, err)
	}
	// CardsGC may have deleted the object between the look above and the
	// marker: upload it again under the marker.
	if _, err := c.obj.GetInfo(ctx, key); errors.Is(err, jetstream.ErrObjectNotFound) {
		if _, err := c.obj.PutBytes(ctx, key, raw); err != nil {
			return fmt.Errorf("store: put card %s in object store: %w", digest, err)
		}
	}
	return nil
}

// Get implements Cards.
func (c *KVCards) Get(ctx context.Context, digest string) ([]byte, error) {
	key, err := DigestKey(digest)
	if err != nil {
		return nil, err
	}
	e, err := c.kv.Get(ctx, key)
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, fmt.Errorf("store: get card %s: %w", digest, ErrNotFound)
		}
		return nil, fmt.Errorf("store: get card %s: %w", digest, err)
	}
	v := e.Value()
	rest, isMarker := bytes.CutPrefix(v, []byte(objectMarker))
	if !isMarker {
		return v, nil
	}
	var m marker
	if err := json.Unmarshal(rest, &m); err != nil {
		return nil, fmt.Errorf("store: get card %s: %w: bad object marker: %v", digest, ErrCorrupt, err)
	}
	if c.obj == nil {
		return nil, fmt.Errorf("store: get card %s: stored in an object store and none is configured", digest)
	}
	if err := c.checkChunks(ctx, m.Object); err != nil {
		return nil, fmt.Errorf("store: get card %s: %w", digest, err)
	}
	b, err := c.obj.GetBytes(ctx, m.Object)
	if err != nil {
		if errors.Is(err, jetstream.ErrObjectNotFound) {
			return nil, fmt.Errorf("store: get card %s: object %s: %w", digest, m.Object, ErrNotFound)
		}
		return nil, fmt.Errorf("store: get card %s: %w", digest, err)
	}
	if len(b) != m.Size {
		return nil, fmt.Errorf("store: get card %s: %w: object has %d bytes, marker says %d", digest, ErrCorrupt, len(b), m.Size)
	}
	return b, nil
}

// checkChunks reports ErrNotFound for an object whose chunks are not all in
// its stream any more (the stream's byte limit discarded the oldest).
func (c *KVCards) checkChunks(ctx context.Context, name string) error {
	if c.objStream == nil {
		return nil
	}
	info, err := c.obj.GetInfo(ctx, name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return fmt.Errorf("object %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return err
	}
	subj := "$O." + info.Bucket + ".C." + info.NUID
	si, err := c.objStream.Info(ctx, jetstream.WithSubjectFilter(subj))
	if err != nil {
		return err
	}
	if have := si.State.Subjects[subj]; have < uint64(info.Chunks) {
		return fmt.Errorf("object %s: %d of its %d chunks discarded: %w", name, uint64(info.Chunks)-have, info.Chunks, ErrNotFound)
	}
	return nil
}
