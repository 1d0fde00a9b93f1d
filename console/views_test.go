package console

import (
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/control"
)

func TestTokensAndAge(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1.0k", 12345: "12.3k", 4_500_000: "4.5M"} {
		if got := tokens(n); got != want {
			t.Errorf("tokens(%d) = %q, want %q", n, got, want)
		}
	}
	for d, want := range map[time.Duration]string{0: "0s", 42 * time.Second: "42s", 185 * time.Second: "3m05s", 2*time.Hour + 7*time.Minute + 9*time.Second: "2h07m"} {
		if got := age(d); got != want {
			t.Errorf("age(%s) = %q, want %q", d, got, want)
		}
	}
}

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
