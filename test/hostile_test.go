package test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store/fetcher"
)

// Hostile card endpoints against the real worker: every capability-dependent
// transition toward one yields card.unreachable with the typed reason within
// the configured bounds, never card.drift, and the stream keeps flowing.

const (
	hostileTotal   = 800 * time.Millisecond
	hostileConnect = 300 * time.Millisecond
	hostileMaxBody = 64 << 10
	// hostileSlack is what one hostile event may take, publish to
	// card.unreachable receipt, beyond the fetch's TotalTimeout (queueing,
	// store round trips, -race on two cores).
	hostileSlack = 3 * time.Second
)

func hostileTweak(o *worker.Options) {
	o.Fetch.TotalTimeout = hostileTotal
	o.Fetch.ConnectTimeout = hostileConnect
	o.Fetch.MaxBodyBytes = hostileMaxBody
	o.Fetch.MaxRedirects = 3
}

// hostileCard is the card the client planned against (sent with the
// submission, so pinning needs no fetch).
const hostileCard = `{"name":"Hostile","description":"d","version":"1.0.0","protocolVersion":"0.3.0",
"url":"https://hostile.example/a2a","capabilities":{"streaming":true},
"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],
"skills":[{"id":"s","name":"S","description":"d","tags":["t"]}]}`

// validCardWith returns a valid card body with extra members spliced in first.
func validCardWith(extra string) string {
	return "{" + extra + strings.TrimPrefix(hostileCard, "{")
}

// waitCtx blocks until the request is gone or a long time has passed, so that
// httptest.Server.Close never waits on a hostile handler.
func waitCtx(r *http.Request, d time.Duration) {
	select {
	case <-r.Context().Done():
	case <-time.After(d):
	}
}

type hostileCase struct {
	name    string
	reason  fetcher.Reason
	handler http.HandlerFunc // nil: url is set instead
	url     string
	minTime time.Duration // a timeout case must take at least this long
}

func hostileCases(t *testing.T) []hostileCase {
	deep := `{"name":"deep","x":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`
	// A port with nothing listening: connection refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + ln.Addr().String()
	ln.Close()

	json := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, body)
		}
	}
	return []hostileCase{
		{name: "slow-headers", reason: fetcher.ReasonTimeout, minTime: hostileTotal,
			handler: func(w http.ResponseWriter, r *http.Request) { waitCtx(r, 30*time.Second) }},
		{name: "slow-body", reason: fetcher.ReasonTimeout, minTime: hostileTotal,
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(200)
				body := []byte(hostileCard)
				for i := 0; ; i++ {
					if _, err := w.Write(body[i%len(body) : i%len(body)+1]); err != nil {
						return
					}
					w.(http.Flusher).Flush()
					select {
					case <-r.Context().Done():
						return
					case <-time.After(50 * time.Millisecond):
					}
				}
			}},
		{name: "huge-body-chunked", reason: fetcher.ReasonTooLarge,
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"name":"`)
				chunk := strings.Repeat("a", 32<<10)
				for range 64 { // 2 MiB, no Content-Length
					if _, err := fmt.Fprint(w, chunk); err != nil {
						return
					}
				}
				fmt.Fprint(w, `"}`)
			}},
		{name: "huge-body-declared", reason: fetcher.ReasonTooLarge,
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Content-Length", fmt.Sprint(1<<30))
				w.WriteHeader(200)
				w.Write([]byte(`{"name":"`))
			}},
		{name: "redirect-loop", reason: fetcher.ReasonTooManyRedirects,
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, r.URL.Path, http.StatusFound)
			}},
		{name: "redirect-to-metadata", reason: fetcher.ReasonRefusedAddress,
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
			}},
		{name: "redirect-to-private", reason: fetcher.ReasonRefusedAddress,
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "http://10.0.0.1/.well-known/agent-card.json", http.StatusTemporaryRedirect)
			}},
		{name: "invalid-json", reason: fetcher.ReasonInvalidJSON, handler: json(`{"name":"broken",`)},
		{name: "deep-nesting", reason: fetcher.ReasonTooDeep, handler: json(deep)},
		{name: "duplicate-keys", reason: fetcher.ReasonDuplicateKeys, handler: json(validCardWith(`"version":"6.6.6",`))},
		{name: "invalid-utf8", reason: fetcher.ReasonInvalidUTF8, handler: json(validCardWith("\"x-note\":\"\xff\xfe\",\n"))},
		{name: "not-a-card", reason: fetcher.ReasonNotACard, handler: json(`[1,2,3]`)},
		{name: "status-500", reason: fetcher.ReasonStatus,
			handler: func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) }},
		{name: "connection-refused", reason: fetcher.ReasonConnect, url: closedURL},
	}
}

func TestHostileAgentsAgainstWorker(t *testing.T) {
	r := newRig(t, testConfig())
	out := r.collect()
	r.startWorker("hostile", hostileTweak)
	ctx := context.Background()

	cases := hostileCases(t)
	for i := range cases {
		c := &cases[i]
		if c.handler != nil {
			srv := httptest.NewServer(c.handler)
			t.Cleanup(srv.Close)
			c.url = srv.URL
		}
		must(t, r.emit.Submitted(ctx, events.Submitted{TaskID: "h-" + c.name, AgentURL: c.url, SkillID: "s",
			Requires: events.Requires{Streaming: true}, Posture: detector.FailClosed, Card: []byte(hostileCard)}))
	}
	out.waitFor(t, "client-card pins", func(o *outbound) bool { return len(o.all(events.TypePinned)) == len(cases) })

	// One at a time, so that each bound is the event's own.
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			task := "h-" + c.name
			start := time.Now()
			must(t, r.emit.Request(ctx, events.Request{TaskID: task, AgentURL: c.url, Method: "tasks/resubscribe", Attempt: 1}))
			var u events.Unreachable
			eventually(t, hostileTotal+hostileSlack, "card.unreachable", func() bool {
				us := out.unreachableOf(task)
				if len(us) > 0 {
					u = us[0]
				}
				return len(us) > 0
			})
			took := time.Since(start)
			if u.Reason != string(c.reason) {
				t.Errorf("reason = %q (%s), want %q", u.Reason, u.Detail, c.reason)
			}
			if want := c.url + fetcher.WellKnownPath; u.CardURL != want {
				t.Errorf("cardUrl = %q, want %q", u.CardURL, want)
			}
			if u.Trigger.Type != events.TypeRequest {
				t.Errorf("trigger = %+v, want the request", u.Trigger)
			}
			if took < c.minTime {
				t.Errorf("took %v, less than the %v timeout it should have waited", took, c.minTime)
			}
			t.Logf("%s: %s in %v", c.name, u.Reason, took.Round(time.Millisecond))
		})
	}

	// All of them at once, then a healthy agent's task: it is still handled.
	healthy := servicetest.NewAgent(t, writeupT0)
	start := time.Now()
	for _, c := range cases {
		must(t, r.emit.Request(ctx, events.Request{TaskID: "h-" + c.name, AgentURL: c.url, Method: "SubscribeToTask", Attempt: 1}))
	}
	must(t, r.emit.Submitted(ctx, events.Submitted{TaskID: "h-healthy", AgentURL: healthy.URL(), SkillID: "summarize",
		Requires: events.Requires{Streaming: true}, Posture: detector.FailClosed}))
	out.waitFor(t, "the healthy task's pin", func(o *outbound) bool { return countBy(o, events.TypePinned)["h-healthy"] == 1 })
	healthy.Set(writeupT40)
	must(t, r.emit.Request(ctx, events.Request{TaskID: "h-healthy", AgentURL: healthy.URL(), Method: "tasks/sendSubscribe", Attempt: 1}))
	out.waitFor(t, "the healthy task's abort", func(o *outbound) bool {
		ds := o.drifts("h-healthy")
		return len(ds) == 1 && ds[0].Verdict.Action == detector.Abort
	})
	// Worst case: every slow agent lands in the healthy task's partition.
	if took, bound := time.Since(start), 2*hostileTotal+10*time.Second; took > bound {
		t.Errorf("healthy task handled after %v, want within %v", took, bound)
	}
	r.drained(t, 15*time.Second)
	for _, c := range cases {
		us := out.unreachableOf("h-" + c.name)
		if len(us) != 2 {
			t.Errorf("%s: %d card.unreachable, want 2 (one per transition)", c.name, len(us))
		}
		for _, u := range us {
			if u.Reason != string(c.reason) {
				t.Errorf("%s: reason %q, want %q", c.name, u.Reason, c.reason)
			}
		}
		if ds := out.drifts("h-" + c.name); len(ds) > 0 {
			t.Errorf("%s: card.drift %+v: unreachable is not drift", c.name, ds)
		}
	}
	// The pins stayed as the client planned them.
	for _, c := range cases {
		pin, _, err := r.stores.Pins.Get(ctx, "h-"+c.name)
		if err != nil {
			t.Fatal(err)
		}
		if pin.Source != events.PinClientCard || pin.LiveDigest != "" || len(pin.Reported) != 0 {
			t.Errorf("%s: pin changed by an unreachable card: %+v", c.name, pin)
		}
	}
}

// Malformed lifecycle events go to the dead-letter stream with a reason and
// do not hold up the events behind them in their partition.
func TestMalformedEventsDeadLettered(t *testing.T) {
	r := newRig(t, testConfig())
	out := r.collect()
	r.startWorker("dlq", nil)
	ctx := context.Background()

	// Every malformed event below is on a subject of task "x"; the healthy
	// events that follow are task "x" too, so they share the partition.
	structured := func(typ, data string) []byte {
		return []byte(`{"specversion":"1.0","id":"bad-` + typ + `","source":"urn:test:hostile","type":"` + typ +
			`","subject":"x","datacontenttype":"application/json","data":` + data + `}`)
	}
	ceJSON := nats.Header{"content-type": []string{"application/cloudevents+json"}}
	cases := []struct {
		name    string
		subject string
		header  nats.Header
		data    []byte
		reason  string
	}{
		{"garbage", "a2a.task.status.x", nil, []byte("\x00\x01 not a cloudevent {"), "malformed"},
		{"invalid-utf8-envelope", "a2a.task.status.x", ceJSON, []byte("{\"specversion\":\"1.0\",\"id\":\"\xff\"}"), "malformed"},
		{"unknown-type", "a2a.task.status.x", ceJSON, structured("com.example.unknown", `{"taskId":"x","agentUrl":"http://127.0.0.1:1"}`), "malformed"},
		{"schema-violation", "a2a.task.status.x", ceJSON, structured(events.TypeStatus, `{"taskId":"x","agentUrl":"http://127.0.0.1:1"}`), "malformed"},
		{"wrong-data-type", "a2a.task.request.x", ceJSON, structured(events.TypeRequest, `{"taskId":"x","agentUrl":"http://127.0.0.1:1","method":"tasks/get","attempt":"one"}`), "malformed"},
		{"binary-old-specversion", "a2a.task.status.x", nats.Header{"ce-specversion": {"0.3"}, "ce-id": {"1"}, "ce-source": {"urn:x"}, "ce-type": {events.TypeStatus}},
			[]byte(`{"taskId":"x","agentUrl":"http://127.0.0.1:1","state":"working"}`), "malformed"},
		{"outbound-type-inbound", "a2a.task.pinned.x", ceJSON, structured(events.TypePinned,
			`{"taskId":"x","agentUrl":"http://127.0.0.1:1","digest":"sha256:`+strings.Repeat("0", 64)+`","fingerprint":"sha256:`+strings.Repeat("0", 64)+`","source":"client-card"}`), "unexpected-type"},
		// A client card that is a JSON object is a card however sloppy
		// ({"foo":1} is pinned, with its nonconformance noted): no client
		// card that passes the event schema can be refused.
	}
	for _, c := range cases {
		m := nats.NewMsg(c.subject)
		for k, v := range c.header {
			m.Header[k] = v
		}
		m.Header.Set(nats.MsgIdHdr, "hostile-"+c.name)
		m.Data = c.data
		if _, err := r.js.PublishMsg(ctx, m); err != nil {
			t.Fatalf("%s: publish: %v", c.name, err)
		}
	}

	// Healthy events right behind them, same task, same partition.
	healthy := servicetest.NewAgent(t, writeupT0)
	must(t, r.emit.Submitted(ctx, events.Submitted{TaskID: "x", AgentURL: healthy.URL(), SkillID: "summarize",
		Requires: events.Requires{Streaming: true}, Posture: detector.FailClosed}))
	out.waitFor(t, "the healthy pin behind the malformed events", func(o *outbound) bool {
		return countBy(o, events.TypePinned)["x"] == 1
	})
	r.drained(t, 10*time.Second)

	// The dead-letter stream holds each malformed event, with its reason.
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cons, err := r.js.OrderedConsumer(dctx, r.cfg.DLQStream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]jetstream.Msg{}
	for len(got) < len(cases) {
		m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			t.Fatalf("dead-letter stream: %d of %d events, then %v", len(got), len(cases), err)
		}
		got[m.Headers().Get(nats.MsgIdHdr)] = m
	}
	for _, c := range cases {
		// The copy's own Nats-Msg-Id is the original's stream position; find
		// it by data and subject.
		var found jetstream.Msg
		for _, m := range got {
			if m.Headers().Get("Carddrift-Original-Subject") != "" &&
				strings.HasPrefix(m.Headers().Get("Carddrift-Original-Subject"), c.subject) && string(m.Data()) == string(c.data) {
				found = m
			}
		}
		if found == nil {
			t.Errorf("%s: not in the dead-letter stream", c.name)
			continue
		}
		h := found.Headers()
		if reason := h.Get("Carddrift-Dead-Letter-Reason"); reason != c.reason {
			t.Errorf("%s: dead-letter reason %q (%s), want %q", c.name, reason, h.Get("Carddrift-Error"), c.reason)
		}
		if h.Get("Carddrift-Error") == "" {
			t.Errorf("%s: no Carddrift-Error header", c.name)
		}
		if want := "carddrift.dlq." + c.reason; found.Subject() != want {
			t.Errorf("%s: dead-letter subject %q, want %q", c.name, found.Subject(), want)
		}
	}
	if d := out.all(events.TypeDrift); len(d) > 0 {
		t.Errorf("card.drift from malformed events: %v", servicetest.Summary(d))
	}
}
