package reap

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A command's exit status comes back; what it left in its group is killed
// once it has exited; a cancelled context kills the whole group.
func TestRunGroup(t *testing.T) {
	if err := RunGroup(context.Background(), exec.Command("sh", "-c", "exit 3"), nil); err == nil {
		t.Fatal("exit 3 passed")
	} else if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("err %v, want exit status 3", err)
	}

	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd := exec.Command("sh", "-c", `sleep 300 & echo $! > "$0"`, pidFile)
	if err := RunGroup(context.Background(), cmd, nil); err != nil {
		t.Fatalf("a command that left a child: %v", err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	left, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if fd, err := OpenPidfd(left); err == nil {
		defer fd.Close()
		if !fd.WaitExit(time.Now().Add(10 * time.Second)) {
			fd.Kill()
			t.Fatal("the command's leftover in its group outlived it")
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if err := RunGroup(ctx, exec.Command("sleep", "300"), nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if time.Since(start) > time.Minute {
		t.Fatal("a cancelled command ran on")
	}
	if err := RunGroup(context.Background(), exec.Command("/nonexistent/cmd"), nil); err == nil || !strings.Contains(err.Error(), "start") {
		t.Fatalf("a command that cannot start: %v", err)
	}
}

// ExitCode reads a status as it is, a death by signal and no run at all
// as -1.
func TestExitCode(t *testing.T) {
	run := func(script string) *os.ProcessState {
		cmd := exec.Command("sh", "-c", script)
		cmd.Run()
		return cmd.ProcessState
	}
	for _, tc := range []struct {
		name string
		ps   *os.ProcessState
		want int
	}{
		{"status 0", run("exit 0"), 0},
		{"status 3", run("exit 3"), 3},
		{"killed", run("kill -9 $$"), -1},
		{"never ran", nil, -1},
	} {
		if got := ExitCode(tc.ps); got != tc.want {
			t.Errorf("%s: ExitCode = %d, want %d", tc.name, got, tc.want)
		}
	}
}
