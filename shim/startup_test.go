package shim

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/protocol"
)

// runShimWithFD3 runs this binary as a shim with fd3 as its fd 3 (nil: no
// fd 3) and returns its exit code and log.
func runShimWithFD3(t *testing.T, fd3 *os.File) (int, string) {
	t.Helper()
	self, _ := os.Executable()
	cmd := exec.Command(self, "--agent=x")
	cmd.Env = append(os.Environ(), "BATTY_TEST_ROLE=shim")
	if fd3 != nil {
		cmd.ExtraFiles = []*os.File{fd3}
	}
	var log strings.Builder
	cmd.Stderr = &log
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), log.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, log.String()
}

func TestShimRefusesWithoutAControlSocket(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "notasocket")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, fd3 := range map[string]*os.File{"no fd 3": nil, "regular file": f} {
		code, log := runShimWithFD3(t, fd3)
		if code != 2 || !strings.Contains(log, "No control socket on fd 3") {
			t.Errorf("%s: exit %d, log %q", name, code, log)
		}
	}
}

func TestShimRefusesAPeerThatDoesNotSpeakTheHandshake(t *testing.T) {
	conn, remote, err := protocol.Socketpair(protocol.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go func() {
		// Read the shim's hello, answer with something that is not welcome.
		if _, err := conn.Recv(); err == nil {
			conn.Send(protocol.Pong{Nonce: 1})
		}
	}()
	done := make(chan struct{})
	var code int
	var log string
	go func() { code, log = runShimWithFD3(t, remote); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("shim did not give up")
	}
	remote.Close()
	if code != 2 || !strings.Contains(log, "Handshake failed") {
		t.Fatalf("exit %d, log %q", code, log)
	}
}

// The transcript's first line (an agent's pane) names codex's binary, not
// its whole path, which can be long enough to wrap; the path goes to the
// shim's log.
func TestStartNoticeNamesCodexWithoutItsPath(t *testing.T) {
	h := startShim(t, nil)
	tr := h.transcriptAfterStop()
	if !strings.Contains(tr, "shim started for tester") || !strings.Contains(tr, "codex "+filepath.Base(h.cfg.CodexBin)+")") {
		t.Fatalf("the start notice does not name codex's binary: %q", tr)
	}
	if strings.Contains(tr, filepath.Dir(h.cfg.CodexBin)) {
		t.Fatalf("the start notice spells codex's path: %q", tr)
	}
}
