package fetcher_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"

	"github.com/carddrift/carddrift/store/fetcher"
)

// A worker observes an agent's card on every capability-dependent transition;
// within the agent's max-age no request is made.
func ExampleFetcher_ObserveAgent() {
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != fetcher.WellKnownPath {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("ETag", `"1.0"`)
		fmt.Fprint(w, `{"name":"Echo","version":"1.0","protocolVersion":"0.3","url":"https://echo.example/a2a",`+
			`"capabilities":{"streaming":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],`+
			`"skills":[{"id":"echo","name":"Echo","description":"echoes","tags":[]}]}`)
	}))
	defer agent.Close()

	f, err := fetcher.New(fetcher.Options{
		// httptest listens on loopback, which the SSRF guard refuses by default.
		Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
	})
	if err != nil {
		panic(err)
	}
	defer f.Close()

	ctx := context.Background()
	for range 2 {
		obs, err := f.ObserveAgent(ctx, agent.URL, "", false)
		if err != nil {
			panic(err)
		}
		fmt.Println(obs.Status, obs.FromLease, obs.MaxAge, obs.Card.Capabilities.Streaming)
	}
	// Output:
	// 200 false 1m0s true
	// 0 true 1m0s true
}

// Every failure is a *FetchError whose Reason is card.unreachable's reason.
func ExampleFetchError() {
	f, err := fetcher.New(fetcher.Options{}) // default guard
	if err != nil {
		panic(err)
	}
	defer f.Close()

	_, err = f.Observe(context.Background(), "http://169.254.169.254/latest/meta-data/", false)
	var fe *fetcher.FetchError
	if errors.As(err, &fe) {
		fmt.Println(fe.Reason, errors.Is(err, fetcher.ReasonRefusedAddress))
	}
	// Output:
	// refused-address true
}
