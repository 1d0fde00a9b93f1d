package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestValidateRejectsBadScheduleEvery(t *testing.T) {
	dir := t.TempDir()
	src := `name: t
roles:
  - name: worker
schedules:
  - name: zero
    to: worker
    prompt: p
    every: 0s
  - name: negative
    to: worker
    prompt: p
    every: -5m
  - name: garbage
    to: worker
    prompt: p
    every: abc
`
	if err := os.WriteFile(filepath.Join(dir, "team.yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runBattyIn(t, dir, nil, "", "validate")
	if code != 1 || out != "" {
		t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	want := []string{
		"team.yaml:8:12: schedule every must be positive, got 0s",
		"team.yaml:12:12: schedule every must be positive, got -5m",
		`team.yaml:16:12: schedule every: invalid duration "abc" (use Go duration syntax, e.g. 90s, 10m or 1h30m)`,
	}
	if got := strings.TrimSuffix(errOut, "\n"); got != strings.Join(want, "\n") {
		t.Fatalf("stderr:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}
