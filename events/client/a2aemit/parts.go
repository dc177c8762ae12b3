package a2aemit

import (
	"errors"

	"github.com/a2aproject/a2a-go/a2a"
)

// Media types of parts that carry none of their own.
const (
	MediaTypeText   = "text/plain"
	MediaTypeData   = "application/json"
	MediaTypeBinary = "application/octet-stream"
)

// MediaTypes returns the media types of parts, each once, in order of first
// appearance: a FilePart's mimeType (MediaTypeBinary when it has none), a
// DataPart as MediaTypeData, a TextPart as MediaTypeText. Parts of other
// types are skipped.
func MediaTypes(parts a2a.ContentParts) []string {
	var out []string
	add := func(mt string) {
		for _, m := range out {
			if m == mt {
				return
			}
		}
		out = append(out, mt)
	}
	for _, p := range parts {
		switch p := p.(type) {
		case a2a.TextPart, *a2a.TextPart:
			add(MediaTypeText)
		case a2a.DataPart, *a2a.DataPart:
			add(MediaTypeData)
		case a2a.FilePart:
			add(fileMediaType(p.File))
		case *a2a.FilePart:
			if p != nil {
				add(fileMediaType(p.File))
			}
		}
	}
	return out
}

func fileMediaType(c a2a.FilePartContent) string {
	var mt string
	switch f := c.(type) {
	case a2a.FileBytes:
		mt = f.MimeType
	case *a2a.FileBytes:
		mt = deref(f).MimeType
	case a2a.FileURI:
		mt = f.MimeType
	case *a2a.FileURI:
		mt = deref(f).MimeType
	}
	if mt == "" {
		return MediaTypeBinary
	}
	return mt
}

// errorCodes maps a2a-go's sentinel errors back to their JSON-RPC codes.
var errorCodes = []struct {
	err  error
	code int
}{
	{a2a.ErrParseError, -32700},
	{a2a.ErrInvalidRequest, -32600},
	{a2a.ErrMethodNotFound, -32601},
	{a2a.ErrInvalidParams, -32602},
	{a2a.ErrInternalError, -32603},
	{a2a.ErrServerError, -32000},
	{a2a.ErrTaskNotFound, -32001},
	{a2a.ErrTaskNotCancelable, -32002},
	{a2a.ErrPushNotificationNotSupported, -32003},
	{a2a.ErrUnsupportedOperation, -32004},
	{a2a.ErrUnsupportedContentType, -32005},
	{a2a.ErrInvalidAgentResponse, -32006},
	{a2a.ErrAuthenticatedExtendedCardNotConfigured, -32007},
}

// ErrorCode returns the A2A/JSON-RPC code of an error returned by an a2a-go
// client, and false when it carries none (a transport failure, a canceled
// context).
func ErrorCode(err error) (int, bool) {
	if err == nil {
		return 0, false
	}
	for _, e := range errorCodes {
		if errors.Is(err, e.err) {
			return e.code, true
		}
	}
	return 0, false
}
