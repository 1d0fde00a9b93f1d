package hosts

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runningProgramChild is set in the environment of the copy of the test
// binary that TestRunningProgramIsTheFileThatRuns starts.
const runningProgramChild = "BATTY_TEST_RUNNING_PROGRAM_CHILD"

func init() {
	if os.Getenv(runningProgramChild) == "" {
		return
	}
	// The child: its program's path now names another file (an agent
	// replaced it); print the hash of what RunningProgram reads.
	self, err := os.Executable()
	if err == nil {
		err = os.WriteFile(self+".new", []byte("#!/bin/sh\necho planted\n"), 0o700)
	}
	if err == nil {
		err = os.Rename(self+".new", self)
	}
	if err != nil {
		os.Stderr.WriteString(err.Error())
		os.Exit(2)
	}
	p, err := RunningProgram()
	if err != nil {
		os.Stderr.WriteString(err.Error())
		os.Exit(2)
	}
	sum, err := fileHash(p)
	if err != nil {
		os.Stderr.WriteString(err.Error())
		os.Exit(2)
	}
	os.Stdout.WriteString(sum)
	os.Exit(0)
}

// A batty whose file is replaced while it runs (built inside a project an
// agent writes) still reads, hashes, uploads and starts its shims from
// the program that runs, never from what now lies at its path.
func TestRunningProgramIsTheFileThatRuns(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	copyPath := filepath.Join(t.TempDir(), "batty")
	dst, err := os.OpenFile(copyPath, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o700)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(dst, h), src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	want := hex.EncodeToString(h.Sum(nil))
	cmd := exec.Command(copyPath, "-test.run=^$")
	cmd.Env = append(os.Environ(), runningProgramChild+"=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v (%s)", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != want {
		t.Fatalf("RunningProgram read %s, not the program that runs (%s)", got, want)
	}
}
