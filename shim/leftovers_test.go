package shim

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/battyhq/batty/codex/codextest"
	"github.com/battyhq/batty/protocol"
)

// A turn that completes normally does not leave what its model detached
// running until the shim exits: it is killed and reaped before
// TurnFinished, and the next turn's codex is not touched.
func TestCompletedTurnKillsWhatItDetached(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "detached.pid")
	h := startShim(t, nil)
	h.send("d", "scenario:detachdone:"+pidFile)
	h.expect(kAccepted, kState, kStarted, kThread)
	h.finished("d", protocol.TurnCompleted)
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file holds %q", b)
	}
	// Gone already when the turn is reported, not merely dying.
	if codextest.Alive(pid) {
		t.Fatalf("process %d (%s) the completed turn detached is still running", pid, codextest.Cmdline(pid))
	}
	h.expect(kState)
	// The next turn runs to its end, untouched by the cleanup.
	h.send("next", "scenario:slow:1 still here")
	h.expect(kAccepted, kState, kStarted)
	h.finished("next", protocol.TurnCompleted)
}
