package test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store"
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

// The adversary suite's hostile publishers (issue 19, rows 6 and 7): a
// client allowed to publish lifecycle events, and the faults a dead-letter
// stream or a second writer of a pin bring. Each test fails on e91b0a3.

// advMaxDeliver is the rig's --max-deliver in these tests: small, so that
// the server's give-up on e91b0a3 comes within seconds.
const advMaxDeliver = 2

// advConfig is the rig's config with advMaxDeliver.
func advConfig() store.Config {
	cfg := testConfig()
	cfg.MaxDeliver = advMaxDeliver
	return cfg
}

// dlqCount is how many messages the dead-letter stream holds (0 if it does
// not exist).
func dlqCount(t testing.TB, r *rig) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := r.js.Stream(ctx, r.cfg.DLQStream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return 0
	}
	if err != nil {
		t.Fatalf("dead-letter stream: %v", err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatalf("dead-letter stream: %v", err)
	}
	return info.State.Msgs
}

// dlqMsgs reads the n messages of the dead-letter stream.
func dlqMsgs(t testing.TB, r *rig, n int) []jetstream.Msg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cons, err := r.js.OrderedConsumer(ctx, r.cfg.DLQStream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var out []jetstream.Msg
	for len(out) < n {
		m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			t.Fatalf("dead-letter stream: %d of %d messages, then %v", len(out), n, err)
		}
		out = append(out, m)
	}
	return out
}

// gaveUp counts the server's max-deliveries advisories for the lifecycle
// stream's consumers: each is an event the server stopped delivering.
func gaveUp(t testing.TB, r *rig) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	sub, err := r.nc.Subscribe("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES."+r.cfg.LifecycleStream+".>", func(*nats.Msg) { n.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	if err := r.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	return &n
}

// deliveries is how many deliveries the lifecycle consumers made in all,
// redeliveries included.
func deliveries(t testing.TB, r *rig) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var n uint64
	for _, name := range r.cfg.ConsumerNames() {
		c, err := r.js.Consumer(ctx, r.cfg.LifecycleStream, name)
		if errors.Is(err, jetstream.ErrConsumerNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		info, err := c.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n += info.Delivered.Consumer
	}
	return n
}

// publishRaw publishes a malformed lifecycle event (no CloudEvent at all)
// with the given headers, as any client may.
func publishRaw(t testing.TB, r *rig, subject string, h nats.Header, data string) {
	t.Helper()
	m := nats.NewMsg(subject)
	for k, v := range h {
		m.Header[k] = v
	}
	m.Data = []byte(data)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := r.js.PublishMsg(ctx, m); err != nil {
		t.Fatalf("publish on %s: %v", subject, err)
	}
}

// A malformed event whose publisher added JetStream steering headers is
// still dead-lettered, once, and acknowledged. On e91b0a3 the dead-letter
// copy carried them: the dead-letter stream refused it (wrong expected
// stream, wrong last message id), the worker NAKed every 10 s and the
// server dropped the event at MaxDeliver — the stream held 0 of 2.
func TestAdversaryDLQSteeringHeader(t *testing.T) {
	r := newRig(t, advConfig())
	dropped := gaveUp(t, r)
	r.startWorker("steer", nil)

	// The lifecycle stream accepts both: it is A2A_TASKS, and the first is
	// its last message when the second arrives.
	publishRaw(t, r, "a2a.task.status.steer", nats.Header{
		"Nats-Expected-Stream": {r.cfg.LifecycleStream},
		nats.MsgIdHdr:          {"steer-1"},
	}, "not a cloudevent: expected stream")
	publishRaw(t, r, "a2a.task.status.steer", nats.Header{
		"Nats-Expected-Last-Msg-Id":    {"steer-1"},
		nats.MsgIdHdr:                  {"steer-2"},
		"Carddrift-Dead-Letter-Reason": {"nothing-to-see"},
	}, "not a cloudevent: expected last msg id")

	eventually(t, 45*time.Second, "both events in the dead-letter stream", func() bool {
		if n := dropped.Load(); n > 0 {
			t.Fatalf("the server gave up on %d event(s) while the dead-letter stream holds %d of 2: lost", n, dlqCount(t, r))
		}
		return dlqCount(t, r) >= 2
	})
	r.drained(t, 20*time.Second)
	if n := dlqCount(t, r); n != 2 {
		t.Fatalf("dead-letter stream holds %d messages, want 2 (one per event)", n)
	}
	for _, m := range dlqMsgs(t, r, 2) {
		h := m.Headers()
		for k := range h {
			if len(k) >= 5 && k[:5] == "Nats-" && k != nats.MsgIdHdr {
				t.Errorf("dead letter %q carries the publisher's %s", m.Data(), k)
			}
		}
		if got := h.Get("Carddrift-Dead-Letter-Reason"); got != "malformed" {
			t.Errorf("dead letter %q: reason %q, want malformed", m.Data(), got)
		}
		if h.Get("Carddrift-Publisher-Nats-Expected-Stream") == "" && h.Get("Carddrift-Publisher-Nats-Expected-Last-Msg-Id") == "" {
			t.Errorf("dead letter %q keeps no record of the publisher's steering header: %v", m.Data(), h)
		}
	}
	t.Logf("dead-letter stream: %d messages; server gave up on %d events", dlqCount(t, r), dropped.Load())
}

// While the dead-letter stream refuses writes (here: it is gone) a
// malformed event stays unacknowledged, however long it takes; once the
// stream is back, the event is dead-lettered exactly once. On e91b0a3 the
// server dropped it at MaxDeliver and the restored stream held 0.
func TestAdversaryDLQOutage(t *testing.T) {
	r := newRig(t, advConfig())
	dropped := gaveUp(t, r)
	ctx := context.Background()
	if err := r.js.DeleteStream(ctx, r.cfg.DLQStream); err != nil {
		t.Fatal(err)
	}
	r.startWorker("outage", nil)
	publishRaw(t, r, "a2a.task.status.outage", nil, "not a cloudevent: outage")

	// The outage outlasts the worker's MaxDeliver: one more delivery than
	// it, or the server's give-up.
	eventually(t, 60*time.Second, "deliveries beyond MaxDeliver during the outage", func() bool {
		return dropped.Load() > 0 || deliveries(t, r) > advMaxDeliver
	})
	if n := dropped.Load(); n > 0 {
		t.Logf("the server gave up on %d event(s) after %d deliveries, during the outage", n, deliveries(t, r))
	}
	if n := dlqCount(t, r); n != 0 {
		t.Fatalf("dead-letter stream holds %d messages during its outage", n)
	}
	if err := store.Provision(ctx, r.js, r.cfg); err != nil {
		t.Fatal(err)
	}
	// Once the server gave up, nothing is redelivered: a NAK delay (10 s on
	// e91b0a3) and some slack tell.
	wait := 90 * time.Second
	if dropped.Load() > 0 {
		wait = 15 * time.Second
	}
	eventually(t, wait, "the event dead-lettered after the outage", func() bool {
		return dlqCount(t, r) >= 1
	})
	r.drained(t, 20*time.Second)
	if n := dlqCount(t, r); n != 1 {
		t.Fatalf("dead-letter stream holds %d messages, want exactly 1", n)
	}
	if n := dropped.Load(); n != 0 {
		t.Errorf("the server gave up on %d event(s)", n)
	}
	m := dlqMsgs(t, r, 1)[0]
	if string(m.Data()) != "not a cloudevent: outage" {
		t.Errorf("dead letter = %q", m.Data())
	}
	t.Logf("%d deliveries; dead-letter stream: %d message", deliveries(t, r), dlqCount(t, r))
}

// A submission for task "victim" published on another task's or another
// kind's subject is dead-lettered as subject-mismatch and pins nothing. On
// e91b0a3 it was pinned as victim's from decoy's partition, out of reach of
// victim's per-task order and of replay's per-task filter.
func TestAdversarySubjectMismatch(t *testing.T) {
	r := newRig(t, testConfig())
	out := r.collect()
	r.startWorker("subjects", nil)
	ctx := context.Background()

	submission := func(taskID string) events.Submitted {
		return events.Submitted{TaskID: taskID, AgentURL: "https://hostile.example", SkillID: "s",
			Requires: events.Requires{Streaming: true}, Posture: detector.FailClosed, Card: []byte(hostileCard)}
	}
	cases := []struct{ name, taskID, subject string }{
		{"another kind and task (the issue's)", "victim", "a2a.task.error.decoy"},
		{"another task", "victim-2", "a2a.task.submitted.decoy"},
		{"another kind", "victim-3", "a2a.task.status.victim-3"},
		{"the raw id, not its token", "victim.4", "a2a.task.submitted.victim"},
	}
	for _, c := range cases {
		for _, mode := range []events.Mode{events.Binary, events.Structured} {
			m, err := events.Encode(events.Event{ID: c.taskID + "-" + mode.String(), Source: "urn:client:hostile", Data: submission(c.taskID)}, mode)
			if err != nil {
				t.Fatal(err)
			}
			m.Subject = c.subject
			if _, err := r.js.PublishMsg(ctx, m); err != nil {
				t.Fatalf("%s: publish: %v", c.name, err)
			}
		}
	}
	// A control on its own subject, behind them in decoy's partition.
	must(t, r.emit.Submitted(ctx, submission("decoy")))
	out.waitFor(t, "the control's pin", func(o *outbound) bool { return countBy(o, events.TypePinned)["decoy"] == 1 })
	r.drained(t, 20*time.Second)

	for _, c := range cases {
		if _, _, err := r.stores.Pins.Get(ctx, c.taskID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: task %q has a pin (err %v), from an event on %s", c.name, c.taskID, err, c.subject)
		}
		if n := countBy(out, events.TypePinned)[c.taskID]; n != 0 {
			t.Errorf("%s: %d card.pinned for %q", c.name, n, c.taskID)
		}
	}
	want := 2 * len(cases)
	n := dlqCount(t, r)
	if n != uint64(want) {
		t.Fatalf("dead-letter stream holds %d messages, want %d", n, want)
	}
	for _, m := range dlqMsgs(t, r, want) {
		if got := m.Headers().Get("Carddrift-Dead-Letter-Reason"); got != "subject-mismatch" || m.Subject() != "carddrift.dlq.subject-mismatch" {
			t.Errorf("dead letter on %s: reason %q (%s), want subject-mismatch", m.Subject(), got, m.Headers().Get("Carddrift-Error"))
		}
	}
}

// otherWrite is what the second writer records.
const otherWrite = "card.drift-written-by-another-worker"

// A pin written by someone else while an event was handled is re-read and
// the event applied again: neither write is lost. On e91b0a3 the worker's
// conflicting write passed as success: the schema-class error was
// acknowledged but never recorded, and the blind retry after it went
// unreported.
func TestAdversaryPinConflict(t *testing.T) {
	r := newRig(t, testConfig())
	out := r.collect()
	ctx := context.Background()
	// The first time the worker writes back task race's pin, another writer
	// updates it just before.
	pins := r.wt.SecondWriter(nil, "race", otherWrite)
	r.startWorker("racer", func(o *worker.Options) {
		pins.Pins = o.Pins
		o.Pins = pins
	})
	a := servicetest.NewAgent(t, writeupT0)
	must(t, r.emit.Submitted(ctx, events.Submitted{TaskID: "race", AgentURL: a.URL(), SkillID: "summarize",
		Requires: events.Requires{Streaming: true}, Posture: detector.FailClosed}))
	out.waitFor(t, "the pin", func(o *outbound) bool { return countBy(o, events.TypePinned)["race"] == 1 })

	pins.Arm()
	must(t, r.emit.Error(ctx, events.Error{TaskID: "race", AgentURL: a.URL(), Method: "message/send", Code: -32602, Message: "Invalid params"}))
	r.drained(t, 20*time.Second)
	if pins.Writes() != 1 {
		t.Fatalf("the second writer wrote %d times, want 1: the error's pin update never came", pins.Writes())
	}
	pin, _, err := r.stores.Pins.Get(ctx, "race")
	if err != nil {
		t.Fatal(err)
	}
	if pin.SchemaErrorAt.IsZero() || pin.SchemaErrorCode != -32602 {
		t.Errorf("pin lost the schema-class error (at %v, code %d): the conflicting write passed as success", pin.SchemaErrorAt, pin.SchemaErrorCode)
	}
	if !slices.Contains(pin.Reported, otherWrite) {
		t.Errorf("pin lost the other writer's update: reported %v", pin.Reported)
	}

	// What the lost update costs: the blind retry after the error.
	a.Set(writeupT40)
	must(t, r.emit.Request(ctx, events.Request{TaskID: "race", AgentURL: a.URL(), Method: "message/send", Attempt: 2}))
	r.drained(t, 20*time.Second)
	out.CaughtUp(t) // the card.drift the worker published before it acknowledged
	var rules []string
	for _, d := range out.drifts("race") {
		for _, f := range d.Findings {
			rules = append(rules, f.Rule)
		}
	}
	if !slices.Contains(rules, detector.RuleBlindRetry) {
		t.Errorf("the retry after the schema-class error: findings %v, want %s", rules, detector.RuleBlindRetry)
	}
}
