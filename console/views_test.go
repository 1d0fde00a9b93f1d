package console

import (
	"strings"
	"testing"

	"github.com/battyhq/batty/control"
)

// The team page shows, next to an idle agent's state, why it starts no
// turn with messages waiting, as plain text.
func TestTeamPageShowsWhyAnAgentWaits(t *testing.T) {
	ts, _, fb := newConsole(t)
	fb.set(func(st *control.Status) {
		st.Agents[0].Backlog = 2
		st.Agents[0].Waiting = &control.WaitingStatus{Reason: control.WaitDispatchPaused, Detail: "the team is paused: " + hostile}
	})
	c := logIn(t, ts)
	_, body := get(t, ts, "/", c)
	if !strings.Contains(body, `<div class="why waiting">waiting: the team is paused: &lt;script&gt;alert(1)&lt;/script&gt;`) {
		t.Fatalf("the team page does not say why eng waits:\n%s", body)
	}
	for _, bad := range []string{"<script>alert", "\x1b", "\x07"} {
		if strings.Contains(body, bad) {
			t.Errorf("the page holds %q", bad)
		}
	}
	fb.set(func(st *control.Status) { st.Agents[0].Waiting = nil })
	if _, body := get(t, ts, "/", c); strings.Contains(body, "waiting:") {
		t.Fatalf("an agent that does not wait shows a reason:\n%s", body)
	}
}
