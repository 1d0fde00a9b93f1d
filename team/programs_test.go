package team

import (
	"path/filepath"
	"reflect"
	"testing"
)

// Programs lists what batty runs as the user, each with the line that
// sets it, once per line.
func TestPrograms(t *testing.T) {
	cfg, msg, dir := loadString(t, `name: t
on_alert: [./alert.sh, --to, me]
codex:
  bin: ./bin/codex
hosts:
  - name: pod
    command: [kubectl, exec, -i, p, --]
roles:
  - name: a
    instances: 2
  - name: b
    workspace: worktree
  - name: c
    codex:
      bin: codex-nightly
  - name: far
    hosts: [pod]
`)
	if msg != "" {
		t.Fatal(msg)
	}
	bin := filepath.Join(dir, "bin", "codex")
	want := []Program{
		{Key: "on_alert", Line: 2, Argv: []string{filepath.Join(dir, "alert.sh"), "--to", "me"}, Dir: dir},
		{Key: "codex.bin", Line: 4, Argv: []string{bin}, Dir: dir}, // verify's and setup's sandbox; a and b run it too
		{Key: "roles.c.codex.bin", Line: 15, Argv: []string{"codex-nightly"}, Dir: dir},
		{Key: "roles.far.codex.bin", Line: 4, Argv: []string{bin}, Dir: dir, Remote: true},
		{Key: "hosts.pod.command", Line: 6, Argv: []string{"kubectl", "exec", "-i", "p", "--"}, Dir: dir},
	}
	if got := cfg.Programs(); !reflect.DeepEqual(got, want) {
		t.Errorf("Programs:\n got %+v\nwant %+v", got, want)
	}
	// Without a worktree role the team's codex.bin is each role's.
	cfg, _, dir = loadString(t, "name: t\nroles:\n  - name: a\n")
	if got, want := cfg.Programs(), []Program{{Key: "roles.a.codex.bin", Argv: []string{"codex"}, Dir: dir}}; !reflect.DeepEqual(got, want) {
		t.Errorf("Programs:\n got %+v\nwant %+v", got, want)
	}
}
