package a2aemit

import (
	"github.com/a2aproject/a2a-go/a2a"

	"github.com/carddrift/carddrift/events/client/internal/track"
)

// Media types of parts that carry none of their own.
const (
	MediaTypeText   = track.MediaTypeText
	MediaTypeData   = track.MediaTypeData
	MediaTypeBinary = track.MediaTypeBinary
)

// MediaTypes returns the media types of parts, each once, in order: a
// FilePart's mimeType (else MediaTypeBinary), MediaTypeData, MediaTypeText.
func MediaTypes(parts a2a.ContentParts) []string {
	var out []string
	add := func(mt string) { out = track.Union(out, []string{mt}) }
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
		mt = track.Deref(f).MimeType
	case a2a.FileURI:
		mt = f.MimeType
	case *a2a.FileURI:
		mt = track.Deref(f).MimeType
	}
	if mt == "" {
		return MediaTypeBinary
	}
	return mt
}

// errorCodes maps a2a-go's sentinel errors back to their JSON-RPC codes.
var errorCodes = []track.Sentinel{
	{Err: a2a.ErrParseError, Code: -32700},
	{Err: a2a.ErrInvalidRequest, Code: -32600},
	{Err: a2a.ErrMethodNotFound, Code: -32601},
	{Err: a2a.ErrInvalidParams, Code: -32602},
	{Err: a2a.ErrInternalError, Code: -32603},
	{Err: a2a.ErrServerError, Code: -32000},
	{Err: a2a.ErrTaskNotFound, Code: -32001},
	{Err: a2a.ErrTaskNotCancelable, Code: -32002},
	{Err: a2a.ErrPushNotificationNotSupported, Code: -32003},
	{Err: a2a.ErrUnsupportedOperation, Code: -32004},
	{Err: a2a.ErrUnsupportedContentType, Code: -32005},
	{Err: a2a.ErrInvalidAgentResponse, Code: -32006},
	{Err: a2a.ErrAuthenticatedExtendedCardNotConfigured, Code: -32007},
}

// ErrorCode returns the A2A/JSON-RPC code of an a2a-go client error,
// false when it carries none (a transport failure, a canceled context).
func ErrorCode(err error) (int, bool) {
	return track.Code(err, errorCodes)
}
