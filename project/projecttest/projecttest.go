// Package projecttest keeps the tests' state directories out of the
// user's: a test binary's TestMain runs its tests with a state home of
// their own.
package projecttest

import (
	"fmt"
	"os"

	"github.com/battyhq/batty/project"
)

// Isolated runs run (m.Run, or a wrapper of it) with $BATTY_STATE_HOME pointing at a new temporary
// directory, unless it is set already (scripts/test.sh sets one for the
// whole run), and removes the directory afterwards; it returns run's code. Processes the tests start inherit the variable. Call it from
// TestMain once, before any test runs.
func Isolated(run func() int) int {
	if os.Getenv(project.EnvStateHome) != "" {
		return run()
	}
	dir, err := os.MkdirTemp("", "batty-state-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "projecttest:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := os.Setenv(project.EnvStateHome, dir); err != nil {
		fmt.Fprintln(os.Stderr, "projecttest:", err)
		return 1
	}
	return run()
}
