package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/usage"
)

// The real Codex CLI on both runtimes against the mock Responses API,
// which reports its own usage for every request (and, to the app-server
// agent, the account's rate-limit window): after the turns, `batty usage`
// with the team stopped counts exactly the tokens the model reported, per
// agent, and `batty usage --limits` the window's last used percent and its
// reset time.
func TestE2EUsageLedgerWithRealCodex(t *testing.T) {
	codexBin := codextest.Codex(t)
	srv := codextest.NewServer(t)
	home := srv.WriteHome(t)
	reset := time.Now().Add(4 * time.Hour).Truncate(time.Second)
	var (
		mu      sync.Mutex
		in, out int64
		n       int
	)
	srv.Handle(func(req codextest.Request) codextest.Reply {
		r := srv.Scripted(req)
		mu.Lock()
		defer mu.Unlock()
		n++
		r.InputTokens, r.OutputTokens = 1000+7*n, 20+n
		in += int64(r.InputTokens)
		out += int64(r.OutputTokens)
		r.Header = http.Header{}
		r.Header.Set("x-codex-primary-used-percent", strconv.Itoa(10*n))
		r.Header.Set("x-codex-primary-window-minutes", "300")
		r.Header.Set("x-codex-primary-reset-at", strconv.FormatInt(reset.Unix(), 10))
		return r
	})
	r := newTeamRun(t, "e2e-usage")
	team := fmt.Sprintf(`name: e2e-usage
codex:
  bin: %s
  codex_home: %s
  sandbox: danger-full-access
pricing:
  gpt-5: {input: 1, cached_input: 0.1, output: 10}
roles:
  - name: eng
  - name: warm
    codex:
      runtime: app-server
`, codexBin, home)
	r.writeTeam(team)
	r.must("start")
	const turns = 3
	for i := range turns {
		r.must("send", "eng", fmt.Sprintf("exec turn %d [[mock:reply E%d]]", i, i))
		r.must("send", "warm", fmt.Sprintf("warm turn %d [[mock:reply W%d]]", i, i))
	}
	r.waitStatus("every turn", func(st control.Status) bool {
		e, w := agentStatus(st, "eng"), agentStatus(st, "warm")
		return e.TurnsCompleted == turns && w.TurnsCompleted == turns && e.State == "idle" && w.State == "idle"
	})
	r.must("stop", "--timeout", "5s")

	var got struct {
		Rows  []usage.Row `json:"rows"`
		Total usage.Row   `json:"total"`
	}
	if err := json.Unmarshal([]byte(r.must("usage", "--by", "agent", "--json")), &got); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	wantIn, wantOut := in, out
	mu.Unlock()
	if got.Total.Turns != 2*turns || got.Total.Tokens.Input != wantIn || got.Total.Tokens.Output != wantOut {
		t.Fatalf("ledger total %+v; the model reported %d turns' %d input, %d output tokens", got.Total, 2*turns, wantIn, wantOut)
	}
	if len(got.Rows) != 2 || got.Rows[0].Turns != turns || got.Rows[1].Turns != turns {
		t.Fatalf("rows %+v", got.Rows)
	}
	// No model is named in team.yaml: nothing is priced, nothing guessed.
	if got.Total.Cost == nil || *got.Total.Cost != 0 || got.Total.Unpriced != 2*turns {
		t.Fatalf("cost %+v", got.Total)
	}

	var lim struct {
		Limits []usage.LimitRow `json:"limits"`
	}
	if err := json.Unmarshal([]byte(r.must("usage", "--limits", "--json")), &lim); err != nil {
		t.Fatal(err)
	}
	if len(lim.Limits) != 1 || lim.Limits[0].Window != "primary" || lim.Limits[0].WindowMinutes != 300 ||
		lim.Limits[0].ResetsAt == nil || !lim.Limits[0].ResetsAt.Equal(reset) || len(lim.Limits[0].Samples) < 2 || lim.Limits[0].UsedPct < 20 {
		t.Fatalf("limits %+v", lim.Limits)
	}
}
