package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/battyhq/batty/outbox"
	"github.com/battyhq/batty/project"
)

// With no daemon to answer, a recall inside an agent ends with an error
// that says the team must be running, and its request is withdrawn: a
// daemon started later does not answer nobody.
func TestAskRecallWithoutADaemon(t *testing.T) {
	l := project.Layout{Dir: filepath.Join(t.TempDir(), "state")}
	if err := os.MkdirAll(l.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cmd := &cobra.Command{}
	cmd.SetContext(ctx)
	err := askRecall(cmd, l, "eng", outbox.Recall{Search: "zanzibar"})
	if err == nil || !strings.Contains(err.Error(), "is the team running") {
		t.Fatalf("askRecall = %v", err)
	}
	names, _ := os.ReadDir(filepath.Join(outbox.Path(l.Dir, "eng"), outbox.SubNew))
	if len(names) != 0 {
		t.Fatalf("the request stays in the outbox: %v", names)
	}
}
