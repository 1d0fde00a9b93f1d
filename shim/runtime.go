package shim

import "github.com/battyhq/batty/shim/shimconfig"

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

// newRuntime returns the runtime shimconfig.Config.Runtime names, for server s.
func newRuntime(name string, s *server) (turnRuntime, error) {
	switch name {
	case "", shimconfig.RuntimeExec:
		return execRuntime{s: s}, nil
	case shimconfig.RuntimeAppServer:
		return &appServerRuntime{s: s}, nil
	}
	return nil, shimconfig.CheckRuntime(name)
}

// execRuntime runs each turn as its own `codex exec --json` process
// (server.execTurn). It keeps nothing between turns: the thread lives in
// Codex's rollout files and is resumed by id.
type execRuntime struct{ s *server }

func (r execRuntime) run(t *turn) turnResult { return r.s.execTurn(t) }

func (execRuntime) close() error { return nil }
