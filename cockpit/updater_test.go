package cockpit

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// flipSource is a team of n agents whose state a test changes.
type flipSource struct {
	mu    sync.Mutex
	views []AgentView
}

func newFlipSource(n int) *flipSource {
	s := &flipSource{}
	for i := 1; i <= n; i++ {
		s.views = append(s.views, AgentView{Name: fmt.Sprintf("a%d", i), State: "idle"})
	}
	return s
}

func (s *flipSource) set(i int, f func(*AgentView)) {
	s.mu.Lock()
	f(&s.views[i])
	s.mu.Unlock()
}

func (s *flipSource) snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Snapshot{Feed: FeedView{Team: "t"}, Agents: append([]AgentView(nil), s.views...)}
}

// TestUpdaterBatchesABurst: 100 state changes in a burst cost a handful of
// tmux invocations, not one each, and the titles end as the last state.
func TestUpdaterBatchesABurst(t *testing.T) {
	r := newCountingRunner()
	src := newFlipSource(20)
	u := NewUpdater(Server{Run: r}, "s", src.snapshot, UpdaterOptions{MinGap: 50 * time.Millisecond, Refresh: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); u.Run(ctx) }()
	defer func() { cancel(); <-done }()
	waitTitle(t, r, "%1", "a1 · idle")
	before := r.count()
	for i := range 100 {
		src.set(i%20, func(v *AgentView) { v.Waiting = i/20 + 1 })
		u.Changed()
	}
	waitTitle(t, r, "%20", "a20 · idle · 5 waiting")
	waitTitle(t, r, "%1", "a1 · idle · 5 waiting")
	if n := r.count() - before; n > 3 {
		t.Fatalf("a burst of 100 changes cost %d tmux invocations, want at most 3", n)
	}
}

// TestUpdaterWritesOnlyChanges: a flush without a change costs nothing; a
// change of one agent sets one title; alerts reach every attached client.
func TestUpdaterWritesOnlyChanges(t *testing.T) {
	r := newCountingRunner()
	src := newFlipSource(3)
	u := NewUpdater(Server{Run: clients{r, "/dev/pts/7\n/dev/pts/9\n"}}, "s", src.snapshot, UpdaterOptions{})
	ctx := context.Background()
	u.Flush(ctx) // list-panes, then the titles
	n := r.count()
	u.Flush(ctx)
	if r.count() != n {
		t.Fatalf("a flush with nothing changed ran tmux: %q", r.calls[n:])
	}
	src.set(1, func(v *AgentView) { v.Busy, v.State, v.Working = true, "working", 3*time.Minute })
	u.Flush(ctx)
	last := strings.Join(r.calls[len(r.calls)-1], " ")
	if strings.Count(last, "select-pane") != 1 || !strings.Contains(last, "a2 · working 3m") {
		t.Fatalf("last invocation %q: want only a2's title", last)
	}
}

// TestShowAlertsOnEveryClient: alerts are shown, joined, on every attached
// client, in one invocation, with tmux's formats escaped.
func TestShowAlertsOnEveryClient(t *testing.T) {
	r := newCountingRunner()
	u := NewUpdater(Server{Run: clients{r, "/dev/pts/7\n/dev/pts/9\n"}}, "s", newFlipSource(1).snapshot, UpdaterOptions{})
	u.ShowAlerts(context.Background(), []string{"batty: b failed", "batty: quota #1;"})
	if len(r.calls) != 1 {
		t.Fatalf("invocations %q, want one", r.calls)
	}
	last := strings.Join(r.calls[0], " ")
	for _, c := range []string{"/dev/pts/7", "/dev/pts/9"} {
		if !strings.Contains(last, "display-message -c "+c+" -d 10000 batty: b failed | batty: quota ##1\\;") {
			t.Fatalf("invocation %q: no alert for %s", last, c)
		}
	}
}

// clients answers list-clients with a fixed list.
type clients struct {
	r    *countingRunner
	list string
}

func (c clients) Run(ctx context.Context, args ...string) (string, error) {
	if args[0] == "list-clients" {
		return c.list, nil
	}
	return c.r.Run(ctx, args...)
}

func waitTitle(t testing.TB, r *countingRunner, pane, want string) {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for r.title(pane) != want {
		select {
		case <-r.set:
		case <-deadline.C:
			t.Fatalf("pane %s title %q, want %q", pane, r.title(pane), want)
		}
	}
}

// TestTitlesFollowStateOnRealTmux: the updater changes the titles of a
// real session as the state changes.
func TestTitlesFollowStateOnRealTmux(t *testing.T) {
	srv := realServer(t)
	ctx := context.Background()
	src := newFlipSource(3)
	sess, err := srv.Create(ctx, Spec{Session: "s", Feed: []string{"sleep", "600"}, Agents: []string{"a1", "a2", "a3"},
		AgentCmd: func(string) []string { return []string{"sleep", "600"} }})
	if err != nil {
		t.Fatal(err)
	}
	u := NewUpdater(srv, "s", src.snapshot, UpdaterOptions{MinGap: 10 * time.Millisecond})
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); u.Run(runCtx) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	defer stop()
	title := func(pane string) string {
		out, _ := srv.Run.Run(ctx, "display-message", "-p", "-t", pane, "#{pane_title}")
		return strings.TrimSpace(out)
	}
	waitUntil(t, "the first titles", func() (bool, string) {
		got := title(sess.Panes["a2"])
		return got == "a2 · idle", got
	})
	if got := title(sess.Feed); got != "orchestrator · t · dispatch running" {
		t.Errorf("feed title %q", got)
	}
	src.set(1, func(v *AgentView) { v.State, v.Busy, v.Working, v.Waiting = "working", true, 2*time.Minute, 3 })
	u.Changed()
	waitUntil(t, "a2 working", func() (bool, string) {
		got := title(sess.Panes["a2"])
		return got == "a2 · working 2m · 3 waiting", got
	})
	src.set(2, func(v *AgentView) { v.State = "failed" })
	u.Changed()
	waitUntil(t, "a3 failed", func() (bool, string) {
		got := title(sess.Panes["a3"])
		return got == "a3 · failed", got
	})
	// The session killed under the updater: it notes it and carries on.
	stop()
	if err := srv.KillSession(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	src.set(0, func(v *AgentView) { v.State = "failed" })
	u.Flush(ctx)
	if u.panes != nil {
		t.Fatal("the updater still holds the panes of a killed session")
	}
}

// BenchmarkTitleBatch measures one flush that changes the titles of 20
// agents against a real private server: batched, one tmux invocation; for
// comparison, one invocation per title.
func BenchmarkTitleBatch(b *testing.B) {
	srv := realServer(b)
	ctx := context.Background()
	sess, err := srv.Create(ctx, Spec{Session: "s", Feed: []string{"sleep", "600"}, Agents: agentNames(20),
		AgentCmd: func(string) []string { return []string{"sleep", "600"} }})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("batched", func(b *testing.B) {
		src := newFlipSource(20)
		var calls atomic.Int64
		u := NewUpdater(Server{Run: countCalls{srv.Run, &calls}}, "s", src.snapshot, UpdaterOptions{})
		u.Flush(ctx)
		calls.Store(0)
		b.ResetTimer()
		for i := range b.N {
			for a := range 20 {
				src.set(a, func(v *AgentView) { v.Waiting = i%2 + 1 })
			}
			u.Flush(ctx)
		}
		b.ReportMetric(float64(calls.Load())/float64(b.N), "tmux-calls/op")
	})
	b.Run("one-call-per-title", func(b *testing.B) {
		for i := range b.N {
			for _, a := range agentNames(20) {
				if _, err := srv.Run.Run(ctx, "select-pane", "-t", sess.Panes[a], "-T", fmt.Sprintf("%s · idle · %d waiting", a, i%2+1)); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(20, "tmux-calls/op")
	})
}

type countCalls struct {
	r Runner
	n *atomic.Int64
}

func (c countCalls) Run(ctx context.Context, args ...string) (string, error) {
	c.n.Add(1)
	return c.r.Run(ctx, args...)
}

// TestAlertIsCleaned: an alert quotes an agent's error; what reaches the
// attached clients is one line without escape sequences or bidirectional
// controls.
func TestAlertIsCleaned(t *testing.T) {
	r := newCountingRunner()
	u := NewUpdater(Server{Run: clients{r, "/dev/pts/1\n"}}, "s", newFlipSource(1).snapshot, UpdaterOptions{})
	u.ShowAlerts(context.Background(), []string{"batty: a failed: \x1b]52;c;Y3VybA==\x07boom\r\n\x1b]0;title\x07\u202eevil\x08"})
	got := r.calls[len(r.calls)-1]
	if want := tmuxArg(`batty: a failed: boom \u202eevil\x08`); got[len(got)-1] != want {
		t.Fatalf("alert %q, want %q", got[len(got)-1], want)
	}
}
