package events

import (
	"encoding/json"
	"strconv"
)

// marshalData is json.Marshal(d), written directly for the lifecycle
// events clients send most (status, request, artifact, error): the same
// bytes (TestMarshalDataIsJSONMarshal, and TestEncodeGolden for Encode as
// a whole) without encoding/json's reflection. Other types go to
// json.Marshal.
func marshalData(d Data) ([]byte, error) {
	switch d := d.(type) {
	case Status:
		b := make([]byte, 0, 64+len(d.TaskID)+len(d.AgentURL)+len(d.State)+len(d.SkillID))
		b = appendMember(b, `{"taskId":`, d.TaskID)
		b = appendMember(b, `,"agentUrl":`, d.AgentURL)
		b = appendMember(b, `,"state":`, d.State)
		if d.SkillID != "" {
			b = appendMember(b, `,"skillId":`, d.SkillID)
		}
		return append(b, '}'), nil
	case Request:
		b := make([]byte, 0, 72+len(d.TaskID)+len(d.AgentURL)+len(d.Method))
		b = appendMember(b, `{"taskId":`, d.TaskID)
		b = appendMember(b, `,"agentUrl":`, d.AgentURL)
		b = appendMember(b, `,"method":`, d.Method)
		b = append(b, `,"attempt":`...)
		b = strconv.AppendInt(b, int64(d.Attempt), 10)
		return append(b, '}'), nil
	case Artifact:
		b := make([]byte, 0, 96+len(d.TaskID)+len(d.AgentURL)+len(d.ArtifactID))
		b = appendMember(b, `{"taskId":`, d.TaskID)
		b = appendMember(b, `,"agentUrl":`, d.AgentURL)
		b = appendMember(b, `,"artifactId":`, d.ArtifactID)
		b = append(b, `,"mediaTypes":`...)
		if d.MediaTypes == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, '[')
			for i, mt := range d.MediaTypes {
				if i > 0 {
					b = append(b, ',')
				}
				b = appendString(b, mt)
			}
			b = append(b, ']')
		}
		return append(b, '}'), nil
	case Error:
		b := make([]byte, 0, 96+len(d.TaskID)+len(d.AgentURL)+len(d.Method)+len(d.Message))
		b = appendMember(b, `{"taskId":`, d.TaskID)
		b = appendMember(b, `,"agentUrl":`, d.AgentURL)
		b = appendMember(b, `,"method":`, d.Method)
		b = append(b, `,"code":`...)
		b = strconv.AppendInt(b, int64(d.Code), 10)
		b = appendMember(b, `,"message":`, d.Message)
		return append(b, '}'), nil
	}
	return json.Marshal(d)
}

func appendMember(b []byte, key, v string) []byte {
	return appendString(append(b, key...), v)
}

// appendString appends s as encoding/json writes a string: as it is when
// every byte is printable ASCII that json.Marshal does not escape (it
// escapes '"', '\\' and, as HTML-safe, '<', '>' and '&'); otherwise
// json.Marshal writes it.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
