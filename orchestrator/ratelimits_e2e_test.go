package orchestrator

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
)

// With the app-server runtime, the real CLI reports the account's
// rate-limit use (from the provider's x-codex-primary-* headers): status
// shows how much of the window is used and when it resets, and crossing
// quota.warn_pct raises one quota_warning alert, not one per turn.
func TestE2ERateLimitsInStatusAndOneWarning(t *testing.T) {
	srv := codextest.NewServer(t)
	home := srv.WriteHome(t)
	reset := time.Now().Add(3 * time.Hour).Truncate(time.Second)
	var mu sync.Mutex
	used := 40
	srv.Handle(func(req codextest.Request) codextest.Reply {
		mu.Lock()
		pct := used
		mu.Unlock()
		r := srv.Scripted(req)
		r.Header = http.Header{}
		r.Header.Set("x-codex-primary-used-percent", strconv.Itoa(pct))
		r.Header.Set("x-codex-primary-window-minutes", "300")
		r.Header.Set("x-codex-primary-reset-at", strconv.FormatInt(reset.Unix(), 10))
		return r
	})
	p := newRealProject(t, home, "quota:\n  warn_pct: 80\ntimeouts:\n  shutdown: 5s\n", "  - name: eng\n    codex:\n      runtime: app-server\n")
	r := p.start(noJitter)

	turn := func(pct int, body string) {
		t.Helper()
		mu.Lock()
		used = pct
		mu.Unlock()
		id := p.send("eng", "human", body)
		if st := r.finished(t, id); st != "completed" {
			t.Fatalf("%s: %s", id, st)
		}
	}
	// The snapshot comes with the turn's response; wait for it in status.
	usedNow := func(want float64) control.AccountStatus {
		t.Helper()
		var acc control.AccountStatus
		waitFor(t, "the snapshot in status", func() bool {
			acc = accountOf(t, call(t, p, control.Request{Op: control.OpStatus}).Status, "eng")
			return acc.RateLimits != nil && len(acc.RateLimits.Windows) > 0 && acc.RateLimits.Windows[0].UsedPct == want
		})
		return acc
	}
	turn(40, "first [[mock:reply ONE]]")
	acc := usedNow(40)
	w := acc.RateLimits.Windows[0]
	if w.Name != "primary" || w.WindowMinutes != 300 || w.ResetsAt == nil || !w.ResetsAt.Equal(reset) {
		t.Fatalf("window %+v, want primary, 300 min, resets at %s", w, reset)
	}
	if n := r.count(eventlog.EvQuotaWarning, ""); n != 0 {
		t.Fatalf("%d warnings at 40%%", n)
	}
	turn(85, "second [[mock:reply TWO]]")
	usedNow(85)
	warn := r.waitEvent(t, "the warning", func(e eventlog.Event) bool { return e.Type == eventlog.EvQuotaWarning })
	if !strings.Contains(warn.Detail, "85% of its 5h rate-limit window") {
		t.Fatalf("warning %+v", warn)
	}
	if a, ok := eventlog.AlertFor(warn); !ok || a.Kind != eventlog.AlertQuotaWarning {
		t.Fatalf("the warning is not an alert: %+v", a)
	}
	turn(92, "third [[mock:reply THREE]]")
	usedNow(92)
	if n := r.count(eventlog.EvQuotaWarning, ""); n != 1 {
		t.Fatalf("%d warnings, want 1", n)
	}
}
