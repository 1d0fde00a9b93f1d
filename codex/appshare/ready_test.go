package appshare

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/codex/appserver"
)

// TestReadyWaitsForTheSession: Ready returns once the real process has
// opened its session, and at once afterwards.
func TestReadyWaitsForTheSession(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, _, _, _ := startBroker(t, ctx, nil)
	if err := b.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	if b.Pid() == 0 || b.Starts() != 1 {
		t.Fatalf("ready, but pid %d, %d starts", b.Pid(), b.Starts())
	}
	if err := b.Ready(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestReadyReportsAFailedStart: a process that cannot open a session (one
// that exits at once) makes Ready return that start's error, long before
// its context ends.
func TestReadyReportsAFailedStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	b, err := Listen(ctx, Options{
		Server: appserver.Options{Bin: "/bin/false", Env: os.Environ(), Cwd: dir},
		Socket: filepath.Join(dir, "s"), Allow: func(int) (string, error) { return "a", nil }, Restart: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	err = b.Ready(ctx)
	if err == nil || !strings.Contains(err.Error(), "did not start") || ctx.Err() != nil {
		t.Fatalf("Ready: %v (context: %v)", err, ctx.Err())
	}
}
