package control

import (
	"fmt"
	"strconv"

	"github.com/battyhq/batty/agentproc"
)

// Insider says whether a process runs inside an agent's Codex, as the
// daemon (InsiderOf) or a command acting on a stopped team (OwnInsider)
// decides it. The zero value is a process of the human.
type Insider struct {
	// Agent is the agent whose Codex the process runs in ("" when none).
	Agent string
	// Shim is the pid of that agent's batty shim, an ancestor of the
	// process.
	Shim int
	// Foreign says the shim is not one the daemon started: another team's,
	// or `batty chat`'s or `batty fanout`'s.
	Foreign bool
	// Orphan is the pid of a process the daemon adopted (it is a child
	// subreaper) without having started it — what a dead shim left
	// behind — when the process is it or runs below it; 0 otherwise.
	Orphan int
	// Server is the pid of a shared app-server of the daemon's
	// (codex.app_server: per-account) when the process runs below it: a
	// command of one of the agents on it, which the process tree cannot
	// name; 0 otherwise.
	Server int
}

// Inside reports whether the process runs inside an agent, below what a
// dead shim left, or below a shared app-server.
func (i Insider) Inside() bool { return i.Agent != "" || i.Orphan != 0 || i.Server != 0 }

// BelowServer decides whether a process whose chain (the process and its
// ancestors, nearest first) reaches one of the daemon's shared
// app-servers (servers, by pid) below the daemon (daemon: the daemon's own
// chain) runs inside an agent: it does, as a command one of the agents on
// that server started. A server pid above the daemon says nothing. It is
// a pure function.
func BelowServer(chain, daemon []agentproc.Process, servers map[int]string) Insider {
	self := 0
	if len(daemon) > 0 {
		self = daemon[0].PID
	}
	for _, p := range chain {
		if p.PID == self {
			break
		}
		if _, ok := servers[p.PID]; ok {
			return Insider{Server: p.PID}
		}
	}
	return Insider{}
}

// InsiderOf decides whether a process runs inside an agent, given chain,
// the process and its ancestors nearest first (agentproc.Chain), daemon,
// the daemon's own chain, the pids of the daemon's shims with their
// agents, and managed, which says whether a child of the daemon is one
// the daemon started (nil when the daemon is no subreaper: it adopts
// nothing). It is a pure function.
//
// A process below one of the daemon's shims runs inside that agent. A
// process whose chain reaches the daemon through a child the daemon did
// not start (nor is one of its shims) runs below what a dead shim left:
// the daemon is a subreaper, and an agent's commands come to it when their
// shim dies. Otherwise a batty shim in the chain that is not also an
// ancestor of the daemon makes the process an insider of that shim's
// agent (the outermost such shim): another team's agent, or batty chat's.
// A shim that is an ancestor of the daemon itself — a team started from
// inside an agent, e.g. by tests an agent runs — is the daemon's own
// condition and says nothing of the process.
func InsiderOf(chain, daemon []agentproc.Process, shims map[int]string, managed func(pid int) bool) Insider {
	self := 0
	if len(daemon) > 0 {
		self = daemon[0].PID
	}
	own := make(map[int]bool, len(daemon))
	for _, p := range daemon {
		own[p.PID] = true
	}
	var foreign []agentproc.Process
	for i, p := range chain {
		if agent, ok := shims[p.PID]; ok {
			return Insider{Agent: agent, Shim: p.PID}
		}
		if p.PID == self {
			if i > 0 && managed != nil && !managed(chain[i-1].PID) {
				return Insider{Orphan: chain[i-1].PID}
			}
			break // above: the daemon's own ancestors
		}
		if p.Agent != "" && !own[p.PID] {
			foreign = append(foreign, p)
		}
	}
	if s, ok := agentproc.OutermostShim(foreign); ok {
		return Insider{Agent: s.Agent, Shim: s.PID, Foreign: true}
	}
	return Insider{}
}

// OwnInsider decides whether this process, whose chain (agentproc.Chain,
// chainErr when it could not be read) is given, runs inside an agent of the
// project whose .batty directory is dir, for a command acting on the
// project while its team is stopped: the outermost batty shim of the chain
// whose project mark is dir. markEnv is this process's own mark ("" when
// unset). When the chain cannot be read and the process carries the
// project's mark, it may be an agent's command (or what one left): it is
// taken for an insider, with chainErr. It is a pure function.
func OwnInsider(chain []agentproc.Process, chainErr error, markEnv, dir string) (Insider, error) {
	if chainErr != nil {
		if markEnv == dir {
			return Insider{}, fmt.Errorf("this process carries the project's mark (batty started it or one of its parents) and its parents cannot be looked at: %w", chainErr)
		}
		return Insider{}, nil
	}
	var ours []agentproc.Process
	for _, p := range chain {
		if p.Agent != "" && p.Mark == dir {
			ours = append(ours, p)
		}
	}
	if s, ok := agentproc.OutermostShim(ours); ok {
		return Insider{Agent: s.Agent, Shim: s.PID}, nil
	}
	return Insider{}, nil
}

// AgentMay reports whether a process inside an agent may make the control
// request op: only ping and status, which change nothing. Every other
// request — stop, pause, resume, reset, cancel, approve, reject, and any
// unknown one — is the human's. It is a pure function.
func AgentMay(op string) bool {
	return op == OpPing || op == OpStatus
}

// OpPrune names `batty workspace prune` for Refusal; it is no request of
// the control socket.
const OpPrune = "prune"

// opWords says what a request does, for a refusal: "only the human may …".
var opWords = map[string]string{
	OpStop:    "stop the team",
	OpPause:   "pause the team",
	OpResume:  "resume the team or an agent",
	OpReset:   "reset an agent's thread",
	OpCancel:  "cancel messages",
	OpPrune:   "prune an agent's workspace",
	OpApprove: "approve a landing",
	OpReject:  "reject a landing",
	OpConsole: "log in to the console",
	OpRestore: "restore an agent's thread",
	OpFork:    "fork a thread to an agent",
}

// Refusal is the error refusing request op to the process in, whose
// insider check failed with checkErr (nil when it did not), or nil when
// the request may go ahead: requests AgentMay allows always do; the
// others only for a process found outside every agent. It is a pure
// function.
func Refusal(op string, in Insider, checkErr error) error {
	if AgentMay(op) {
		return nil
	}
	what, ok := opWords[op]
	if !ok {
		what = "make the request " + strconv.Quote(op)
	}
	switch {
	case checkErr != nil:
		return fmt.Errorf("refused: cannot tell whether this command runs inside an agent's sandbox (%v); only the human may %s", checkErr, what)
	case in.Agent != "" && in.Foreign:
		return fmt.Errorf("refused: this command runs inside agent %q's sandbox (a batty shim, pid %d, of another team or of batty chat or fanout is among its parent processes); only the human may %s", in.Agent, in.Shim, what)
	case in.Agent != "":
		return fmt.Errorf("refused: this command runs inside agent %q's sandbox (its batty shim, pid %d, is among its parent processes); only the human may %s", in.Agent, in.Shim, what)
	case in.Server != 0:
		return fmt.Errorf("refused: this command runs below the team's shared codex app-server (pid %d), inside one of its agents' sandboxes; only the human may %s", in.Server, what)
	case in.Orphan != 0:
		return fmt.Errorf("refused: this command runs below process %d, which a dead agent's shim left behind; only the human may %s", in.Orphan, what)
	}
	return nil
}
