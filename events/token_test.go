package events_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/carddrift/carddrift/events"
)

func TestToken(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"task-1", "task-1"},
		{"Task_ID-9", "Task_ID-9"},
		{"", "="},
		{"=", "=3D"},
		{"a.b", "a=2Eb"},
		{"*", "=2A"},
		{">", "=3E"},
		{"a b", "a=20b"},
		{"é", "=C3=A9"},
		{"\x00", "=00"},
		{"\xff", "=FF"}, // invalid UTF-8 is encoded byte by byte
		{"a=2E", "a=3D2E"},
		{"agent.example:8443", "agent=2Eexample=3A8443"},
	} {
		if got := events.Token(tc.in); got != tc.want {
			t.Errorf("Token(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if back, err := events.ParseToken(tc.want); err != nil || back != tc.in {
			t.Errorf("ParseToken(%q) = %q, %v; want %q", tc.want, back, err, tc.in)
		}
	}
}

func TestParseTokenRejects(t *testing.T) {
	for _, tok := range []string{
		"",      // no token
		"a.b",   // separator
		"*",     // wildcard
		">",     // wildcard
		"a b",   // space
		"é",     // raw non-ASCII
		"a=",    // truncated escape
		"=4",    // truncated escape
		"=zz",   // not hex
		"=2e",   // lower-case hex is not canonical
		"=41",   // escape of a safe byte ('A') is not canonical
		"a==3D", // '=' followed by an escape
	} {
		if got, err := events.ParseToken(tok); !errors.Is(err, events.ErrInvalidToken) {
			t.Errorf("ParseToken(%q) = %q, %v; want ErrInvalidToken", tok, got, err)
		}
	}
}

func TestAgentKey(t *testing.T) {
	for _, tc := range []struct{ url, host string }{
		{"https://agent.example", "agent.example"},
		{"https://Agent.EXAMPLE/a2a/v1?x=1", "agent.example"},
		{"https://agent.example:443/", "agent.example"},
		{"http://agent.example:80", "agent.example"},
		{"http://agent.example:443", "agent.example:443"},
		{"https://agent.example.:8443", "agent.example:8443"},
		{"HTTPS://user:pw@agent.example", "agent.example"},
		{"https://[::1]:8443/", "[::1]:8443"},
		{"https://[::1]", "[::1]"},
		{"http://10.0.0.7:9000", "10.0.0.7:9000"},
	} {
		host, err := events.AgentHost(tc.url)
		if err != nil || host != tc.host {
			t.Errorf("AgentHost(%q) = %q, %v; want %q", tc.url, host, err, tc.host)
		}
		key, err := events.AgentKey(tc.url)
		if err != nil || key != events.Token(tc.host) {
			t.Errorf("AgentKey(%q) = %q, %v; want %q", tc.url, key, err, events.Token(tc.host))
		}
	}
	for _, bad := range []string{"", "agent.example", "ftp://agent.example", "https://", "https:///path", "://x", "https://a b"} {
		if key, err := events.AgentKey(bad); !errors.Is(err, events.ErrInvalidSubject) {
			t.Errorf("AgentKey(%q) = %q, %v; want ErrInvalidSubject", bad, key, err)
		}
	}
}

func TestSubject(t *testing.T) {
	for _, tc := range []struct {
		d    events.Data
		want string
	}{
		{events.Request{TaskID: "t.1", AgentURL: "https://a.example"}, "a2a.task.request.t=2E1"},
		{events.Submitted{TaskID: "t"}, "a2a.task.submitted.t"},
		{events.Status{TaskID: "*"}, "a2a.task.status.=2A"},
		{events.Artifact{TaskID: ">"}, "a2a.task.artifact.=3E"},
		{events.Error{TaskID: " "}, "a2a.task.error.=20"},
		{events.Drift{TaskID: "t", AgentURL: "https://A.example:443"}, "card.drift.a=2Eexample.t"},
		{events.Pinned{TaskID: "t", AgentURL: "https://a.example:8443"}, "card.pinned.a=2Eexample=3A8443.t"},
		{events.Observed{AgentURL: "https://a.example"}, "card.observed.a=2Eexample"},
		{events.Unreachable{AgentURL: "https://a.example"}, "card.unreachable.a=2Eexample"},
		{events.Unreachable{AgentURL: "https://a.example", TaskID: "t"}, "card.unreachable.a=2Eexample.t"},
	} {
		got, err := events.Subject(tc.d)
		if err != nil || got != tc.want {
			t.Errorf("Subject(%#v) = %q, %v; want %q", tc.d, got, err, tc.want)
			continue
		}
	}
	for _, d := range []events.Data{nil, events.Request{AgentURL: "https://a.example"}, events.Drift{TaskID: "t", AgentURL: "not a url"}} {
		if s, err := events.Subject(d); !errors.Is(err, events.ErrInvalidSubject) {
			t.Errorf("Subject(%#v) = %q, %v; want ErrInvalidSubject", d, s, err)
		}
	}
}

// FuzzToken checks that Token round-trips through ParseToken, only ever
// emits NATS-safe token bytes, and that ParseToken accepts only canonical
// tokens (so distinct ids never share a token).
func FuzzToken(f *testing.F) {
	for _, s := range []string{"", "task-1", "a.b.c", "*", ">", "a b", "=", "=3D", "é", "\x00\xff", "=41", "a==", "同じ", strings.Repeat(".", 40)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tok := events.Token(s)
		if tok == "" {
			t.Fatalf("Token(%q) is empty", s)
		}
		for i := 0; i < len(tok); i++ {
			c := tok[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '=') {
				t.Fatalf("Token(%q) = %q has byte %q", s, tok, c)
			}
		}
		back, err := events.ParseToken(tok)
		if err != nil || back != s {
			t.Fatalf("ParseToken(Token(%q)) = %q, %v", s, back, err)
		}
		// s read as a token: if accepted, it must be canonical.
		if id, err := events.ParseToken(s); err == nil {
			if again := events.Token(id); again != s {
				t.Fatalf("ParseToken(%q) = %q but Token of it is %q", s, id, again)
			}
		}
	})
}
