package main

import (
	"context"
	"fmt"
	"github.com/battyhq/batty/cockpit/tmuxtest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/cockpit"
	"github.com/battyhq/batty/codex/codextest"
)

// TestE2EDemoCtrlCInTheCockpit runs `batty demo` in a real terminal (a
// pane of a tmux server of the test) where it opens its cockpit; a Ctrl-C
// typed there, whichever pane has the focus, stops the demo as it would in
// a plain terminal: it says so, leaves no process and no scratch project,
// and no raw "[server exited]" line of tmux on the terminal.
func TestE2EDemoCtrlCInTheCockpit(t *testing.T) {
	bin := tmuxtest.Need(t)
	codexBin := codextest.Codex(t)
	tmp, mark := t.TempDir(), fmt.Sprintf("e2e-demo-cc-%d", time.Now().UnixNano())
	exe := buildBatty(t)
	ctx := context.Background()
	outer := demoTerminalServer(t, bin, mark)
	// Only the demo is marked, not the terminal.
	shell := fmt.Sprintf("env -u TMUX TMPDIR=%s %s=%s %s demo --pace 500ms --timeout 2m --codex-bin %s; echo DEMO-EXIT=$?; exec sleep 600",
		tmp, codextest.MarkEnv, mark, exe, codexBin)
	screen := terminalRunning(ctx, t, outer, shell)
	// The demo's cockpit has a client: the terminal.
	pollTmux(t, "the demo's cockpit on the terminal", func() string {
		dirs := demoDirs(t, tmp)
		if len(dirs) != 1 {
			return fmt.Sprint(dirs, screen())
		}
		inner := cockpit.ExecRunner{Bin: bin, Socket: cockpit.SocketName(dirs[0])}
		out, _ := inner.Run(ctx, "list-clients", "-F", "#{client_name}")
		return out
	}, func(s string) bool { return strings.HasPrefix(s, "/dev/") })
	pollTmux(t, "the demo's status hint", screen, func(s string) bool { return strings.Contains(s, "Ctrl-C: stop the demo") })

	if _, err := outer.Run.Run(ctx, "send-keys", "-t", "=term:", "C-c"); err != nil {
		t.Fatal(err)
	}
	got := pollTmux(t, "the demo's end", screen, func(s string) bool { return strings.Contains(s, "DEMO-EXIT=") })
	if !strings.Contains(got, "DEMO-EXIT=1") || !strings.Contains(got, "Interrupted: stopping the team") || !strings.Contains(got, "everything it started is stopped") {
		t.Fatalf("the demo after Ctrl-C in its cockpit:\n%s", got)
	}
	if strings.Contains(got, "[server exited]") || strings.Contains(got, "[exited]") {
		t.Fatalf("tmux's exit line is on the terminal:\n%s", got)
	}
	codextest.AssertNoMarked(t, mark)
	if dirs := demoDirs(t, tmp); len(dirs) != 0 {
		t.Errorf("the demo project was left behind: %q", dirs)
	}
}

// TestE2EDemoInsideTmux runs `batty demo` in a pane of the user's own tmux
// ($TMUX set, as for anyone who lives in tmux): the demo's cockpit opens
// there as `batty attach` typed in that pane opens it, nested with a
// prefix of its own — a client of the demo's tmux server on a session
// grouped with the team's — never failing into the plain feed ("tmux
// attach: exit status 1"); a Ctrl-C stops it and leaves nothing behind.
func TestE2EDemoInsideTmux(t *testing.T) {
	bin := tmuxtest.Need(t)
	codexBin := codextest.Codex(t)
	tmp, mark := t.TempDir(), fmt.Sprintf("e2e-demo-tmux-%d", time.Now().UnixNano())
	exe := buildBatty(t)
	ctx := context.Background()
	outer := demoTerminalServer(t, bin, mark)
	// The pane's shell keeps the $TMUX its tmux gives it.
	shell := fmt.Sprintf(`test -n "$TMUX" || echo NO-TMUX; TMPDIR=%s %s=%s %s demo --pace 500ms --timeout 2m --codex-bin %s; echo DEMO-EXIT=$?; exec sleep 600`,
		tmp, codextest.MarkEnv, mark, exe, codexBin)
	screen := terminalRunning(ctx, t, outer, shell)
	// The demo's cockpit has a client in the pane, on the nested session.
	pollTmux(t, "the demo's nested cockpit in the pane", func() string {
		dirs := demoDirs(t, tmp)
		if len(dirs) != 1 {
			return fmt.Sprint(dirs, screen())
		}
		inner := cockpit.ExecRunner{Bin: bin, Socket: cockpit.SocketName(dirs[0])}
		out, _ := inner.Run(ctx, "list-clients", "-F", "#{client_name} #{session_name}")
		return out + "\n" + screen()
	}, func(s string) bool {
		if strings.Contains(s, "tmux attach: exit status") || strings.Contains(s, "NO-TMUX") {
			t.Fatalf("the demo's cockpit did not open in the tmux pane:\n%s", s)
		}
		return strings.HasPrefix(s, "/dev/") && strings.Contains(s, " batty-demo-nested-")
	})
	pollTmux(t, "the demo's status hint", screen, func(s string) bool { return strings.Contains(s, "Ctrl-C: stop the demo") })

	if _, err := outer.Run.Run(ctx, "send-keys", "-t", "=term:", "C-c"); err != nil {
		t.Fatal(err)
	}
	got := pollTmux(t, "the demo's end", screen, func(s string) bool { return strings.Contains(s, "DEMO-EXIT=") })
	if !strings.Contains(got, "DEMO-EXIT=1") || !strings.Contains(got, "cockpit prefix C-a (yours: C-b)") ||
		strings.Contains(got, "tmux attach: exit status") || strings.Contains(got, "[server exited]") {
		t.Fatalf("the demo in a tmux pane, after Ctrl-C:\n%s", got)
	}
	codextest.AssertNoMarked(t, mark)
	if dirs := demoDirs(t, tmp); len(dirs) != 0 {
		t.Errorf("the demo project was left behind: %q", dirs)
	}
}

// demoTerminalServer is a tmux server of the test's own, standing for the user's
// terminal (TERM xterm-256color); it is killed when the test ends, and
// nothing marked with mark may be left running then.
func demoTerminalServer(t *testing.T, bin, mark string) cockpit.Server {
	t.Helper()
	outer := cockpit.Server{Run: cockpit.ExecRunner{Bin: bin, Socket: cockpit.SocketName(t.TempDir()),
		Env: append(os.Environ(), "TERM=xterm-256color")}}
	t.Cleanup(func() {
		outer.Kill(context.Background())
		codextest.AssertNoMarked(t, mark)
	})
	return outer
}

// terminalRunning starts, on the outer tmux server, a terminal of 120×40
// (session "term", no status line) running shell, and returns what its
// screen shows (with its scroll-back) at each call.
func terminalRunning(ctx context.Context, t *testing.T, outer cockpit.Server, shell string) func() string {
	t.Helper()
	if _, err := outer.Run.Run(ctx, "new-session", "-d", "-s", "term", "-x", "120", "-y", "40", "-c", t.TempDir(), "sh", "-c", shell,
		";", "set-option", "-g", "status", "off", ";", "set-option", "-g", "history-limit", "5000"); err != nil {
		t.Fatal(err)
	}
	return func() string {
		out, _ := outer.Run.Run(ctx, "capture-pane", "-p", "-J", "-S", "-5000", "-t", "=term:")
		return out
	}
}
