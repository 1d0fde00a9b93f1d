package shim

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/battyhq/batty/shim/shimconfig"
)

// close closes every end still held, once, whatever was closed or handed
// over before; a handed-over end stays open for its new owner.
func TestTurnPipesClose(t *testing.T) {
	p, err := openTurnPipes()
	if err != nil {
		t.Fatal(err)
	}
	all := []*os.File{p.stdinR, p.stdinW, p.stdoutR, p.stdoutW, p.stderrR, p.stderrW}
	p.closeChildEnds()
	for _, f := range []*os.File{all[0], all[3], all[5]} {
		if _, err := f.Stat(); !errors.Is(err, os.ErrClosed) {
			t.Errorf("codex's end %s after closeChildEnds: %v", f.Name(), err)
		}
	}
	w := handOver(&p.stdinW)
	p.close()
	p.close() // again: a no-op
	for _, f := range all {
		_, err := f.Stat()
		if f == w {
			if err != nil {
				t.Errorf("the handed-over end %s: %v", f.Name(), err)
			}
			continue
		}
		if !errors.Is(err, os.ErrClosed) {
			t.Errorf("%s after close: %v", f.Name(), err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatalf("close the handed-over end: %v", err)
	}
	if p.stdinR != nil || p.stdinW != nil || p.stdoutR != nil || p.stdoutW != nil || p.stderrR != nil || p.stderrW != nil {
		t.Fatalf("ends still held after close: %+v", p)
	}
}

func TestLimitStop(t *testing.T) {
	c := shimconfig.Config{TurnTimeout: time.Hour, IdleTimeout: 10 * time.Minute, NetworkWait: 30 * time.Minute}
	since := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	quiet := &netWait{}
	waiting := &netWait{since: since, last: "waiting for network"}
	cases := []struct {
		name   string
		l      turnLimit
		w      *netWait
		reason stopReason
		detail string
	}{
		{"turn timeout", limitTurn, quiet, stopTimeout, "turn exceeded the turn timeout of 1h0m0s"},
		{"turn timeout while waiting for the network", limitTurn, waiting, stopNetwork,
			"turn exceeded the turn timeout of 1h0m0s: the API was unreachable since 2030-01-02T03:04:05Z; codex's last notice: waiting for network"},
		{"idle timeout", limitIdle, quiet, stopTimeout, "codex printed nothing for 10m0s (idle timeout)"},
		{"idle timeout while waiting for the network", limitIdle, waiting, stopTimeout, "codex printed nothing for 10m0s (idle timeout)"},
		{"network wait", limitNetwork, waiting, stopNetwork,
			"codex could not reach the API for 30m0s (network_wait): the API was unreachable since 2030-01-02T03:04:05Z; codex's last notice: waiting for network"},
	}
	for _, tc := range cases {
		r, d := limitStop(tc.l, c, tc.w)
		if r != tc.reason || d != tc.detail {
			t.Errorf("%s: %v %q, want %v %q", tc.name, r, d, tc.reason, tc.detail)
		}
	}
}
