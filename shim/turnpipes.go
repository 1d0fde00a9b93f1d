package shim

import (
	"fmt"
	"os"

	"github.com/battyhq/batty/shim/shimconfig"
)

// turnPipes are the pipes between the shim and one codex process: codex's
// ends (stdinR, stdoutW, stderrW) and the shim's. The turn's goroutine owns
// them; close, deferred once where they are opened, closes every end still
// held however the turn ends, and an end handed over (handOver) is closed
// by its new owner instead.
type turnPipes struct {
	stdinR, stdinW   *os.File
	stdoutR, stdoutW *os.File
	stderrR, stderrW *os.File
}

// openTurnPipes opens the three pipes of a codex process. On error nothing
// stays open.
func openTurnPipes() (*turnPipes, error) {
	p := &turnPipes{}
	var err error
	if p.stdinR, p.stdinW, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("stdin pipe: %w", err)
	}
	if p.stdoutR, p.stdoutW, err = os.Pipe(); err != nil {
		p.close()
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	if p.stderrR, p.stderrW, err = os.Pipe(); err != nil {
		p.close()
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	return p, nil
}

// closeChildEnds closes codex's ends once the process has them (or did not
// start): the shim then sees EOF on stdout and stderr when codex and every
// descendant holding them are gone.
func (p *turnPipes) closeChildEnds() {
	closeFiles(&p.stdinR, &p.stdoutW, &p.stderrW)
}

// close closes every end still held. It may be called again.
func (p *turnPipes) close() {
	closeFiles(&p.stdinR, &p.stdinW, &p.stdoutR, &p.stdoutW, &p.stderrR, &p.stderrW)
}

// handOver gives the end f to a new owner (a goroutine that closes it when
// done with it): close leaves it alone from now on.
func handOver(f **os.File) *os.File {
	h := *f
	*f = nil
	return h
}

// closeFiles closes each file not closed yet and forgets it.
func closeFiles(fs ...**os.File) {
	for _, f := range fs {
		if *f != nil {
			(*f).Close()
			*f = nil
		}
	}
}

// turnLimit names a limit a turn can run into.
type turnLimit int

const (
	limitTurn    turnLimit = iota + 1 // the turn timeout
	limitIdle                         // the idle timeout: codex printed nothing
	limitNetwork                      // network_wait: codex could not reach the API
)

// limitStop is how the shim stops a turn that ran into limit l under c:
// the stop's reason and the turn's error. A turn that ran out of time
// while codex waited for the network (w) failed for the network, and says
// since when. It changes nothing (w is only read).
func limitStop(l turnLimit, c shimconfig.Config, w *netWait) (stopReason, string) {
	switch l {
	case limitTurn:
		what := fmt.Sprintf("turn exceeded the turn timeout of %s", c.TurnTimeout)
		if w.waiting() {
			return stopNetwork, w.failure(what)
		}
		return stopTimeout, what
	case limitIdle:
		return stopTimeout, fmt.Sprintf("codex printed nothing for %s (idle timeout)", c.IdleTimeout)
	}
	return stopNetwork, w.failure(fmt.Sprintf("codex could not reach the API for %s (network_wait)", c.NetworkWait))
}
