package shim

import "fmt"

// Runtime names: how the shim runs a turn of Codex (Config.Runtime).
const (
	// RuntimeExec runs one `codex exec --json [resume THREAD] -` process
	// per turn (the default).
	RuntimeExec = "exec"
	// RuntimeAppServer runs turns on one warm `codex app-server` process
	// per shim, which keeps the agent's thread loaded between turns.
	RuntimeAppServer = "app-server"
)

// turnRuntime is the seam behind which the shim runs a turn. The loop
// hands each turn to run on the turn's own goroutine, one turn at a time;
// the runtime reports what it sees while the turn runs through the
// server's progress paths (TurnStarted, ThreadChanged via s.progress,
// NetworkWait, warnings, the transcript) and returns the turn's result.
//
// The request is the turn: t.msg is the message (its prompt), t.threadID
// the thread to resume ("" for a fresh one), t.stopCh carries stop
// requests (interrupt, limits); the codex settings are the server's
// execOpts. run blocks until the turn has ended, whatever the ending, with
// nothing of the turn's own left running but what the runtime keeps
// between turns (exec: nothing); it never sends on s.turnDone itself.
//
// close releases what the runtime keeps between turns; Run calls it once,
// after the loop has ended and no turn runs. It is idempotent.
type turnRuntime interface {
	run(t *turn) turnResult
	close() error
}

// newRuntime returns the runtime Config.Runtime names, for server s.
func newRuntime(name string, s *server) (turnRuntime, error) {
	switch name {
	case "", RuntimeExec:
		return execRuntime{s: s}, nil
	case RuntimeAppServer:
		return &appServerRuntime{s: s}, nil
	}
	return nil, checkRuntime(name)
}

// checkRuntime reports whether name is a runtime the shim knows.
func checkRuntime(name string) error {
	switch name {
	case "", RuntimeExec, RuntimeAppServer:
		return nil
	}
	return fmt.Errorf("shim: --runtime %q is not a runtime (want %q or %q)", name, RuntimeExec, RuntimeAppServer)
}

// execRuntime runs each turn as its own `codex exec --json` process
// (server.execTurn). It keeps nothing between turns: the thread lives in
// Codex's rollout files and is resumed by id.
type execRuntime struct{ s *server }

func (r execRuntime) run(t *turn) turnResult { return r.s.execTurn(t) }

func (execRuntime) close() error { return nil }
