package cockpit

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/battyhq/batty/cockpit/tmuxtest"
)

// TestMain points tmux at a private temporary directory (TMUX_TMPDIR), so
// no test touches the user's tmux servers, and kills every server started
// there at the end.
func TestMain(m *testing.M) {
	if os.Getenv("COCKPIT_TEST_ROLE") == "relayout" {
		os.Exit(relayoutRole(os.Args[1:]))
	}
	os.Exit(tmuxtest.Isolated(m))
}

// relayoutRole is the test binary as the command of Spec.Relayout: args
// are the tmux binary, the socket, the session, the width and the height.
func relayoutRole(args []string) int {
	if len(args) != 5 {
		fmt.Fprintln(os.Stderr, "relayout role: want tmux socket session width height, got", args)
		return 2
	}
	var w, h int
	fmt.Sscan(args[3], &w)
	fmt.Sscan(args[4], &h)
	srv := Server{Run: ExecRunner{Bin: args[0], Socket: args[1]}}
	if err := srv.Relayout(context.Background(), args[2], Size{Width: w, Height: h}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// realServer returns a fresh private server for one test, killed at its
// end.
func realServer(t testing.TB) Server {
	t.Helper()
	srv := Server{Run: ExecRunner{Bin: tmuxtest.Need(t), Socket: SocketName(t.TempDir())}}
	t.Cleanup(func() { srv.Kill(context.Background()) })
	return srv
}

// countingRunner records every invocation and answers like tmux would for
// the commands the updater sends.
type countingRunner struct {
	mu    sync.Mutex
	calls [][]string
	// titles holds the last title set per pane.
	titles map[string]string
	set    chan struct{} // signalled after every invocation
	fail   func(args []string) error
}

func newCountingRunner() *countingRunner {
	return &countingRunner{titles: map[string]string{}, set: make(chan struct{}, 1)}
}

func (r *countingRunner) Run(_ context.Context, args ...string) (string, error) {
	r.mu.Lock()
	defer func() {
		r.mu.Unlock()
		select {
		case r.set <- struct{}{}:
		default:
		}
	}()
	r.calls = append(r.calls, args)
	if r.fail != nil {
		if err := r.fail(args); err != nil {
			return "", err
		}
	}
	if args[0] == "list-panes" {
		var b strings.Builder
		fmt.Fprintf(&b, "%%0\tfeed\t\n")
		for i := 1; i <= 20; i++ {
			fmt.Fprintf(&b, "%%%d\tagent\ta%d\n", i, i)
		}
		return b.String(), nil
	}
	for i := 0; i+3 < len(args); i++ {
		if args[i] == "select-pane" && args[i+1] == "-t" && args[i+3] == "-T" {
			r.titles[args[i+2]] = args[i+4]
		}
	}
	return "", nil
}

func (r *countingRunner) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

func (r *countingRunner) title(pane string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.titles[pane]
}

// waitUntil polls cond until it holds or the deadline passes: only where
// tmux gives no event to wait on.
func waitUntil(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, got := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; last: %s", what, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
