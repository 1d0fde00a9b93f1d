package demo

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/battyhq/batty/cockpit"
)

// demoStatusHint is the right side of the demo cockpit's status line.
const demoStatusHint = " Ctrl-C: stop the demo · #{prefix} d: detach · #{prefix} o: next pane "

// cockpitKeysCmds returns the tmux commands that make the demo's cockpit
// answer a Ctrl-C as the demo's terminal would: whichever pane has the
// focus, it sends SIGINT to the demo (pid), which stops everything it
// started; the status line says so. Pure.
func cockpitKeysCmds(pid int) []string {
	return []string{
		"bind-key", "-n", "C-c", "run-shell", "-b", fmt.Sprintf("kill -INT %d", pid),
		";", "set-option", "-g", "status-right", demoStatusHint,
	}
}

// cockpitKeys binds Ctrl-C in the demo project's cockpit (on its private
// tmux server) to interrupting this process.
func cockpitKeys(ctx context.Context, dir string) error {
	bin, err := cockpit.LookTmux()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r := cockpit.ExecRunner{Bin: bin, Socket: cockpit.SocketName(dir)}
	if _, err := r.Run(ctx, cockpitKeysCmds(os.Getpid())...); err != nil {
		return fmt.Errorf("bind Ctrl-C in the demo's cockpit: %w", err)
	}
	return nil
}
