package doctor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/appserver"
	"github.com/battyhq/batty/codex/appshare"
	"github.com/battyhq/batty/codex/codextest"
)

// Against a real broker of a real `codex app-server`: the process runs
// and the broker answers (it refuses doctor, which is no shim, with its
// error line); once the broker is closed, both facts say what is wrong.
// A pid that is no app-server (this test's) is not taken for one.
func TestGatherSharedAppServer(t *testing.T) {
	bin := codextest.CodexNative(t)
	srv := codextest.NewServer(t)
	home := srv.WriteHome(t)
	dir, err := os.MkdirTemp("", "doctor-appshare-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	env := append(os.Environ(), "CODEX_HOME="+home)
	started := make(chan int, 1)
	b, err := appshare.Listen(context.Background(), appshare.Options{
		Server:  appserver.Options{Bin: bin, Env: env, Cwd: t.TempDir()},
		Socket:  filepath.Join(dir, "s.sock"),
		Allow:   func(int) (string, error) { return "", errors.New("not a shim") },
		OnStart: func(pid int) { started <- pid },
	})
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	select {
	case pid = <-started:
	case <-time.After(time.Minute):
		b.Close()
		t.Fatal("the shared app-server did not start")
	}
	f := gatherShared(SharedFacts{Key: "k", PID: pid, Socket: b.Socket(), Agents: []string{"eng"}})
	if f.Dead != "" || f.Silent != "" {
		b.Close()
		t.Fatalf("a running broker: %+v", f)
	}
	if ch := sharedCheck(f); ch.Status != OK {
		t.Errorf("check %+v", ch)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	f = gatherShared(SharedFacts{Key: "k", PID: pid, Socket: b.Socket(), Agents: []string{"eng"}})
	if !strings.Contains(f.Dead, "is gone") || !strings.Contains(f.Silent, "cannot connect") {
		t.Errorf("a closed broker: %+v", f)
	}
	if ch := sharedCheck(f); ch.Status != Fail {
		t.Errorf("check %+v", ch)
	}
	if d := processDead(os.Getpid()); !strings.Contains(d, "not a codex app-server") {
		t.Errorf("this test's pid: %q", d)
	}
	if d := processDead(0); !strings.Contains(d, "starting it") {
		t.Errorf("pid 0: %q", d)
	}
}
