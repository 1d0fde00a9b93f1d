package orchestrator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/battyhq/batty/eventlog"
	"github.com/battyhq/batty/shim"
	"github.com/battyhq/batty/shim/shimtest"
)

// Environment of the badframeshim role: the agent whose first shim sends
// an undecodable frame, and the file whose creation marks that done.
const (
	envBadFrameAgent = "BATTY_TEST_BADFRAME_AGENT"
	envBadFrameOnce  = "BATTY_TEST_BADFRAME_ONCE"
)

// badFrameShimMain runs as the shim: the first one started for the agent
// named in envBadFrameAgent sends shimtest.NilRetryAt after accepting its
// first message; every other one is a real shim.
func badFrameShimMain(args []string) int {
	if cfg, err := shim.ParseArgs(args); err == nil && cfg.Agent == os.Getenv(envBadFrameAgent) {
		if f, err := os.OpenFile(os.Getenv(envBadFrameOnce), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err == nil {
			f.Close()
			return shimtest.BadFrameMain(args, shimtest.NilRetryAt)
		}
	}
	return shim.Main(args)
}

// A frame the daemon cannot decode (one the msgpack library panics on)
// closes that one shim's channel: the daemon keeps running, the shim is
// handled as crashed and respawned, the message it held is redelivered and
// completes once, and the other agent never notices.
func TestUndecodableFrameClosesOneChannelAndTheShimIsRespawned(t *testing.T) {
	p := newProject(t, `  - name: manager
    talks_to: [eng]
  - name: eng
    talks_to: [manager]
`)
	once := filepath.Join(p.dir, "badframe-sent")
	r := p.start(func(o *Options) {
		o.ShimEnv = append(o.ShimEnv, "BATTY_TEST_ROLE=badframeshim", envBadFrameAgent+"=manager", envBadFrameOnce+"="+once)
	})
	started := r.waitEvent(t, "eng's shim", func(e eventlog.Event) bool { return e.Type == eventlog.EvShimStarted && e.Agent == "eng" })

	id := p.send("manager", "human", "first message")
	exited := r.waitEvent(t, "manager's shim exit", func(e eventlog.Event) bool { return e.Type == eventlog.EvShimExited && e.Agent == "manager" })
	if !strings.Contains(exited.Detail, "control channel broken") || !strings.Contains(exited.Detail, "decode quota_blocked") {
		t.Errorf("shim_exited detail %q does not say the channel broke on quota_blocked", exited.Detail)
	}
	if _, err := os.Stat(once); err != nil {
		t.Fatalf("the bad frame was never sent: %v", err)
	}
	if st := r.finished(t, id); st != "completed" {
		t.Fatalf("status %s after the respawn", st)
	}
	r.waitEvent(t, "redelivery", func(e eventlog.Event) bool {
		return e.Type == eventlog.EvDelivered && e.Message == id && payloadOf[eventlog.Delivered](e).Attempt == 2
	})
	if n := r.count(eventlog.EvTurnFinished, id); n != 1 {
		t.Fatalf("%d outcomes recorded, want 1", n)
	}

	// The daemon and the other agent kept running on the same shim.
	select {
	case err := <-r.done:
		r.done <- err
		t.Fatalf("the daemon ended: %v", err)
	default:
	}
	other := p.send("eng", "human", "still there?")
	if st := r.finished(t, other); st != "completed" {
		t.Fatalf("eng: status %s", st)
	}
	if n := r.count(eventlog.EvShimStarted, "") - r.count(eventlog.EvShimExited, ""); n != 2 {
		t.Errorf("%d shims running, want 2", n)
	}
	if pid, was := r.d.byName["eng"].snapshot().shimPID, payloadOf[eventlog.ShimStarted](started).PID; pid != was {
		t.Errorf("eng's shim is pid %d, was %v", pid, was)
	}
	if r.count(eventlog.EvShimExited, "") != 1 {
		t.Errorf("%d shim exits, want 1 (manager's)", r.count(eventlog.EvShimExited, ""))
	}
}
