package main

import (
	"context"
	"fmt"
	"github.com/battyhq/batty/cockpit/tmuxtest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/battyhq/batty/cockpit"
)

// outerTmux returns a second private tmux server playing the user's
// terminal (and, for a nested attach, the user's own tmux): its panes run
// batty (this test binary) in dir, without a status line, so that a pane
// is a terminal of exactly the window's size.
func outerTmux(t *testing.T, bin, dir string) cockpit.Server {
	t.Helper()
	outer := cockpit.Server{Run: cockpit.ExecRunner{Bin: bin, Socket: cockpit.SocketName(t.TempDir()),
		Env: battyCommand(t, dir, []string{"TERM=xterm-256color"}).Env}}
	t.Cleanup(func() { outer.Kill(context.Background()) })
	return outer
}

// TestCockpitUnderRealHands attaches a real terminal of 80×24 to the
// cockpit of a team of three: the panes are laid out for it (each at least
// 60×8, in more windows), the status line says how to detach and move, no
// startup notice is left in the panes, a Ctrl-C typed into the feed pane
// leaves the feed running and says how to leave, and resized to 200×50
// the terminal gets every pane in one window again. From inside tmux,
// attach opens the cockpit with the prefix C-a; C-a d comes back to the
// user's pane and leaves the team's session.
func TestCockpitUnderRealHands(t *testing.T) {
	bin := tmuxtest.Need(t)
	dir := fakeTeam(t, "hands", 3)
	mustBatty(t, dir, "start")
	defer runBattyIn(t, dir, nil, "", "stop")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	srv := cockpit.Server{Run: cockpit.ExecRunner{Bin: bin, Socket: cockpit.SocketName(dir)}}
	sess, err := srv.Find(ctx, "hands")
	if err != nil {
		t.Fatal(err)
	}
	agents := []string{"eng-1", "eng-2", "eng-3"}
	query := func(s cockpit.Server, args ...string) string {
		out, _ := s.Run.Run(ctx, args...)
		return strings.TrimSpace(out)
	}
	panes := func() string {
		return query(srv, "list-panes", "-s", "-t", "=hands", "-F", "#{window_index}|#{pane_width}x#{pane_height}|#{pane_dead}")
	}
	readable := func(term cockpit.Size) func(string) bool {
		return func(s string) bool {
			windows := map[string]bool{}
			lines := strings.Split(s, "\n")
			for _, l := range lines {
				f := strings.Split(l, "|")
				var w, h int
				fmt.Sscanf(f[1], "%dx%d", &w, &h)
				if w < cockpit.MinPaneWidth || h < cockpit.MinPaneHeight || f[2] != "0" {
					return false
				}
				windows[f[0]] = true
			}
			return len(lines) == 4 && len(windows) == len(cockpit.PlanFor(agents, term))
		}
	}

	outer := outerTmux(t, bin, dir)
	if _, err := outer.Run.Run(ctx, "new-session", "-d", "-s", "term", "-x", "80", "-y", "24", "-c", dir,
		"env", "-u", "TMUX", self, "attach", ";", "set-option", "-g", "status", "off"); err != nil {
		t.Fatal(err)
	}
	pollTmux(t, "a readable layout at 80×24", panes, readable(cockpit.Size{Width: 80, Height: 24}))
	screen := func() string { return query(outer, "capture-pane", "-p", "-t", "=term:") }
	got := pollTmux(t, "the status hint", screen, func(s string) bool { return strings.Contains(s, "C-b d: detach") })
	if !strings.Contains(got, "C-b o: next pane") {
		t.Fatalf("the status line does not say how to move between agents:\n%s", got)
	}
	for _, p := range append([]string{sess.Feed}, sess.Panes["eng-1"], sess.Panes["eng-3"]) {
		if out := query(srv, "capture-pane", "-p", "-J", "-t", p); strings.Contains(out, "waiting for /") || strings.Contains(out, dir) {
			t.Fatalf("startup noise left in pane %s:\n%s", p, out)
		}
	}

	// A Ctrl-C at the terminal reaches the active pane, the feed.
	if active := query(srv, "display-message", "-p", "-t", "=hands:", "#{pane_id}"); active != sess.Feed {
		t.Fatalf("the active pane is %s, not the feed %s", active, sess.Feed)
	}
	pid := query(srv, "display-message", "-p", "-t", sess.Feed, "#{pane_pid}")
	if _, err := outer.Run.Run(ctx, "send-keys", "-t", "=term:", "C-c"); err != nil {
		t.Fatal(err)
	}
	pollTmux(t, "the Ctrl-C note", screen, func(s string) bool {
		return strings.Contains(s, "Ctrl-C does not stop the team: C-b d detaches, batty stop stops it")
	})
	if got := query(srv, "display-message", "-p", "-t", sess.Feed, "#{pane_dead}|#{pane_pid}"); got != "0|"+pid {
		t.Fatalf("the feed after a Ctrl-C: %s, want 0|%s", got, pid)
	}
	pollTmux(t, "the feed's lines", func() string { return query(srv, "capture-pane", "-p", "-t", sess.Feed) },
		func(s string) bool { return strings.Contains(s, "team hands started") })

	if _, err := outer.Run.Run(ctx, "resize-window", "-t", "=term:", "-x", "200", "-y", "50"); err != nil {
		t.Fatal(err)
	}
	pollTmux(t, "one window at 200×50", panes, func(s string) bool {
		return readable(cockpit.Size{Width: 200, Height: 50})(s) && strings.HasPrefix(s, "0|80x")
	})

	// From inside tmux (the outer server's pane has $TMUX).
	// The line saying how to get back goes to stderr, kept in a file here:
	// on the screen the nested client draws over it at once (its status
	// line says the same).
	hint := filepath.Join(t.TempDir(), "hint")
	if _, err := outer.Run.Run(ctx, "new-window", "-t", "=term:", "-c", dir, "sh", "-c", self+" attach 2>"+hint+"; echo ATTACH-RETURNED; exec sleep 600"); err != nil {
		t.Fatal(err)
	}
	grouped := pollTmux(t, "the nested client's session", func() string {
		return query(srv, "list-clients", "-F", "#{session_name}|#{session_group}|#{prefix}")
	}, func(s string) bool { return strings.Contains(s, "|hands|C-a") })
	nested := ""
	for _, l := range strings.Split(grouped, "\n") {
		if strings.HasSuffix(l, "|hands|C-a") {
			nested = strings.Split(l, "|")[0]
		}
	}
	if _, err := outer.Run.Run(ctx, "send-keys", "-t", "=term:{end}", "C-a", "d"); err != nil {
		t.Fatal(err)
	}
	pollTmux(t, "back in the user's pane", func() string { return query(outer, "capture-pane", "-p", "-t", "=term:{end}") },
		func(s string) bool { return strings.Contains(s, "ATTACH-RETURNED") })
	if said, _ := os.ReadFile(hint); !strings.Contains(string(said), "detach with C-a d") {
		t.Fatalf("attach from inside tmux did not say how to get back: %q", said)
	}
	if ok, _ := srv.Has(ctx, nested); ok {
		t.Fatalf("the nested client's session %q outlived its detach", nested)
	}
	if ok, err := srv.Has(ctx, "hands"); !ok {
		ls, lerr := srv.Run.Run(ctx, "list-sessions")
		t.Fatalf("the team's session went with the nested client (%v); sessions: %q %v", err, ls, lerr)
	}
}
