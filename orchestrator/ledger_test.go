package orchestrator

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/usage"
)

// readLedger reads p's usage ledger, failing on a skipped line or a key
// written twice.
func readLedger(t *testing.T, p *testProject) usage.Data {
	t.Helper()
	d, err := usage.Read(p.layout, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Skips) > 0 || d.Duplicates > 0 {
		t.Fatalf("ledger: skipped %v, %d duplicate lines", d.Skips, d.Duplicates)
	}
	return d
}

// Every turn that ran — completed, or failed and retried — is in the
// ledger once, with the usage its turn_finished event told, and the
// ledger's totals are the sum of the turns'.
func TestLedgerHasEveryTurnOnce(t *testing.T) {
	p := newProjectWith(t, "max_attempts: 3\ntimeouts:\n  shutdown: 5s\n", "  - name: a\n")
	r := p.start(fastRetries)
	ids := []string{p.send("a", "human", "scenario:usage:300"), p.send("a", "human", "scenario:flaky:1"),
		p.send("a", "human", "scenario:usage:500"), p.send("a", "human", "hello")}
	for _, id := range ids {
		if st := r.finished(t, id); st != "completed" {
			t.Fatalf("%s: %s", id, st)
		}
	}
	d := readLedger(t, p)
	type key struct {
		id      string
		attempt int
	}
	var want usage.Tokens
	turns := map[key]int64{}
	r.mu.Lock()
	for _, e := range r.seen {
		tf, ok := e.Data.(eventlog.TurnFinished)
		if e.Type != eventlog.EvTurnFinished || !ok || tf.Failure == string(protocol.FailSpawn) {
			continue // codex never ran: no usage
		}
		turns[key{e.Message, tf.Attempt}] = tf.InputTokens
		want = want.Add(usage.Tokens{Input: tf.InputTokens, Output: tf.OutputTokens})
	}
	r.mu.Unlock()
	if len(d.Turns) != len(turns) || len(turns) != 5 {
		t.Fatalf("ledger has %d turns, the events %d; want 5 (the flaky message's two)", len(d.Turns), len(turns))
	}
	for _, tr := range d.Turns {
		in, ok := turns[key{tr.Message, tr.Attempt}]
		if !ok || in != tr.Tokens.Input {
			t.Errorf("ledger turn %s: input %d, the event's %d (%v)", tr.Key, tr.Tokens.Input, in, ok)
		}
		if tr.Agent != "a" || tr.Role != "a" || tr.Runtime != "exec" || tr.Status == "" || tr.Thread == "" {
			t.Errorf("ledger turn %+v", tr)
		}
	}
	if got := usage.Sum(d.Turns, time.Time{}, time.Time{}, nil); got.Input != want.Input || got.Output != want.Output {
		t.Fatalf("ledger total %+v, the turns' %+v", got, want)
	}
	if got := usage.Sum(d.Turns, time.Time{}, time.Time{}, func(t usage.Turn) bool { return t.Message == ids[0] }); got.Input != 300 {
		t.Fatalf("usage:300 counted %d input tokens", got.Input)
	}
	again := 0
	for _, tr := range d.Turns {
		if tr.Again {
			again++
			if tr.Message != ids[1] || tr.Attempt != 1 {
				t.Errorf("turn run again: %+v", tr)
			}
		}
	}
	if again != 1 {
		t.Fatalf("%d turns marked run again, want the flaky one's first", again)
	}
}

// The ledger across SIGKILLs of the daemon: a turn cut off by the kill
// reported no usage and is not counted, its rerun is; a turn whose usage
// is in the ledger but whose outcome could not be recorded before the kill
// (the inboxes' disk full) runs again and both runs are counted, each
// once; a kill between turns changes nothing. Every recorded outcome's
// turn is in the ledger, no key is written twice, and no turn's tokens are
// counted in the next one's.
func TestLedgerAcrossDaemonKills(t *testing.T) {
	p := newProject(t, "  - name: a\n")
	mountTmpfs(t, p.layout.Inboxes(), 1<<20)
	child := p.startChildDaemon("GORACE=" + os.Getenv("GORACE") + " atexit_sleep_ms=0")
	t.Cleanup(func() {
		if child.ProcessState == nil {
			child.Process.Kill()
			child.Wait()
		}
	})
	kill := func() {
		t.Helper()
		child.Process.Signal(syscall.SIGKILL)
		child.Wait()
	}
	restart := func() {
		t.Helper()
		child = p.startChildDaemon("GORACE=" + os.Getenv("GORACE") + " atexit_sleep_ms=0")
	}
	box := p.box("a")
	waitFor := func(what string, f func() bool) {
		t.Helper()
		deadline := time.Now().Add(waitLimit)
		for !f() {
			if time.Now().After(deadline) {
				t.Fatalf("no %s within %s", what, waitLimit)
			}
			time.Sleep(10 * time.Millisecond) // the daemon is another process: poll its files
		}
	}
	done := func(id string) func() bool {
		return func() bool { _, where, err := box.Get(id); return err == nil && where == inbox.StateDone }
	}

	// 1. Killed mid-turn.
	gate1 := filepath.Join(p.dir, "gate1")
	m1 := p.send("a", "human", "scenario:gate:"+gate1)
	waitFor("run of m1", func() bool { return p.deliveries(m1) == 1 })
	kill()
	restart()
	if err := os.WriteFile(gate1, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor("outcome of m1", done(m1))

	// 2. The usage appended, the outcome not recorded (a full disk), then
	// killed.
	gate2 := filepath.Join(p.dir, "gate2")
	m2 := p.send("a", "human", "scenario:gate:"+gate2)
	waitFor("run of m2", func() bool { return p.deliveries(m2) == 1 })
	filler := fill(t, p.layout.Inboxes())
	if err := os.WriteFile(gate2, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor("record_failed of m2", func() bool { return hasEvent(t, p, eventlog.EvRecordFailed, m2) })
	kill()
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	restart()
	waitFor("outcome of m2", done(m2))

	// 3. Killed between turns.
	m3 := p.send("a", "human", "scenario:usage:777")
	waitFor("outcome of m3", done(m3))
	kill()
	restart()
	m4 := p.send("a", "human", "scenario:usage:555")
	waitFor("outcome of m4", done(m4))
	if _, err := control.Call(p.layout, control.Request{Op: control.OpStop, Timeout: 5 * time.Second}, waitLimit); err != nil {
		t.Fatalf("stop the daemon: %v", err)
	}
	child.Wait()

	// No key written twice, even by the writer.
	lines := map[string]int{}
	for _, path := range ledgerFiles(t, p) {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var k struct{ Key string }
			if err := json.Unmarshal(sc.Bytes(), &k); err != nil {
				t.Fatalf("%s: %q: %v", path, sc.Text(), err)
			}
			lines[k.Key]++
		}
		f.Close()
	}
	for k, n := range lines {
		if n != 1 {
			t.Errorf("key %s written %d times", k, n)
		}
	}
	d := readLedger(t, p)
	entries := map[string][]usage.Turn{}
	for _, tr := range d.Turns {
		entries[tr.Message] = append(entries[tr.Message], tr)
	}
	want := map[string]struct {
		runs, entries int
		input         int64
	}{m1: {2, 1, 1000}, m2: {2, 2, 1000}, m3: {1, 1, 777}, m4: {1, 1, 555}}
	for id, w := range want {
		if n := p.deliveries(id); n != w.runs {
			t.Errorf("%s ran %d times, want %d", id, n, w.runs)
		}
		if len(entries[id]) != w.entries {
			t.Errorf("%s: %d ledger entries %+v, want %d", id, len(entries[id]), entries[id], w.entries)
		}
		for _, tr := range entries[id] {
			// Each run's own tokens: none of an earlier turn's.
			if tr.Tokens.Input != w.input {
				t.Errorf("%s attempt %d: %d input tokens, want %d", id, tr.Attempt, tr.Tokens.Input, w.input)
			}
		}
		m, _, err := box.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		if !slicesContainsAttempt(entries[id], m.Attempt) {
			t.Errorf("%s: the recorded attempt %d is not in the ledger", id, m.Attempt)
		}
	}
	if len(d.Turns) != 5 {
		t.Fatalf("ledger has %d turns, want 5", len(d.Turns))
	}
}

func slicesContainsAttempt(ts []usage.Turn, attempt int) bool {
	for _, t := range ts {
		if t.Attempt == attempt {
			return true
		}
	}
	return false
}

// ledgerFiles lists the files of p's usage ledger.
func ledgerFiles(t *testing.T, p *testProject) []string {
	t.Helper()
	es, err := os.ReadDir(p.layout.UsageDir())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, filepath.Join(p.layout.UsageDir(), e.Name()))
	}
	return out
}

// hasEvent reports whether p's events.jsonl holds an event of type typ for
// message id.
func hasEvent(t *testing.T, p *testProject, typ, id string) bool {
	t.Helper()
	b, err := os.ReadFile(p.layout.EventsLog())
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if e, err := eventlog.Decode([]byte(l)); err == nil && e.Type == typ && e.Message == id {
			return true
		}
	}
	return false
}

// A daemon killed after a turn's usage reached the ledger but before it
// saved the agent's state left the state's running total of the thread one
// turn behind: the next daemon takes it from the ledger, so the next
// turn's usage (the difference from the total) is its own, not its own
// plus the last turn's.
func TestLedgerThreadTotalAfterAStaleState(t *testing.T) {
	p := newProject(t, "  - name: a\n")
	r := p.start(nil)
	for _, body := range []string{"scenario:usage:300", "scenario:usage:400"} {
		if st := r.finished(t, p.send("a", "human", body)); st != "completed" {
			t.Fatalf("%s: %s", body, st)
		}
	}
	r.stop(t)
	// The state as it was after the first turn.
	path := p.layout.AgentState("a")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	st["thread_usage"] = map[string]any{"input": 300, "output": 100}
	if b, err = json.Marshal(st); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	r = p.start(nil)
	id := p.send("a", "human", "scenario:usage:555")
	if st := r.finished(t, id); st != "completed" {
		t.Fatalf("%s", st)
	}
	r.stop(t)
	d := readLedger(t, p)
	got := usage.Sum(d.Turns, time.Time{}, time.Time{}, func(t usage.Turn) bool { return t.Message == id })
	if got.Input != 555 || got.Output != 100 {
		t.Fatalf("the turn after the restart counted %+v, want 555 input, 100 output", got)
	}
}
