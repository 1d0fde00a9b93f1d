package console

import (
	"testing"
	"time"

	"github.com/battyhq/batty/control"
)

func TestNextRefresh(t *testing.T) {
	id := "m"
	busy := &control.Status{Agents: []control.AgentStatus{{Name: "a"}, {Name: "b", InFlight: &id}}}
	idle := &control.Status{Agents: []control.AgentStatus{{Name: "a"}}}
	for _, c := range []struct {
		st      *control.Status
		refresh time.Duration
		want    time.Duration
	}{
		{busy, 5 * time.Second, 5 * time.Second},
		{idle, 5 * time.Second, idleRefresh},
		{idle, time.Minute, time.Minute},
	} {
		if got := nextRefresh(c.st, c.refresh); got != c.want {
			t.Errorf("nextRefresh(%d agents, %s) = %s, want %s", len(c.st.Agents), c.refresh, got, c.want)
		}
	}
}

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
