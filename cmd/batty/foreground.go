package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/leftovers"
	"github.com/battyhq/batty/project"
)

// feedQueue bounds the events waiting to be printed by a feedPrinter; a
// terminal that does not keep up loses lines of the feed, never slows the
// daemon.
const feedQueue = 1024

// feedPrinter prints the events of a running daemon as `batty feed` does
// (renderFeedEvent), one line each, from a goroutine of its own: observe
// never blocks, as orchestrator.Options.OnEvent requires. Events it has no
// room for are counted, and the count is printed in their place. The
// printer is owned by whoever started it, who calls close once the daemon
// has stopped. Safe for concurrent use.
type feedPrinter struct {
	mu      sync.Mutex
	events  chan eventlog.Event
	closed  bool
	dropped int
	done    chan struct{}
}

// startFeedPrinter starts printing events on w, in colour when color.
func startFeedPrinter(w io.Writer, color bool) *feedPrinter {
	f := &feedPrinter{events: make(chan eventlog.Event, feedQueue), done: make(chan struct{})}
	go func() {
		defer close(f.done)
		var err error
		for e := range f.events {
			if err != nil {
				continue // a closed terminal loses the feed, not the team
			}
			if s := renderFeedEvent(e, color); s != "" {
				_, err = io.WriteString(w, s+"\n")
			}
			if n := f.takeDropped(); n > 0 && err == nil {
				_, err = fmt.Fprintf(w, "… %d event(s) not shown here: `batty feed` shows them\n", n)
			}
		}
	}()
	return f
}

// observe queues e for printing; it never blocks. After close it does
// nothing.
func (f *feedPrinter) observe(e eventlog.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	select {
	case f.events <- e:
	default:
		f.dropped++
	}
}

func (f *feedPrinter) takeDropped() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.dropped
	f.dropped = 0
	return n
}

// close stops the printer once every queued event is printed; it blocks
// until then. Idempotent.
func (f *feedPrinter) close() {
	f.mu.Lock()
	if !f.closed {
		f.closed = true
		close(f.events)
	}
	f.mu.Unlock()
	<-f.done
}

// daemonLogger returns the daemon's logger: every line at level goes to
// file; a foreground daemon also shows, on term, the warnings and errors
// (every line at level when BATTY_LOG_LEVEL chose it), its feed being
// what it shows of the team's work.
func daemonLogger(file, term io.Writer, level hclog.Level, levelChosen bool) hclog.Logger {
	opts := &hclog.LoggerOptions{Name: "daemon", Level: level, Output: file}
	if term == nil {
		return hclog.New(opts)
	}
	log := hclog.NewInterceptLogger(opts)
	termLevel := hclog.Warn
	if levelChosen || level > termLevel {
		termLevel = level
	}
	log.RegisterSink(hclog.NewSinkAdapter(&hclog.LoggerOptions{Name: "daemon", Level: termLevel, Output: term}))
	return log
}

// interruptNow is the stop timeout of a Ctrl-C: the daemon reads a zero
// timeout as the team's timeouts.shutdown, the smallest positive one as
// "interrupt the turns in flight at once".
const interruptNow = time.Nanosecond

// foregroundInterrupts handles Ctrl-C (SIGINT on sigs) of a foreground
// daemon until done closes: the first says at once on w that the team
// stops, then stop asks the daemon to stop as `batty stop` does, with
// turns in flight interrupted now and their messages put back in the
// queue; the second Ctrl-C calls force, which does not return. It blocks
// until done closes and a stop it started has returned.
func foregroundInterrupts(sigs <-chan os.Signal, done <-chan struct{}, w io.Writer, stop func() error, force func()) {
	select {
	case <-sigs:
	case <-done:
		return
	}
	fmt.Fprintln(w, "batty: stopping… (Ctrl-C again to force)")
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	report := func(err error) {
		if err != nil {
			fmt.Fprintf(w, "batty: %v\n", err)
		}
	}
	for {
		select {
		case <-sigs:
			fmt.Fprintln(w, "batty: forced stop: killing the team's processes")
			force()
		case err := <-stopped:
			report(err)
			stopped = nil
		case <-done:
			if stopped != nil {
				report(<-stopped)
			}
			return
		}
	}
}

// stopNow asks the daemon of l, once ready has closed, to stop with the
// turns in flight interrupted at once; it blocks until the daemon has
// stopped its agents, or returns nil without asking when done closes
// first (the daemon stopped by itself).
func stopNow(l project.Layout, ready, done <-chan struct{}) error {
	select {
	case <-ready:
	case <-done:
		return nil
	}
	if _, err := control.Call(l, control.Request{Op: control.OpStop, Timeout: interruptNow}, 0); err != nil {
		select {
		case <-done:
			return nil // it stopped meanwhile: the answer was lost with it
		default:
		}
		return fmt.Errorf("stop the team: %w (Ctrl-C again kills it)", err)
	}
	return nil
}

// forceStop kills every process of the team of p but this one — its
// shims, their Codex and what they started, all carrying the project's
// mark — and the cockpit when withCockpit, then exits with status 130.
// Messages in flight stay in flight on disk: the next start delivers them
// again. It does not return.
func forceStop(w io.Writer, p project.Project, withCockpit bool) {
	n, err := leftovers.Kill(p.Layout, nil)
	if err != nil {
		fmt.Fprintf(w, "batty: %v\n", err)
	}
	if withCockpit {
		if err := stopCockpit(p); err != nil {
			fmt.Fprintf(w, "batty: %v\n", err)
		}
	}
	fmt.Fprintf(w, "batty: killed %d process(es); messages in flight are delivered again at the next start\n", n)
	os.Exit(130)
}
