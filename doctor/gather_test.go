package doctor

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/hosts"
	"github.com/battyhq/batty/hosts/hoststest"
	"github.com/battyhq/batty/team"
)

// Gather reaches a real host over ssh, installs batty there and checks
// the codex there: the host's line says where batty is, the codex line
// names the version there and the login line the account there.
func TestGatherReachesAHost(t *testing.T) {
	s := hoststest.StartSSHD(t)
	ctl, err := os.MkdirTemp("/tmp", "bd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(ctl) })
	tr := &hosts.Transport{ConfigFile: s.ConfigFile, ControlDir: filepath.Join(ctl, "c")}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		tr.Close(ctx, s.Host)
	})
	fake := filepath.Join(s.Home, "bin", "codex")
	script := "#!/bin/sh\ncase \"$1\" in\n--version) echo codex-cli 0.172.0;;\nlogin) echo 'Logged in using ChatGPT' >&2;;\nesac\n"
	if err := os.MkdirAll(filepath.Dir(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	host := s.Host
	host.Dir = "~"
	root, localHome := t.TempDir(), "/home/someone-here"
	cfg := &team.Config{Dir: root, Hosts: []team.Host{host}, Roles: []team.Role{{Name: "far", Instances: 1, Cwd: root,
		Hosts: []string{host.Name}, Codex: team.CodexSettings{Bin: localHome + "/bin/codex", Sandbox: "workspace-write"}}}}
	b := hosts.Binary{Path: hoststest.Batty(t), Version: hoststest.BattyVersion(t), Key: "dev-doctor", GOOS: runtime.GOOS, GOARCH: runtime.GOARCH}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := Gather(ctx, cfg, Options{Batty: b, Transport: tr, Dir: root, Home: localHome, SandboxHomes: t.TempDir()})
	checks := Decide(f)
	h := find(t, checks, "host", host.Name)
	c := find(t, checks, "codex", "far on host "+host.Name)
	l := find(t, checks, "login", "far on host "+host.Name)
	if h.Status != OK || !strings.Contains(h.Detail, "batty at "+b.RemoteBatty()) ||
		c.Status != Warn || !strings.Contains(c.Detail, "codex 0.172.0 at "+fake) || !strings.Contains(c.Detail, strings.Join(codex.TestedVersions, ", ")) ||
		l.Status != OK || !strings.Contains(l.Detail, "logged in") {
		t.Fatalf("host %+v\ncodex %+v\nlogin %+v", h, c, l)
	}
	if len(f.Sandbox) != 0 {
		t.Errorf("an agent on a host tried the sandbox here: %+v", f.Sandbox)
	}
}
