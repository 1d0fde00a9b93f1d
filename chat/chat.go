// Package chat drives one shim from lines of text, as `batty chat` does:
// each non-blank line is a message from the human, every event the shim
// sends is handed to the caller, and once the input ends (or the session
// is interrupted) the shim is shut down. The command keeps its flags and
// how events are printed.
package chat

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/shim/shimclient"
	"github.com/battyhq/batty/team"
)

// MaxLine is the longest line of input read as one message, in bytes.
const MaxLine = 16 << 20

// Session is one chat with one shim.
type Session struct {
	// Spawn starts the shim (shimclient.Start); its Stderr gets the
	// shim's logs.
	Spawn shimclient.SpawnOptions
	// Event is told every event of the shim, in order.
	Event func(protocol.Message)
	// Notes gets chat's own lines: a message not sent, a read error, an
	// interrupt, a shim gone with messages unfinished.
	Notes io.Writer
	// Interrupts stop the session: the first shuts the shim down, giving
	// the turn in flight ShutdownTimeout to finish; the next kill it. Nil:
	// none.
	Interrupts <-chan os.Signal
	// ShutdownTimeout is how long the turn in flight may finish when the
	// session stops.
	ShutdownTimeout time.Duration
}

// Run starts the shim and sends it each non-blank line of in as message
// "chat-N" from the human (a line longer than Codex takes is not sent and
// counts as failed). It returns once every message sent has finished and
// the shim has exited after in ended, or the shim has exited after an
// interrupt: ok when every message completed. An error means the shim
// could not start or broke the channel, or ctx ended (which closes the
// shim at once).
func (s Session) Run(ctx context.Context, in io.Reader) (ok bool, err error) {
	c, err := shimclient.Start(ctx, s.Spawn)
	if err != nil {
		return false, err
	}
	defer c.Close()

	// Events closes after the shim's last event; c.Err then says why.
	// Anything but io.EOF (the shim exited) means the channel broke, for
	// example on a frame that cannot be decoded, and was closed.
	events := c.Events()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), MaxLine)
		for sc.Scan() {
			lines <- sc.Text()
		}
		if err := sc.Err(); err != nil {
			fmt.Fprintln(s.Notes, "batty chat: reading stdin:", err)
		}
	}()

	outstanding := map[string]bool{}
	sent, failed := 0, 0
	stdinDone := false
	interrupted := false
	for {
		if stdinDone && len(outstanding) == 0 && !interrupted {
			// Stop returns once the shim has exited; its last events wait
			// in the channel, and Close (deferred) frees the reader should
			// they be more than it holds.
			stopped := make(chan struct{})
			go func() {
				defer close(stopped)
				c.Stop(ctx, s.ShutdownTimeout, "requested")
			}()
			for m := range events {
				s.Event(m)
			}
			<-stopped
			if err := channelBroken(c.Err(), len(outstanding)); err != nil {
				return false, err
			}
			return failed == 0, nil
		}
		select {
		case line, open := <-lines:
			if !open {
				stdinDone, lines = true, nil
				continue
			}
			if strings.TrimSpace(line) == "" {
				continue
			}
			sent++
			id := "chat-" + strconv.Itoa(sent)
			if err := codex.CheckBodyLen(line); err != nil {
				// Codex would refuse it: not sent, counted as failed.
				fmt.Fprintf(s.Notes, "batty chat: %s not sent: %v\n", id, err)
				failed++
				continue
			}
			outstanding[id] = true
			if err := c.Send(protocol.SendMessage{ID: id, From: team.Human, Body: line}); err != nil {
				return false, fmt.Errorf("send message %s: %w", id, err)
			}
		case m, open := <-events:
			if !open {
				c.Wait()
				if err := channelBroken(c.Err(), len(outstanding)); err != nil {
					return false, err
				}
				if len(outstanding) > 0 || interrupted {
					fmt.Fprintf(s.Notes, "batty chat: shim exited (status %d) with %d message(s) unfinished\n", c.ExitCode(), len(outstanding))
					return false, nil
				}
				return true, nil
			}
			s.Event(m)
			switch e := m.(type) {
			case protocol.TurnFinished:
				delete(outstanding, e.MessageID)
				if e.Status != protocol.TurnCompleted {
					failed++
				}
			case protocol.Rejected:
				delete(outstanding, e.ID)
				failed++
			}
		case sig := <-s.Interrupts:
			if interrupted {
				if err := c.Send(protocol.Kill{}); err != nil && !errors.Is(err, protocol.ErrClosed) {
					c.Kill()
				}
				continue
			}
			interrupted = true
			fmt.Fprintf(s.Notes, "batty chat: %s: stopping (again to kill)\n", sig)
			c.BeginStop(s.ShutdownTimeout, "interrupted")
		case <-ctx.Done():
			c.Close()
			return false, ctx.Err()
		}
	}
}

// channelBroken turns the error that ended the shim's event stream into
// the error chat fails with: nil for io.EOF, the shim's clean exit.
func channelBroken(err error, unfinished int) error {
	if err == nil || errors.Is(err, io.EOF) {
		return nil
	}
	return fmt.Errorf("the shim broke the control channel (now closed) with %d message(s) unfinished: %w", unfinished, err)
}
