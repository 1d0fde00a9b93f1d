package codextest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Invocation describes one `codex exec --json --skip-git-repo-check` run.
type Invocation struct {
	// Bin is the codex executable; "" means [CodexNative](t).
	Bin string
	// Home is CODEX_HOME (required), e.g. from [Server.WriteHome].
	Home string
	// Dir is the working directory; "" means a new t.TempDir().
	Dir string
	// Resume, when set, resumes that thread id (`exec … resume ID -`)
	// instead of starting a new thread.
	Resume string
	// Prompt is written to codex's stdin, which is then closed ("-" is
	// passed as the prompt argument).
	Prompt string
	// Args are extra arguments placed right after "exec" (e.g. "-c",
	// "key=value").
	Args []string
	// Env holds extra KEY=VALUE entries added to the test's environment
	// (RUST_BACKTRACE is removed from it).
	Env []string
}

// Event is one JSON line codex printed on stdout.
type Event struct {
	// Type is the line's "type": thread.started, turn.started,
	// item.started, item.updated, item.completed, turn.completed,
	// turn.failed or error.
	Type string `json:"type"`
	// ThreadID is set on thread.started.
	ThreadID string `json:"thread_id,omitempty"`
	// Item is set on item.* events.
	Item *Item `json:"item,omitempty"`
	// Usage is set on turn.completed.
	Usage *Usage `json:"usage,omitempty"`
	// Error is set on turn.failed.
	Error *EventError `json:"error,omitempty"`
	// Message is set on error events.
	Message string `json:"message,omitempty"`
	// Raw is the line as printed, without the newline.
	Raw json.RawMessage `json:"-"`
}

// Item is the item of an item.* event (only the fields tests need; the
// whole line is in [Event.Raw]).
type Item struct {
	// ID is "item_0", "item_1", … counted per codex process.
	ID string `json:"id"`
	// Type is agent_message, reasoning, command_execution, file_change,
	// web_search, error, ….
	Type string `json:"type"`
	// Text is an agent_message's or reasoning item's text.
	Text string `json:"text,omitempty"`
	// Message is an error item's message.
	Message string `json:"message,omitempty"`
	// Command is a command_execution's command line as codex ran it
	// (e.g. "/bin/bash -c 'echo hi'").
	Command string `json:"command,omitempty"`
	// AggregatedOutput is a command_execution's stdout and stderr.
	AggregatedOutput string `json:"aggregated_output,omitempty"`
	// ExitCode is a command_execution's exit code (nil while running).
	ExitCode *int `json:"exit_code,omitempty"`
	// Status is in_progress, completed, failed or declined.
	Status string `json:"status,omitempty"`
}

// Usage is turn.completed's usage: the thread's running totals, not the
// turn's.
type Usage struct {
	// InputTokens is the total of input_tokens over the thread's requests.
	InputTokens int `json:"input_tokens"`
	// CachedInputTokens is the total of cached input tokens.
	CachedInputTokens int `json:"cached_input_tokens"`
	// CacheWriteInputTokens is the total of cache-write input tokens.
	CacheWriteInputTokens int `json:"cache_write_input_tokens"`
	// OutputTokens is the total of output_tokens.
	OutputTokens int `json:"output_tokens"`
	// ReasoningOutputTokens is the total of reasoning tokens.
	ReasoningOutputTokens int `json:"reasoning_output_tokens"`
}

// EventError is turn.failed's error.
type EventError struct {
	// Message is the failure text (the same as the preceding error event's).
	Message string `json:"message"`
}

// Proc is a running codex process started by [Start]. Its methods are safe
// for concurrent use; Next and WaitEvent share one cursor over the event
// stream.
type Proc struct {
	// Started is when the process was started.
	Started time.Time

	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has been waited for

	mu      sync.Mutex
	all     []Event       // every stdout line so far
	next    int           // index of the event Next returns next
	eof     bool          // stdout is closed and fully parsed
	changed chan struct{} // closed and replaced when all or eof change
	partial []byte        // stdout bytes after the last newline
	stderr  bytes.Buffer
}

// Start runs codex as described by inv, in its own process group, with the
// prompt on stdin and stdin then closed, and returns at once. A t.Cleanup
// interrupts codex (SIGINT to its group, then SIGKILL after 5 s) if it is
// still running when the test ends, so no codex process outlives the test.
// Start fails the test if codex cannot be started.
func Start(t testing.TB, inv Invocation) *Proc {
	t.Helper()
	if inv.Home == "" {
		t.Fatal("codextest: Invocation.Home is empty")
	}
	bin := inv.Bin
	if bin == "" {
		bin = CodexNative(t)
	}
	dir := inv.Dir
	if dir == "" {
		dir = t.TempDir()
	}
	args := append([]string{"exec"}, inv.Args...)
	args = append(args, "--json", "--skip-git-repo-check")
	if inv.Resume != "" {
		args = append(args, "resume", inv.Resume)
	}
	args = append(args, "-")

	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(filterEnv(os.Environ(), "RUST_BACKTRACE", "CODEX_HOME"), "CODEX_HOME="+inv.Home)
	cmd.Env = append(cmd.Env, inv.Env...)
	cmd.Stdin = strings.NewReader(inv.Prompt)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Bound the wait for stdout/stderr to close after codex exits, in case
	// something it started still holds them.
	cmd.WaitDelay = 5 * time.Second
	p := &Proc{cmd: cmd, exited: make(chan struct{}), changed: make(chan struct{})}
	cmd.Stdout = stdoutWriter{p}
	cmd.Stderr = stderrWriter{p}
	p.Started = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("codextest: start %s: %v", bin, err)
	}
	go func() {
		_ = cmd.Wait()
		p.mu.Lock()
		if len(p.partial) > 0 {
			p.addLine(p.partial)
			p.partial = nil
		}
		p.eof = true
		p.notify()
		p.mu.Unlock()
		close(p.exited)
	}()
	t.Cleanup(func() { p.stop(5 * time.Second) })
	return p
}

// stdoutWriter receives codex's stdout.
type stdoutWriter struct{ p *Proc }

// Write splits codex's stdout into lines (which may be megabytes long) and
// records each as an Event.
func (w stdoutWriter) Write(b []byte) (int, error) {
	p := w.p
	p.mu.Lock()
	defer p.mu.Unlock()
	p.partial = append(p.partial, b...)
	for {
		i := bytes.IndexByte(p.partial, '\n')
		if i < 0 {
			break
		}
		p.addLine(p.partial[:i])
		p.partial = p.partial[i+1:]
	}
	if len(p.partial) == 0 {
		p.partial = nil
	}
	return len(b), nil
}

// stderrWriter receives codex's stderr.
type stderrWriter struct{ p *Proc }

// Write appends b to the recorded stderr.
func (w stderrWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	return w.p.stderr.Write(b)
}

// addLine records one stdout line; p.mu is held. A line that is not JSON
// becomes an Event with an empty Type and the decoding error in Message.
func (p *Proc) addLine(line []byte) {
	line = bytes.TrimRight(line, "\r")
	if len(line) == 0 {
		return
	}
	var ev Event
	if err := json.Unmarshal(line, &ev); err != nil {
		ev = Event{Message: "codextest: not JSON: " + err.Error()}
	}
	ev.Raw = append(json.RawMessage(nil), line...)
	p.all = append(p.all, ev)
	p.notify()
}

// notify wakes goroutines waiting in Next; p.mu is held.
func (p *Proc) notify() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// Next returns the next stdout event. It returns io.EOF once codex has
// exited and every event was returned, or ctx.Err() when ctx ends first.
func (p *Proc) Next(ctx context.Context) (Event, error) {
	for {
		p.mu.Lock()
		if p.next < len(p.all) {
			ev := p.all[p.next]
			p.next++
			p.mu.Unlock()
			return ev, nil
		}
		eof, ch := p.eof, p.changed
		p.mu.Unlock()
		if eof {
			return Event{}, io.EOF
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}

// WaitEvent consumes events until one of type typ (and, when itemType is
// not "", whose item has that type) and returns it. It returns an error
// wrapping io.EOF when codex exits first, or wrapping ctx.Err(); the error
// text includes codex's stderr.
func (p *Proc) WaitEvent(ctx context.Context, typ, itemType string) (Event, error) {
	for {
		ev, err := p.Next(ctx)
		if err != nil {
			return Event{}, fmt.Errorf("codextest: waiting for %s %s: %w (stderr: %q)", typ, itemType, err, p.Stderr())
		}
		if ev.Type == typ && (itemType == "" || (ev.Item != nil && ev.Item.Type == itemType)) {
			return ev, nil
		}
	}
}

// Events returns every event read so far, in order (including those Next
// has not returned yet).
func (p *Proc) Events() []Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Event(nil), p.all...)
}

// Stderr returns what codex wrote to stderr so far.
func (p *Proc) Stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// Pid returns the process id (also its process group id).
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Interrupt sends SIGINT to codex's process group, which makes codex abort
// the turn, kill the commands it started and exit with status 1.
func (p *Proc) Interrupt() error { return p.signal(syscall.SIGINT) }

// Kill sends SIGKILL to codex's process group.
func (p *Proc) Kill() error { return p.signal(syscall.SIGKILL) }

func (p *Proc) signal(sig syscall.Signal) error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	err := syscall.Kill(-p.cmd.Process.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// Wait waits until codex has exited and all its output is recorded, and
// returns its exit code (-1 when killed by a signal), or ctx.Err() when
// ctx ends first (codex keeps running).
func (p *Proc) Wait(ctx context.Context) (int, error) {
	select {
	case <-p.exited:
		return p.cmd.ProcessState.ExitCode(), nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// Exited returns a channel closed once codex has exited and its stdout is
// fully read.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// stop interrupts codex if it still runs, and kills its group if it has not
// exited after grace. It returns once the process has been reaped.
func (p *Proc) stop(grace time.Duration) {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.Interrupt()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.exited:
	case <-t.C:
		_ = p.Kill()
		<-p.exited
	}
}

// filterEnv returns env without the entries for the given names.
func filterEnv(env []string, names ...string) []string {
	out := make([]string, 0, len(env))
next:
	for _, kv := range env {
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}
