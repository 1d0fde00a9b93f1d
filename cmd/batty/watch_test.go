package main

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/battyhq/batty/control"
)

// ptyReader collects what a program writes on a terminal's master side
// and wakes the waiters on every read.
type ptyReader struct {
	mu   sync.Mutex
	buf  []byte
	wake chan struct{}
	done chan struct{}
}

func readPTY(m *os.File) *ptyReader {
	r := &ptyReader{wake: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		b := make([]byte, 4096)
		for {
			n, err := m.Read(b)
			r.mu.Lock()
			r.buf = append(r.buf, b[:n]...)
			r.mu.Unlock()
			select {
			case r.wake <- struct{}{}:
			default:
			}
			if err != nil {
				return // EIO: every slave side is closed
			}
		}
	}()
	return r
}

func (r *ptyReader) text() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return string(r.buf)
}

// waitFor waits until what was written from offset from on satisfies ok,
// and returns its length.
func (r *ptyReader) waitFor(t *testing.T, what string, from int, ok func(string) bool) int {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		s := r.text()
		if ok(s[from:]) {
			return len(s)
		}
		select {
		case <-r.wake:
		case <-deadline:
			t.Fatalf("no %s on the terminal within 60s; it shows:\n%q", what, s[from:])
		}
	}
}

// The live view on a real terminal (a pty at 80×24): the alternate
// screen, the agents and the TOTAL row; a `batty send` makes it redraw
// with the turn counted; a wider terminal gets more columns (SIGWINCH);
// Ctrl-C exits 0 with the main screen and the cursor back.
func TestStatusWatchOnAPty(t *testing.T) {
	dir := fakeTeam(t, "watch-team", 2)
	mustBatty(t, dir, "start", "--no-tmux")
	defer runBattyIn(t, dir, nil, "", "stop")

	m, s := openPTY(t)
	defer m.Close()
	if err := unix.IoctlSetWinsize(int(m.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 80}); err != nil {
		t.Fatal(err)
	}
	modes, err := unix.IoctlGetTermios(int(m.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	cmd := battyCommand(t, dir, nil, "status", "-w")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s, s, s
	// A session of its own with the pty as its controlling terminal:
	// Ctrl-C on it is a SIGINT to the view.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	r := readPTY(m)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	off := r.waitFor(t, "the first drawing", 0, func(s string) bool {
		return strings.HasPrefix(s, enterAltScreen) && strings.Contains(s, "eng-1") && strings.Contains(s, "eng-2") &&
			strings.Contains(s, "TOTAL") && strings.Contains(s, "0/2 working")
	})
	for _, l := range strings.Split(r.text(), "\r\n") {
		l = strings.TrimSuffix(l, "\x1b[K")
		if n := utf8.RuneCountInString(l); n > 80+len("\x1b[H")+len(enterAltScreen) {
			t.Errorf("a line of %d runes at 80 columns: %q", n, l)
		}
	}

	mustBatty(t, dir, "send", "eng-1", "hello watch")
	counted := regexp.MustCompile(`eng-1 +idle +- +0 +1 `)
	off = r.waitFor(t, "a redraw with eng-1's turn counted", off, counted.MatchString)

	if err := unix.IoctlSetWinsize(int(m.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 50, Col: 200}); err != nil {
		t.Fatal(err)
	}
	off = r.waitFor(t, "the wide columns after a resize", off, func(s string) bool {
		return strings.Contains(s, "LAST ERROR") && strings.Contains(s, "THREAD")
	})

	if _, err := m.Write([]byte{3}); err != nil { // Ctrl-C
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("status -w after Ctrl-C: %v; terminal:\n%q", err, r.text()[off:])
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("status -w still runs 30s after Ctrl-C")
	}
	<-r.done
	if out := r.text(); !strings.HasSuffix(out, leaveAltScreen) {
		t.Errorf("the terminal is not restored at the end:\n%q", out[max(0, len(out)-200):])
	}
	after, err := unix.IoctlGetTermios(int(m.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if after.Lflag != modes.Lflag || after.Cc != modes.Cc {
		t.Errorf("terminal modes not restored: lflag %#x, want %#x", after.Lflag, modes.Lflag)
	}
}

// Piped, --watch prints one status, plain, and exits 0.
func TestStatusWatchPipedPrintsOneSnapshot(t *testing.T) {
	dir := fakeTeam(t, "watch-pipe", 2)
	out, errOut, code := runBattyIn(t, dir, nil, "", "status", "--watch")
	if code != 0 || !strings.Contains(out, "TOTAL") || !strings.Contains(out, "eng-2") || strings.Contains(out, "\x1b") {
		t.Fatalf("exit %d, output:\n%q\n%s", code, out, errOut)
	}
	if _, errOut, code := runBattyIn(t, dir, nil, "", "status", "-w", "--json"); code == 0 || !strings.Contains(errOut, "--watch") {
		t.Fatalf("-w --json: exit %d, %s", code, errOut)
	}
}

func watchAgents(n int) []control.AgentStatus {
	var out []control.AgentStatus
	for i := range n {
		a := control.AgentStatus{Name: fmt.Sprintf("engineer-%d", i+1), Role: "engineer", State: "idle", ThreadID: "019a3c7e-5d1f-7000-8000-000000000000",
			Backlog: 1, TurnsCompleted: 3, InputTokens: 19100, OutputTokens: 412, ContextPct: 4, LastError: "failed quota: You’ve hit your usage limit. Try again later."}
		if i == 0 {
			id := "20261121T125100.123456789Z-1f2e3d4c"
			a.State, a.InFlight, a.InFlightAgeS, a.Backlog = "working", &id, 125, 3
		}
		out = append(out, a)
	}
	return out
}

// At 80×24 every line fits, the TOTAL row sums the team, a paused account
// has its line; wider, ROLE, THREAD and LAST ERROR appear; agents that do
// not fit are counted.
func TestRenderWatch(t *testing.T) {
	at := time.Now().Add(time.Hour)
	st := control.Status{Team: "demo", Daemon: control.DaemonStatus{PID: 41230, UptimeS: 123}, Agents: watchAgents(4),
		Accounts: []control.AccountStatus{{Account: "/home/u/.codex", Agents: []string{"engineer-1"}, Paused: true, ResumeAt: &at}}}
	st.Agents[1].State = control.AgentWaitingForNetwork // the longest state
	now := time.Now()
	narrow := renderWatch(st, 80, 24, nil, now)
	text := strings.Join(narrow, "\n")
	if len(narrow) > 24 {
		t.Errorf("%d lines at 24 rows", len(narrow))
	}
	for _, l := range narrow {
		if utf8.RuneCountInString(l) > 80 {
			t.Errorf("line of %d runes at 80 columns: %q", utf8.RuneCountInString(l), l)
		}
	}
	for _, want := range []string{"1f2e3d4c 2m05s", "1/4 working", "QUOTA usage limit: account /home/u/.codex paused until", "Ctrl-C quits"} {
		if !strings.Contains(text, want) {
			t.Errorf("80×24 view lacks %q:\n%s", want, text)
		}
	}
	if !regexp.MustCompile(`TOTAL +1/4 working +1 in flight +6 +12 +76\.4k/1\.6k`).MatchString(text) {
		t.Errorf("totals row wrong:\n%s", text)
	}
	if !regexp.MustCompile(`engineer-1 +working +1f2e3d4c 2m05s +3 +3 +19\.1k/412 +4%`).MatchString(text) {
		t.Errorf("an agent's row at 80 columns is cut:\n%s", text)
	}
	if strings.Contains(text, "LAST ERROR") {
		t.Errorf("80 columns show LAST ERROR:\n%s", text)
	}
	wide := strings.Join(renderWatch(st, 200, 50, nil, now), "\n")
	for _, want := range []string{"ROLE", "THREAD", "LAST ERROR", "usage limit. Try again later."} {
		if !strings.Contains(wide, want) {
			t.Errorf("200×50 view lacks %q:\n%s", want, wide)
		}
	}
	st.Agents = watchAgents(40)
	tall := renderWatch(st, 80, 24, errors.New("the daemon did not answer"), now)
	text = strings.Join(tall, "\n")
	if len(tall) > 24 || !strings.Contains(text, "more agent(s)") || !strings.Contains(text, "TOTAL") || !strings.Contains(text, "status failed: the daemon did not answer") {
		t.Errorf("40 agents at 80×24 (%d lines):\n%s", len(tall), text)
	}
}

// Ages move on between two asks for the status.
func TestAdvanceAges(t *testing.T) {
	st := control.Status{Daemon: control.DaemonStatus{PID: 1, UptimeS: 10}, Agents: watchAgents(2)}
	got := advanceAges(st, 3*time.Second)
	if got.Daemon.UptimeS != 13 || got.Agents[0].InFlightAgeS != 128 || got.Agents[1].InFlightAgeS != 0 || st.Agents[0].InFlightAgeS != 125 {
		t.Fatalf("advanced %+v (from %+v)", got, st)
	}
}

// The live view says, as status does, when the team's files changed since
// the team started.
func TestRenderWatchSaysTheTeamFileChanged(t *testing.T) {
	st := control.Status{Team: "demo", Agents: watchAgents(2)}
	if text := strings.Join(renderWatch(st, 80, 24, nil, time.Now()), "\n"); strings.Contains(text, teamChangedNotice) {
		t.Fatalf("the notice with nothing changed:\n%s", text)
	}
	st.TeamFileChanged = true
	if text := strings.Join(renderWatch(st, 80, 24, nil, time.Now()), "\n"); !strings.Contains(text, teamChangedNotice) {
		t.Fatalf("no notice of the changed team file:\n%s", text)
	}
}
