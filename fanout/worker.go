package fanout

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/host"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/shim/shimclient"
	"github.com/battyhq/batty/shim/shimconfig"
	"github.com/battyhq/batty/team"
)

// Turn is one row's prompt as a worker gets it.
type Turn struct {
	ID     string // unique within the job
	Prompt string
	// RetryNote, when set, says why this attempt retries a failed one
	// (shown in the prompt's header).
	RetryNote string
	// Cwd, when set, is the row's own working directory (Options.Cwd),
	// absolute; "": the worker's.
	Cwd string
}

// Worker runs turns one at a time, each on a fresh Codex thread. A Worker
// is used by one goroutine.
type Worker interface {
	// Run runs one turn and returns how it finished; an error means the
	// worker broke (its shim exited) and must not be used again. When
	// stop is closed the turn is shut down, getting grace to finish; when
	// kill is closed it is killed at once.
	Run(t Turn, stop, kill <-chan struct{}, grace time.Duration) (Outcome, error)
	// Close ends the worker and everything it started, letting a
	// running turn finish for a moment, at once when kill is closed; it
	// blocks until they have exited. Idempotent.
	Close(kill <-chan struct{})
}

// Outcome is how a worker's turn ended.
type Outcome struct {
	protocol.TurnFinished
	// RetryAt is the reset time codex named for a usage limit (zero:
	// none).
	RetryAt time.Time
	// ServerDied says that the turn failed while the shared app-server
	// it ran on died (SharedServers): cut off, or a call that failed as
	// the process went.
	ServerDied bool
}

// ShimWorkers starts workers as shims of the batty binary: the same
// machinery as `batty chat`, one shim per worker, a fresh thread per turn
// (protocol.ResetThread before every turn but the first).
type ShimWorkers struct {
	// Path and Args start a shim (the batty binary and ["shim"]).
	Path string
	Args []string
	// Env is the shims' environment (nil: this process's).
	Env []string
	// Config is every shim's configuration; Agent is suffixed with the
	// worker's number.
	Config shimconfig.Config
	// Homes are the CODEX_HOME of each account (Options.Accounts' order):
	// a worker on account i gets Homes[i] in its shim's Config.Env,
	// replacing any other CODEX_HOME there (the handshake, never argv).
	// Empty: Config.Env as it is.
	Homes []string
	// Stderr receives the shims' logs.
	Stderr io.Writer
	// Hosts, when set, are where the workers run, taken round robin by
	// worker number (HostFor): a worker on a host gets the host's Config
	// (Agent suffixed as here), its shim started there through the host's
	// transport with a longer handshake. Homes must then be empty. Empty: every worker
	// here.
	Hosts []WorkerHost
	// RowDirs says that every row has a working directory of its own
	// (Turn.Cwd): a worker's shim starts with its first row, in that
	// row's directory, and again for a row in another directory.
	RowDirs bool
	// Shared, when set, are the job's shared app-servers: a worker here
	// runs its rows as threads of its account's process (its shim on the
	// app-server runtime, at the broker's socket, admitted by its pid).
	// Workers on other hosts do not use them.
	Shared *SharedServers
}

// New starts worker n (1-based) on account (an index of Homes; ignored
// when Homes is empty), on its host (HostFor; none: here).
func (s ShimWorkers) New(n, account int) (Worker, error) {
	var on host.Host = host.Local{}
	cfg := s.Config
	if len(s.Hosts) > 0 {
		h := s.Hosts[HostFor(n, len(s.Hosts))]
		on, cfg = h.Host, h.Config
	}
	cfg.Agent = fmt.Sprintf("%s-%d", s.Config.Agent, n)
	if len(s.Homes) > 0 {
		if !on.ThreadsPortable() {
			// An account is a CODEX_HOME here, which codex on a host that
			// keeps its threads there does not read.
			return nil, fmt.Errorf("worker %d: accounts are not supported on hosts yet", n)
		}
		if account < 0 || account >= len(s.Homes) {
			return nil, fmt.Errorf("worker %d: account %d of %d", n, account, len(s.Homes))
		}
		cfg.Env = codex.WithHome(cfg.Env, s.Homes[account])
	}
	shared := s.Shared
	if on.Name() != "" {
		shared = nil
	}
	if shared != nil {
		// A row's thread is never resumed: ephemeral, codex writes no
		// rollout for it (half its work per row).
		cfg.Runtime, cfg.EphemeralThreads = shimconfig.RuntimeAppServer, true
	}
	w := &shimWorker{n: n, on: on, cfg: cfg, opts: shimclient.SpawnOptions{Path: s.Path, Args: s.Args, Env: s.Env, Stderr: s.Stderr}}
	if shared != nil {
		w.shared, w.account = shared, account
	}
	if s.RowDirs {
		return w, nil
	}
	if err := w.start(cfg.Cwd); err != nil {
		return nil, err
	}
	return w, nil
}

// start starts the worker's shim with its working directory cwd (see
// Turn.Cwd) and, on a shared app-server, lets it in before its first
// turn, which is when it connects.
func (w *shimWorker) start(cwd string) error {
	cfg := w.cfg
	cfg.Cwd = cwd
	if w.shared != nil {
		w.lease = w.shared.Lease(w.account)
		cfg.AppServerSocket = w.lease.Socket()
	}
	o := w.opts
	o.Config = cfg
	// On a host, its secrets go in the handshake only, as here.
	c, err := host.Start(context.Background(), w.on, o)
	if err != nil {
		if w.lease != nil {
			w.shared.Release(w.lease)
			w.lease = nil
		}
		return &SpawnError{fmt.Errorf("worker %d on host %s: %w", w.n, cmp.Or(w.on.Name(), team.LocalHost), err)}
	}
	if w.shared != nil {
		w.shared.Admit(c.Pid(), cfg.Agent)
	}
	w.c, w.cwd, w.used = c, cwd, false
	return nil
}

// shimWorker is a worker as its shim's client gives it: a turn's
// TurnFinished carries the whole reply, here or on a host alike.
type shimWorker struct {
	n    int
	on   host.Host
	cfg  shimconfig.Config // its shim's, but for Cwd
	opts shimclient.SpawnOptions

	c      *shimclient.Client
	cwd    string // the shim's working directory
	used   bool
	closed bool
	// shared, when set, is the job's shared app-servers, whose process of
	// account runs this worker's threads.
	shared  *SharedServers
	account int
	lease   *Lease // the process its shim runs on
}

func (w *shimWorker) Run(t Turn, stop, kill <-chan struct{}, grace time.Duration) (Outcome, error) {
	if t.Cwd != "" && w.on.Name() != "" {
		return Outcome{}, fmt.Errorf("%s: a row's own working directory is not supported on hosts yet", t.ID)
	}
	// A shim's directory is its own: a row in another directory takes a
	// shim of its own (a few milliseconds; the shared app-server stays),
	// and so does a row after a fresh shared app-server took over.
	dir := cmp.Or(t.Cwd, w.cfg.Cwd)
	restart := w.c == nil || dir != w.cwd
	if !restart && w.lease != nil && !w.shared.Row(w.lease) {
		restart = true
	}
	if restart {
		w.stop(kill)
		if err := w.start(dir); err != nil {
			return Outcome{}, err
		}
		if w.lease != nil {
			w.shared.Row(w.lease)
		}
	}
	if w.used {
		if err := w.c.Send(protocol.ResetThread{Reason: "next row"}); err != nil {
			return Outcome{}, fmt.Errorf("reset the thread: %w", err)
		}
	}
	w.used = true
	if err := w.c.Send(protocol.SendMessage{ID: t.ID, From: team.Human, Body: t.Prompt, RetryNote: t.RetryNote}); err != nil {
		return Outcome{}, fmt.Errorf("%s: %w", t.ID, err)
	}
	var out Outcome
	var deaths int64
	if w.shared != nil {
		deaths = w.shared.Deaths(w.account)
	}
	for {
		select {
		case m, ok := <-w.c.Events():
			if !ok {
				err := w.c.Err()
				if err == nil || errors.Is(err, io.EOF) {
					err = errors.New("it exited")
				}
				return Outcome{}, fmt.Errorf("shim %d ended during %s (status %d): %w", w.c.Pid(), t.ID, w.c.ExitCode(), err)
			}
			switch e := m.(type) {
			case protocol.Rejected:
				if e.ID == t.ID {
					return Outcome{}, fmt.Errorf("shim %d refused %s: %s %s", w.c.Pid(), t.ID, e.Reason, e.Detail)
				}
			case protocol.QuotaBlocked:
				if e.MessageID == t.ID {
					out.RetryAt = e.RetryAt
				}
			case protocol.TurnFinished:
				if e.MessageID == t.ID {
					out.TurnFinished = e
					// Its process died under it (the broker notes the death
					// before it ends the connections): cut off, or a call
					// that failed as the process went.
					out.ServerDied = w.shared != nil && e.Status == protocol.TurnFailed && w.shared.Deaths(w.account) > deaths
					return out, nil
				}
			}
		case <-stop:
			stop = nil
			// Nothing more is sent: the Kill command and the signal come
			// from kill, or from Close.
			w.c.BeginStop(grace, "fanout interrupted")
		case <-kill:
			kill = nil
			if err := w.c.Send(protocol.Kill{}); err != nil {
				w.c.Kill()
			}
		}
	}
}

func (w *shimWorker) Close(kill <-chan struct{}) {
	if w.closed {
		return
	}
	w.closed = true
	w.stop(kill)
}

// stop ends the worker's shim (at once when kill is closed) and blocks
// until it has exited.
func (w *shimWorker) stop(kill <-chan struct{}) {
	c := w.c
	if c == nil {
		return
	}
	w.c = nil
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The events the shim still sends are not wanted (the reader ends when
	// Close returns); Stop sends SIGKILL when kill closes.
	go func() {
		for range c.Events() {
		}
	}()
	go func() {
		select {
		case <-kill:
			cancel()
		case <-ctx.Done():
		}
	}()
	c.Stop(ctx, closeGrace, "requested")
	c.Close()
	if w.shared != nil {
		w.shared.Forget(c.Pid())
	}
	if w.lease != nil {
		w.shared.Release(w.lease)
		w.lease = nil
	}
}

// closeGrace is how long a shim that has nothing to do gets to stop.
const closeGrace = 5 * time.Second

// SpawnError is a worker that could not start (Worker.Run returns it
// when it starts its shim with a row): the job stops as when NewWorker
// fails.
type SpawnError struct{ Err error }

func (e *SpawnError) Error() string { return e.Err.Error() }
func (e *SpawnError) Unwrap() error { return e.Err }
