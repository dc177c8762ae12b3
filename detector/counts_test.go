package detector_test

import (
	"testing"

	"github.com/carddrift/carddrift/detector"
)

func TestCountsAdd(t *testing.T) {
	var c detector.Counts
	for _, a := range []detector.Action{detector.Abort, detector.Replan, detector.Replan, detector.Continue, "", "maybe"} {
		c.Add(a)
	}
	if want := (detector.Counts{Abort: 1, Replan: 2, Continue: 1}); c != want {
		t.Errorf("Counts after abort, replan×2, continue and two unknown actions = %+v, want %+v", c, want)
	}
}
