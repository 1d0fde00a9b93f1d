package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/project/projecttest"
)

// TestE2EAccountsAsAUserSeesThem walks accounts the way a user meets them,
// through the real batty binary and the real Codex CLI (app-server
// runtime): the work account reports 85% of its window used (one
// quota_warning alert at warn_pct 80), then runs out; the agent goes on on
// spare with its conversation (one account_switched alert), `batty status`
// shows who runs where, each account's state and its rate-limit use, and
// the human's inbox has every answer once.
func TestE2EAccountsAsAUserSeesThem(t *testing.T) {
	codexBin := codextest.Codex(t)
	work, spare := codextest.NewServer(t), codextest.NewServer(t)
	homeWork, homeSpare := work.WriteHome(t), spare.WriteHome(t)
	reset := time.Now().Add(2 * time.Hour).Truncate(time.Second)
	var mu sync.Mutex
	turns := 0
	work.Handle(func(req codextest.Request) codextest.Reply {
		mu.Lock()
		defer mu.Unlock()
		if turns > 0 {
			return codextest.QuotaHeadersReply(reset)
		}
		turns++
		r := work.Scripted(req)
		r.Header = http.Header{}
		r.Header.Set("x-codex-primary-used-percent", "85")
		r.Header.Set("x-codex-primary-window-minutes", "300")
		r.Header.Set("x-codex-primary-reset-at", strconv.FormatInt(reset.Unix(), 10))
		return r
	})
	r := newTeamRun(t, "e2e-acc")
	alerts := filepath.Join(r.dir, "alerts.log")
	script := filepath.Join(projecttest.TempProgramDir(t), "alert.sh") // outside the project the agents may write
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"$BATTY_ALERT_KIND\" >> "+alerts+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	team := fmt.Sprintf(`name: rotate
codex:
  bin: %s
  sandbox: danger-full-access
  runtime: app-server
on_alert: [%s]
quota:
  warn_pct: 80
accounts:
  - name: work
    codex_home: %s
  - name: spare
    codex_home: %s
roles:
  - name: eng
    accounts: [work, spare]
`, codexBin, script, homeWork, homeSpare)
	r.writeTeam(team)
	r.must("validate")
	r.must("start")
	r.must("send", "eng", "remember OSPREY [[mock:reply NOTED]]")
	r.waitStatus("the first turn", func(st control.Status) bool { return agentStatus(st, "eng").TurnsCompleted == 1 })
	r.must("send", "eng", "which bird? [[mock:reply OSPREY]]")
	st := r.waitStatus("the second turn, on spare", func(st control.Status) bool {
		e := agentStatus(st, "eng")
		return e.TurnsCompleted == 2 && e.Account == "spare"
	})
	var workAcc control.AccountStatus
	for _, a := range st.Accounts {
		if a.Name == "work" {
			workAcc = a
		}
	}
	if !workAcc.Paused || workAcc.ResumeAt == nil || workAcc.RateLimits == nil || workAcc.RateLimits.Windows[0].UsedPct < 85 {
		t.Fatalf("work in status: %+v", workAcc)
	}
	if got := workAcc.ResumeAt.Sub(reset); got < 0 || got > time.Minute {
		t.Fatalf("work resumes at %s, want its reset %s (from the rate-limit snapshot)", workAcc.ResumeAt, reset)
	}
	text := r.must("status")
	t.Logf("batty status:\n%s", text)
	for _, want := range []string{"ACCOUNT", "RATE LIMITS USED", "spare", "eng", "usage limit until", "5h "} {
		if !strings.Contains(text, want) {
			t.Errorf("status lacks %q:\n%s", want, text)
		}
	}
	reqs := spare.Requests()
	if len(reqs) != 1 || !strings.Contains(strings.Join(reqs[0].InputTexts, "\n"), "remember OSPREY") {
		t.Fatalf("spare's request does not carry the first turn (%d requests)", len(reqs))
	}
	inbox := r.must("inbox", "--json")
	if strings.Count(inbox, "NOTED") != 1 || strings.Count(inbox, "OSPREY\"") < 1 {
		t.Fatalf("the human's inbox:\n%s", inbox)
	}
	r.must("stop", "--timeout", "5s")
	b, _ := os.ReadFile(alerts)
	kinds := strings.Fields(string(b))
	if strings.Join(kinds, ",") != "quota_warning,account_switched" {
		t.Fatalf("alerts %q, want one quota_warning and one account_switched", kinds)
	}
}
