package cockpit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func agentNames(n int) []string {
	var out []string
	for i := 1; i <= n; i++ {
		out = append(out, fmt.Sprintf("a%d", i))
	}
	return out
}

func TestPlan(t *testing.T) {
	for _, tc := range []struct {
		n       int
		windows []string // name:agents:layout
	}{
		{1, []string{"team:1:even-horizontal"}},
		{2, []string{"team:2:main-vertical"}},
		{5, []string{"team:4:main-vertical", "agent 5:1:tiled"}},
		{20, []string{"team:4:main-vertical", "agents 5-10:6:tiled", "agents 11-16:6:tiled", "agents 17-20:4:tiled"}},
	} {
		plan := Plan(agentNames(tc.n))
		var got []string
		var all []string
		for i, w := range plan {
			got = append(got, fmt.Sprintf("%s:%d:%s", w.Name, len(w.Agents), w.Layout))
			if w.Feed != (i == 0) {
				t.Errorf("%d agents: window %d feed = %v", tc.n, i, w.Feed)
			}
			all = append(all, w.Agents...)
		}
		if !slices.Equal(got, tc.windows) {
			t.Errorf("Plan(%d) = %v, want %v", tc.n, got, tc.windows)
		}
		if !slices.Equal(all, agentNames(tc.n)) {
			t.Errorf("Plan(%d) places %v", tc.n, all)
		}
	}
}

// paneInfo lists the session's panes: window index, pane id, title, the
// agent option and the command running.
func paneInfo(t testing.TB, srv Server, session string) []string {
	t.Helper()
	out, err := srv.Run.Run(context.Background(), "list-panes", "-s", "-t", "="+session, "-F",
		"#{window_index}|#{pane_id}|#{pane_title}|#{@batty_pane}|#{@batty_agent}|#{pane_current_command}")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(out), "\n")
}

// TestCreateLayouts creates the session for 1, 2, 5 and 20 agents on a
// real private tmux server: every agent has its pane, titled with its name,
// in the planned window and order, and the feed pane comes first; also
// with a tmux.conf that numbers windows and panes from 1.
func TestCreateLayouts(t *testing.T) {
	srv := realServer(t)
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".tmux.conf"), []byte("set -g base-index 1\nsetw -g pane-base-index 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := srv.Run.(ExecRunner)
	r.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home)
	srv.Run = r
	for _, n := range []int{1, 2, 5, 20} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			session := fmt.Sprintf("t%d", n)
			agents := agentNames(n)
			sess, err := srv.Create(context.Background(), Spec{
				Session: session, Dir: t.TempDir(),
				Feed:     []string{"sleep", "600"},
				Agents:   agents,
				AgentCmd: func(a string) []string { return []string{"sh", "-c", "echo pane-of-" + a + "; exec sleep 600"} },
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(sess.Panes) != n || sess.Feed == "" {
				t.Fatalf("session %+v", sess)
			}
			lines := paneInfo(t, srv, session)
			if !strings.HasPrefix(lines[0], "1|") {
				t.Fatalf("the tmux.conf was not read: %q", lines[0])
			}
			if len(lines) != n+1 {
				t.Fatalf("%d panes, want %d: %q", len(lines), n+1, lines)
			}
			// Panes are listed window by window, in pane order: each
			// window holds the planned agents in team order, the feed
			// first in the first one.
			var got [][]string
			lastWindow := ""
			for _, l := range lines {
				f := strings.Split(l, "|")
				if f[0] != lastWindow {
					got, lastWindow = append(got, nil), f[0]
				}
				w := len(got) - 1
				if f[3] == "feed" {
					if w != 0 || len(got[w]) != 0 || f[1] != sess.Feed || f[2] != "orchestrator" {
						t.Errorf("feed pane %q", l)
					}
					continue
				}
				a := f[4]
				if f[1] != sess.Panes[a] || f[2] != a {
					t.Errorf("pane %q: want agent %s's pane, titled with its name", l, a)
				}
				got[w] = append(got[w], a)
			}
			plan := Plan(agents)
			if len(got) != len(plan) {
				t.Fatalf("%d windows, want %d: %q", len(got), len(plan), lines)
			}
			for i, w := range plan {
				if !slices.Equal(got[i], w.Agents) {
					t.Errorf("window %d holds %v, want %v", i, got[i], w.Agents)
				}
			}
			found, err := srv.Find(context.Background(), session)
			if err != nil || found.Feed != sess.Feed || len(found.Panes) != n {
				t.Fatalf("Find = %+v, %v", found, err)
			}
			last := agents[n-1]
			waitUntil(t, "the last agent's pane output", func() (bool, string) {
				out, _ := srv.Run.Run(context.Background(), "capture-pane", "-p", "-t", sess.Panes[last])
				return strings.Contains(out, "pane-of-"+last), out
			})
			if err := srv.KillSession(context.Background(), session); err != nil {
				t.Fatal(err)
			}
			if ok, err := srv.Has(context.Background(), session); ok || err != nil {
				t.Fatalf("session still there after KillSession: %v %v", ok, err)
			}
		})
	}
}

// TestServerStaysAndKill: the server outlives its last session (the team
// keeps its server while it runs), Kill removes it, and a second Kill is
// no error.
func TestServerStaysAndKill(t *testing.T) {
	srv := realServer(t)
	ctx := context.Background()
	spec := Spec{Session: "s", Feed: []string{"sleep", "600"}, Agents: []string{"a"}, AgentCmd: func(string) []string { return []string{"sleep", "600"} }}
	if _, err := srv.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	// A second Create replaces the session.
	if _, err := srv.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if err := srv.KillSession(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Run.Run(ctx, "list-sessions"); err != nil && NoServer(err) {
		t.Fatalf("server exited with its last session: %v", err)
	}
	socket, err := srv.Run.Run(ctx, "display-message", "-p", "#{socket_path}")
	if socket = strings.TrimSpace(socket); err != nil || socket == "" {
		t.Fatalf("socket path %q, %v", socket, err)
	}
	if err := srv.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(socket); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the socket %s is left behind (%v)", socket, err)
	}
	if err := srv.Kill(ctx); err != nil {
		t.Fatalf("second Kill: %v", err)
	}
	if ok, err := srv.Has(ctx, "s"); ok || err != nil {
		t.Fatalf("Has after Kill = %v, %v", ok, err)
	}
	// A session right after the server exited: Create copes.
	if _, err := srv.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
}

// TestCreateRetriesWhenTheServerExits: a session created just as the
// previous server exits fails with "server exited unexpectedly"; Create
// tries again.
func TestCreateRetriesWhenTheServerExits(t *testing.T) {
	r := newCountingRunner()
	failures := 2
	r.fail = func(args []string) error {
		if args[0] == "new-session" && failures > 0 {
			failures--
			return &Error{Args: args, Msg: "server exited unexpectedly", Err: errors.New("exit status 1")}
		}
		if args[0] == "has-session" {
			return &Error{Args: args, Msg: "no server running on /tmp/x", Err: errors.New("exit status 1")}
		}
		return nil
	}
	srv := Server{Run: paneIDs{r}}
	if _, err := srv.Create(context.Background(), Spec{Session: "s", Feed: []string{"x"}, Agents: []string{"a"}, AgentCmd: func(string) []string { return []string{"y"} }}); err != nil {
		t.Fatal(err)
	}
	if failures != 0 {
		t.Fatalf("%d failures left", failures)
	}
}

// paneIDs answers a creation command list with one pane id per pane.
type paneIDs struct{ r *countingRunner }

func (p paneIDs) Run(ctx context.Context, args ...string) (string, error) {
	out, err := p.r.Run(ctx, args...)
	if err != nil || (args[0] != "new-session") {
		return out, err
	}
	n := 0
	for _, a := range args {
		if a == "#{pane_id}" {
			n++
		}
	}
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%%%d\n", i)
	}
	return b.String(), nil
}
