package main

import (
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestAlreadyRunningReadsOnce: with the project's daemon lock held, `batty
// start` — and `batty pause`, which finds the lock held once it gives up
// waiting for it — says so once after "batty: ", not "batty: batty is
// already running" or "already running: batty is already running".
func TestAlreadyRunningReadsOnce(t *testing.T) {
	dir, l := writeTeam(t)
	if err := l.MkdirAll(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(l.LockFile(), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "%d\n", os.Getpid())
	want := fmt.Sprintf("batty: already running for this project (pid %d, socket %s); `batty stop` stops it\n", os.Getpid(), l.Socket())
	for _, args := range [][]string{{"start", "--no-tmux"}, {"pause"}} {
		_, errOut, code := runBattyIn(t, dir, nil, "", args...)
		if code != 1 || errOut != want {
			t.Errorf("batty %v: exit %d, stderr %q, want %q", args, code, errOut, want)
		}
	}
}
