package orchestrator

import (
	"context"
	"time"

	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/shim"
)

// Worker is an agent's worker as the agent's actor drives it: commands in
// with Send, events out of Events in the order the worker sent them,
// ended with BeginStop, Kill or Close. A local shim (*shim.Client) is one;
// a shim on a host is one through remoteWorker, which gives the events a
// local one gives; tests give an in-process one (shimtest.Fake).
//
// The actor owns its Worker: it reads Events until it is closed, then
// calls Close. All methods are safe for concurrent use.
type Worker interface {
	// Send writes one command; it does not wait for an answer (that comes
	// on Events). It fails once the channel is closed.
	Send(protocol.Message) error
	// Events delivers the worker's events in order, the same channel on
	// every call; it is closed after the last one (Err says why).
	Events() <-chan protocol.Message
	// Err tells why Events closed: io.EOF after a clean end, another error
	// for a broken channel; nil while Events is open.
	Err() error
	// BeginStop asks the worker to stop, giving a turn in flight up to
	// grace, without waiting; idempotent.
	BeginStop(grace time.Duration, reason string)
	// Kill ends the worker at once and waits until it is gone; idempotent.
	Kill()
	// Pid is the worker's process id.
	Pid() int
	// Done is closed once the worker has exited.
	Done() <-chan struct{}
	// ExitCode blocks until the worker has exited and returns its status,
	// -1 when a signal killed it.
	ExitCode() int
	// Close releases the worker (killing it if it still runs); it blocks
	// until everything the worker started has ended. Idempotent.
	Close()
}

// StartWorker starts an agent's worker as o says (the shim's command,
// configuration and handshake). It blocks until the worker is up, for
// at most the handshake's timeout; ctx bounds the start only. On failure
// nothing is left running.
type StartWorker func(ctx context.Context, o shim.SpawnOptions) (Worker, error)

// startWorker starts a worker through Options.StartWorker, by default a
// shim process of the team (startShim). Safe from any goroutine once Run
// has set d.procs.
func (d *Daemon) startWorker(ctx context.Context, o shim.SpawnOptions) (Worker, error) {
	if d.opts.StartWorker != nil {
		return d.opts.StartWorker(ctx, o)
	}
	return d.procs.startShim(ctx, o)
}

// startShim starts a shim process of the team (spawn: marked, in the
// team's cgroup when there is one) as a Worker.
func (tp *teamProcs) startShim(ctx context.Context, o shim.SpawnOptions) (Worker, error) {
	c, err := tp.spawn(ctx, o)
	if err != nil {
		return nil, err
	}
	return c, nil
}
