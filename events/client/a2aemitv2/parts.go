package a2aemitv2

import (
	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/carddrift/carddrift/events/client/internal/track"
)

// Media types of parts that carry none of their own.
const (
	MediaTypeText   = track.MediaTypeText
	MediaTypeData   = track.MediaTypeData
	MediaTypeBinary = track.MediaTypeBinary
)

// MediaTypes returns the media types of parts, each once, in order: a
// part's mediaType, else by kind (MediaTypeText, MediaTypeData,
// MediaTypeBinary for raw bytes or a URL).
func MediaTypes(parts a2a.ContentParts) []string {
	var out []string
	for _, p := range parts {
		if p == nil || p.Content == nil {
			continue
		}
		mt := p.MediaType
		if mt == "" {
			switch p.Content.(type) {
			case a2a.Text:
				mt = MediaTypeText
			case a2a.Data:
				mt = MediaTypeData
			default:
				mt = MediaTypeBinary
			}
		}
		out = track.Union(out, []string{mt})
	}
	return out
}

// errorCodes maps a2a-go/v2's sentinel errors back to their JSON-RPC codes
// (the SDK's own table, internal to it).
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
	{Err: a2a.ErrExtendedCardNotConfigured, Code: -32007},
	{Err: a2a.ErrExtensionSupportRequired, Code: -32008},
	{Err: a2a.ErrVersionNotSupported, Code: -32009},
	{Err: a2a.ErrUnauthenticated, Code: -31401},
	{Err: a2a.ErrUnauthorized, Code: -31403},
}

// ErrorCode returns the A2A/JSON-RPC code of an a2a-go/v2 client error,
// false when it carries none (a transport failure, a canceled context).
func ErrorCode(err error) (int, bool) {
	return track.Code(err, errorCodes)
}
