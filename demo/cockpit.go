package demo

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"sync"
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

// tmuxExitLine matches what a tmux client prints on its standard output
// when it leaves: "[server exited]", "[exited]", "[detached (from session
// x)]", "[lost server]"… (its screen goes to the terminal, not to stdout).
var tmuxExitLine = regexp.MustCompile(`^\[(server exited|exited|lost server|detached|terminated|lost tty|server exited unexpectedly)[^\]\n]*\]\r?$`)

// exitFilter is the standard output of the demo's `batty attach`: it
// passes every line on to w but tmux's exit line, which the demo's own
// lines say better. Safe for one writer at a time; Close flushes.
type exitFilter struct {
	w       io.Writer
	mu      sync.Mutex
	partial []byte
}

func (f *exitFilter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.partial = append(f.partial, p...)
	for {
		i := bytes.IndexByte(f.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := f.partial[:i+1]
		if !tmuxExitLine.Match(bytes.TrimSuffix(line, []byte("\n"))) {
			if _, err := f.w.Write(line); err != nil {
				return len(p), err
			}
		}
		f.partial = f.partial[i+1:]
	}
}

// Close writes what is left of a last line without a newline.
func (f *exitFilter) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.partial) == 0 || tmuxExitLine.Match(f.partial) {
		return nil
	}
	_, err := f.w.Write(f.partial)
	f.partial = nil
	return err
}
