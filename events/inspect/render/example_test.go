package render_test

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/carddrift/carddrift/events/inspect/render"
)

func Example() {
	at := time.Date(2026, 3, 1, 13, 4, 5, 678_000_000, time.FixedZone("CET", 3600))
	fmt.Println(render.Time(at), render.Clock(at), render.Time(time.Time{}))
	fmt.Println(render.ShortDigest("sha256:73529e50ff2359481bbbb8e03d9f5eaef50f1cbbc962094d2c76ca1fd838fd22"), render.ShortDigest(""))
	fmt.Println(render.OrDash(""), render.OrDash("s1"))
	fmt.Println(render.Color(0), render.Color(1), render.Color(10))
	// Output:
	// 2026-03-01T12:04:05.678Z 12:04:05 -
	// 73529e50ff23 -
	// - s1
	// #8ecae6 #ffb703 #8ecae6
}

func ExampleBuffered() {
	err := render.Buffered(os.Stdout, func(w io.Writer) {
		fmt.Fprintf(w, "%-6s %s\n", "AGENT", "STATE")
		fmt.Fprintf(w, "%-6s %s\n", "a", "ok")
	})
	fmt.Println(err)
	// Output:
	// AGENT  STATE
	// a      ok
	// <nil>
}
