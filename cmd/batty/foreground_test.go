package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/reap"
	"github.com/battyhq/batty/syncbuf"
)

// lineWatcher collects the lines a process writes to a pipe and lets a
// test wait for one.
type lineWatcher struct {
	mu    sync.Mutex
	lines []string
	more  chan struct{} // closed and replaced on each new line
	eof   bool
}

// watchLines reads r until EOF in a goroutine of its own; the caller
// closes r to end it early.
func watchLines(r io.Reader) *lineWatcher {
	w := &lineWatcher{more: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			w.mu.Lock()
			w.lines = append(w.lines, sc.Text())
			close(w.more)
			w.more = make(chan struct{})
			w.mu.Unlock()
		}
		w.mu.Lock()
		w.eof = true
		close(w.more)
		w.mu.Unlock()
	}()
	return w
}

// wait blocks until a line containing s was read, failing the test after
// a minute or at EOF.
func (w *lineWatcher) wait(t *testing.T, s string) {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		w.mu.Lock()
		for _, l := range w.lines {
			if strings.Contains(l, s) {
				w.mu.Unlock()
				return
			}
		}
		more, eof, text := w.more, w.eof, strings.Join(w.lines, "\n")
		w.mu.Unlock()
		if eof {
			t.Fatalf("no line with %q before the end of the output:\n%s", s, text)
		}
		select {
		case <-more:
		case <-deadline:
			t.Fatalf("timed out waiting for a line with %q; so far:\n%s", s, text)
		}
	}
}

func (w *lineWatcher) text() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.lines, "\n")
}

// TestStartForegroundShowsTheFeedAndStopsOnCtrlC runs `batty start
// --foreground` with a turn in flight that would run for ten minutes and a
// shutdown timeout of two: the team's feed is on stdout, and Ctrl-C says
// at once that the team stops, interrupts the turn (its message back in
// the queue, not lost) and leaves no process, well within the shutdown
// timeout.
func TestStartForegroundShowsTheFeedAndStopsOnCtrlC(t *testing.T) {
	dir := fakeTeam(t, "fg", 1)
	teamFile := filepath.Join(dir, "team.yaml")
	b, err := os.ReadFile(teamFile)
	if err != nil {
		t.Fatal(err)
	}
	// Ctrl-C does not wait for turns in flight to finish, as batty stop does.
	if err := os.WriteFile(teamFile, []byte(strings.Replace(string(b), "shutdown: 5s", "shutdown: 2m", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	l := layoutOf(t, dir)

	stdout, err := os.Create(filepath.Join(t.TempDir(), "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer stdout.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	cmd := battyCommand(t, dir, nil, "start", "--foreground", "--no-tmux")
	cmd.Stdout, cmd.Stderr = stdout, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			cmd.Process.Kill()
			<-exited
			runBattyIn(t, dir, nil, "", "stop", "--timeout", "1s")
		}
	})
	stderr := watchLines(pr)
	stderr.wait(t, `batty: team "fg" running in the foreground`)

	id, _ := mustSend(t, dir, nil, "", "eng", "scenario:slow:600 a long job")
	waitJSONStatus(t, dir, "the long job in flight", func(st control.Status) bool {
		return len(st.Agents) == 1 && st.Agents[0].InFlight != nil && *st.Agents[0].InFlight == id
	})
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	stderr.wait(t, "batty: stopping… (Ctrl-C again to force)")
	// A generous bound, far below the team's shutdown timeout.
	select {
	case <-exited:
		if waitErr != nil {
			t.Fatalf("start --foreground after Ctrl-C: %v\nstderr:\n%s", waitErr, stderr.text())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("start --foreground still runs 10s after Ctrl-C\nstderr:\n%s", stderr.text())
	}

	out, err := os.ReadFile(stdout.Name())
	if err != nil {
		t.Fatal(err)
	}
	short := inbox.ShortID(id)
	for _, want := range []string{
		"▶ team fg started (daemon pid ",
		"eng: worker started (pid ",
		"→ eng ← human: message " + short,
		"↺ eng: message " + short + " back in the queue",
		"■ team stopped",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the feed on stdout has no %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "[INFO]") {
		t.Errorf("log lines on stdout:\n%s", out)
	}
	// Requeued, not lost: waiting in the inbox again, with no outcome.
	pendingMessage(t, l, "eng", id)
	if st := recorded(t, l, "eng", id); st != "" {
		t.Fatalf("the interrupted message has the outcome %q", st)
	}
	if st := jsonStatus(t, dir); st.Agents[0].Backlog != 1 {
		t.Fatalf("backlog after the stop: %d", st.Agents[0].Backlog)
	}
	if left := reap.Marked(reap.MarkEnv, l.Dir); len(left) > 0 {
		t.Fatalf("processes of the team left running: %v", left)
	}
}

// TestForegroundInterrupts: the first Ctrl-C says at once that the team
// stops and asks for the stop; a second one while the stop runs forces;
// the handler returns only once the stop it started has returned.
func TestForegroundInterrupts(t *testing.T) {
	t.Run("no Ctrl-C", func(t *testing.T) {
		done := make(chan struct{})
		close(done)
		var out strings.Builder
		foregroundInterrupts(make(chan os.Signal), done, &out,
			func() error { t.Error("stop called"); return nil },
			func() { t.Error("force called") })
		if out.Len() != 0 {
			t.Fatalf("printed %q", out.String())
		}
	})
	t.Run("one Ctrl-C", func(t *testing.T) {
		sigs, done := make(chan os.Signal, 2), make(chan struct{})
		asked := make(chan struct{})
		var out syncbuf.Buffer
		returned := make(chan struct{})
		go func() {
			defer close(returned)
			foregroundInterrupts(sigs, done, &out,
				func() error { close(asked); return errors.New("no socket") },
				func() { t.Error("force called") })
		}()
		sigs <- os.Interrupt
		<-asked
		close(done)
		<-returned
		if got := out.String(); got != "batty: stopping… (Ctrl-C again to force)\nbatty: no socket\n" {
			t.Fatalf("printed %q", got)
		}
	})
	t.Run("two Ctrl-C", func(t *testing.T) {
		sigs, done := make(chan os.Signal, 2), make(chan struct{})
		release, forced := make(chan struct{}), make(chan struct{})
		var out syncbuf.Buffer
		returned := make(chan struct{})
		go func() {
			defer close(returned)
			foregroundInterrupts(sigs, done, &out,
				func() error { <-release; return nil },
				func() { close(forced) })
		}()
		sigs <- os.Interrupt
		sigs <- os.Interrupt
		<-forced
		close(done)
		select {
		case <-returned:
			t.Fatal("returned before the stop it started")
		case <-time.After(50 * time.Millisecond):
		}
		close(release)
		<-returned
		if got := out.String(); !strings.Contains(got, "batty: forced stop") {
			t.Fatalf("printed %q", got)
		}
	})
}

// blockingWriter blocks every write until open closes.
type blockingWriter struct {
	open <-chan struct{}
	out  syncbuf.Buffer
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	<-w.open
	return w.out.Write(p)
}

// TestFeedPrinterNeverBlocksTheDaemon: with its terminal stuck, observe
// still returns; what did not fit is counted and said, and close prints
// every queued event before it returns.
func TestFeedPrinterNeverBlocksTheDaemon(t *testing.T) {
	open := make(chan struct{})
	w := &blockingWriter{open: open}
	f := startFeedPrinter(w, false)
	const n = feedQueue + 100
	for i := range n {
		f.observe(eventlog.Event{Type: eventlog.EvWarning, Agent: "eng", Detail: fmt.Sprintf("event %d", i), Time: time.Now()})
	}
	close(open)
	f.close()
	f.observe(eventlog.Event{Type: eventlog.EvWarning, Agent: "eng", Detail: "after close"})
	got := w.out.String()
	lines := strings.Count(got, "⚠ eng: event ")
	if lines < feedQueue || lines >= n {
		t.Fatalf("%d events printed of %d observed (queue %d)", lines, n, feedQueue)
	}
	if want := fmt.Sprintf("… %d event(s) not shown here", n-lines); !strings.Contains(got, want) {
		t.Fatalf("no %q in the output:\n%s", want, got[len(got)-300:])
	}
	if strings.Contains(got, "after close") {
		t.Fatal("an event observed after close was printed")
	}
}
