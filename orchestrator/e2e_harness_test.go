package orchestrator

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/codextest"
)

// newRealProject is a team whose agents run the real Codex CLI (skipping
// the test where it is not installed) with home as their CODEX_HOME,
// pointing at a mock server. top holds top-level YAML lines written before
// roles; roles are YAML lines under "roles:".
func newRealProject(t *testing.T, home, top, roles string) *testProject {
	t.Helper()
	bin := codextest.CodexNative(t)
	dir := t.TempDir()
	p := &testProject{t: t, dir: dir, fakeLog: filepath.Join(dir, "fake.log"), mark: fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())}
	p.writeTeam(fmt.Sprintf("name: e2e\ncodex:\n  bin: %s\n  codex_home: %s\n  sandbox: danger-full-access\n%sroles:\n%s", bin, home, top, roles))
	return p
}
