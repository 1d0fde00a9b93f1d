package console

import (
	"testing"

	"github.com/battyhq/batty/control"
)

// One rendering per status and key: the streams of one session share it;
// a new status renders again.
func TestRenderCache(t *testing.T) {
	var c renderCache
	renders := 0
	render := func() (string, error) { renders++; return "html", nil }
	st1, st2 := &control.Status{}, &control.Status{}
	for range 3 {
		if h, err := c.get(st1, "team\x00csrf", render); h != "html" || err != nil {
			t.Fatal(h, err)
		}
	}
	c.get(st1, "team\x00other", render)
	c.get(st2, "team\x00csrf", render)
	if renders != 3 {
		t.Fatalf("%d renderings, want 3", renders)
	}
}
