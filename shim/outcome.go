package shim

import (
	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/safetext"
)

// outcome decides how a turn ended. It is a pure function of what the turn
// saw, in this order of evidence: a spawn error, turn.completed,
// turn.failed (classed by its typed error code when the runtime has one,
// else by its message), the shim's own stop, then codex's exit status and
// stderr: codex killed by a signal the shim did not send is FailKilled.
// The message is plain text (safetext.Text: codex's stderr may be
// coloured).
func outcome(r turnResult) (protocol.TurnStatus, protocol.FailureKind, string) {
	status, kind, msg := decideOutcome(r)
	return status, kind, safetext.Text(msg)
}

// decideOutcome is outcome with the message as the evidence gave it.
func decideOutcome(r turnResult) (protocol.TurnStatus, protocol.FailureKind, string) {
	switch {
	case r.spawnErr != nil:
		return protocol.TurnFailed, protocol.FailSpawn, r.spawnErr.Error()
	case r.completed:
		return protocol.TurnCompleted, protocol.FailNone, ""
	case r.failedMsg != "":
		kind := r.failKind
		if kind == protocol.FailNone {
			kind = failureKind(codex.Classify(r.failedMsg))
		}
		if kind == protocol.FailNone {
			kind = protocol.FailStream
		}
		return protocol.TurnFailed, kind, r.failedMsg
	case r.stop == stopNetwork:
		return protocol.TurnFailed, protocol.FailNetwork, r.stopDetail
	case r.stop == stopTimeout:
		return protocol.TurnTimedOut, protocol.FailNone, r.stopDetail
	case r.stop == stopInterrupt:
		msg := r.stopDetail
		if msg == "" {
			msg = "turn interrupted"
		}
		return protocol.TurnInterrupted, protocol.FailNone, msg
	}
	msg := describeExit(r.exitCode, r.stderrTail)
	if r.killed {
		return protocol.TurnFailed, protocol.FailKilled, describeExit(-1, r.stderrTail)
	}
	if kind := failureKind(codex.ClassifyStderr(r.stderrTail)); kind != protocol.FailNone {
		return protocol.TurnFailed, kind, msg
	}
	return protocol.TurnFailed, protocol.FailExit, msg
}

// codeFailure maps the app-server's typed error code (codexErrorInfo, see
// appserver.TurnError) and the HTTP status some codes carry to a failure
// class. FailNone means the code does not decide ("", "other", a code
// that covers several causes, an unknown one): the message is classified
// instead. Pure.
func codeFailure(code string, httpStatus int) protocol.FailureKind {
	switch code {
	case "usageLimitExceeded":
		return protocol.FailQuota
	case "unauthorized":
		return protocol.FailAuth
	case "contextWindowExceeded":
		return protocol.FailContextWindow
	case "serverOverloaded", "internalServerError", "rateLimitExceeded", "flexUnavailable", "policyCapacityUnavailable":
		return protocol.FailStream
	case "httpConnectionFailed", "responseStreamConnectionFailed", "responseStreamDisconnected", "responseTooManyFailedAttempts":
		switch {
		case httpStatus == 401:
			return protocol.FailAuth
		case httpStatus == 0 || httpStatus == 408 || httpStatus >= 500:
			return protocol.FailStream
		}
		// Another 4xx (429 may be a usage limit or a rate limit): the
		// message tells.
	}
	return protocol.FailNone
}

// failureKind maps codex's classification onto the protocol's failure kinds.
func failureKind(f codex.Failure) protocol.FailureKind {
	switch f {
	case codex.FailureQuota:
		return protocol.FailQuota
	case codex.FailureAuth:
		return protocol.FailAuth
	case codex.FailureContextWindow:
		return protocol.FailContextWindow
	case codex.FailureResumeMissing, codex.FailureActiveWriter, codex.FailureArchived:
		return protocol.FailResume
	case codex.FailureTransient:
		return protocol.FailStream
	case codex.FailureInputTooLarge:
		return protocol.FailInputTooLarge
	}
	return protocol.FailNone
}

// lastRequestUse is how much of the window the thread's history fills
// after a turn, from the true size of its last model request as Codex
// recorded it (codex.LastRequest): that request's input plus its output,
// over window (else the window Codex assumes for the model). pct is -1
// when no window is known.
func lastRequestUse(u codex.RequestUsage, window int64) (used int64, pct float64) {
	used = u.Input + u.Output
	if window <= 0 {
		window = u.Window
	}
	if window <= 0 {
		return used, -1
	}
	return used, float64(used) * 100 / float64(window)
}

// contextUse estimates, when Codex's own record of the last request cannot
// be read (lastRequestUse), how much of the window the thread's history fills
// after a turn: ideally the input of the turn's last model request plus its
// output. Codex's JSONL does not give per-request usage (turn.completed
// carries only the thread's running total; its last-request figure is
// dropped), so the estimate is the turn's input divided by its model
// requests — one, plus one per function tool call (command, patch, MCP or
// collaboration tool), each of which sends the history again; hosted tools
// such as web search run inside a request and add none — plus the turn's
// output. With one request it is exact; with several it is their average,
// below the last request's input by what the tool calls added. A turn that
// also compacted the history counts the compaction request's input too.
func contextUse(turn protocol.Usage, extraRequests int, window int64) (used int64, pct float64) {
	if window <= 0 || turn.Input <= 0 {
		return 0, -1
	}
	used = turn.Input/int64(1+extraRequests) + turn.Output
	return used, float64(used) * 100 / float64(window)
}

// transientKind is the kind of a failed turn's failure when trying it
// again may pass by itself: for a FailStream failure, what
// codex.TransientKind makes of its message; TransientNone for every other
// kind. The daemon decides on it (retry.Cause) and never reads the message
// again. It is a pure function.
func transientKind(kind protocol.FailureKind, msg string) protocol.Transient {
	if kind != protocol.FailStream {
		return protocol.TransientNone
	}
	switch codex.TransientKind(msg) {
	case codex.TransientUnreachable:
		return protocol.TransientUnreachable
	case codex.TransientRateLimit:
		return protocol.TransientRateLimit
	case codex.TransientOverloaded:
		return protocol.TransientOverloaded
	case codex.TransientServer:
		return protocol.TransientServer
	case codex.TransientStalled:
		return protocol.TransientStalled
	case codex.TransientDropped:
		return protocol.TransientDropped
	case codex.TransientOther:
		return protocol.TransientOther
	}
	return protocol.TransientNone
}
