package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/shim/shimclient"
	"github.com/battyhq/batty/shim/shimconfig"
	"github.com/battyhq/batty/team"
)

func newChatCmd() *cobra.Command {
	var (
		cfg              shimconfig.Config
		instructionsFile string
		asJSON           bool
		shutdownTimeout  time.Duration
	)
	cmd := &cobra.Command{
		Use:   "chat [flags]",
		Short: "Drive one Codex agent from stdin: one line, one message",
		Long: `chat runs one shim as a child of this process and sends each line of stdin
to it as a message from "human". It prints every event (human-readable, or one
JSON object per line with --json). When stdin ends it waits for every sent
message to finish, shuts the shim down and exits 0 if all completed, 1
otherwise. The codex binary comes from --codex-bin, else "codex" on PATH;
CODEX_HOME and the rest of the environment pass through, so export secrets
such as API keys rather than giving them with --env (a command line is
readable by every local user).`,
		Example: `  echo "list the files here" | batty chat
  batty chat --json --model gpt-5.5 < prompts.txt`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.Agent == "" {
				cfg.Agent = "chat"
			}
			if instructionsFile != "" {
				text, err := readInstructions(instructionsFile)
				if err != nil {
					return err
				}
				cfg.Instructions = text
			}
			code, err := runChat(cmd.Context(), cfg, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), asJSON, shutdownTimeout)
			if err != nil {
				return err
			}
			if code != 0 {
				return exitError{code}
			}
			return nil
		},
	}
	fs := cfg.FlagSet()
	fs.Lookup("agent").DefValue = "chat"
	cmd.Flags().AddFlagSet(fs)
	// Not shim flags: the shim gets these in its handshake, off its command
	// line.
	cmd.Flags().StringArrayVar(&cfg.Env, "env", nil, "extra KEY=VALUE environment for codex (repeatable; visible on this command line, so export secrets instead: the environment passes through)")
	cmd.Flags().StringVar(&instructionsFile, "instructions-file", "", "file with standing instructions, given to codex on every turn")
	cmd.Flags().MarkHidden("output-schema") // batty fanout's --schema
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per event")
	cmd.Flags().DurationVar(&shutdownTimeout, "shutdown-timeout", 30*time.Second, "on Ctrl-C, how long the turn in flight may finish")
	return cmd
}

// runChat drives one shim: the lines of stdin are its messages, its
// events go to stdout, and chat's own notes and the shim's stderr to
// stderr. It returns the exit code once every message is finished (or it
// was interrupted).
func runChat(ctx context.Context, cfg shimconfig.Config, stdin io.Reader, stdout, stderr io.Writer, asJSON bool, shutdownTimeout time.Duration) (int, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	exe, err := os.Executable()
	if err != nil {
		return 1, fmt.Errorf("find the batty binary: %w", err)
	}
	env := os.Environ()
	if os.Getenv("BATTY_LOG_LEVEL") == "" {
		env = append(env, "BATTY_LOG_LEVEL=warn") // keep the terminal for events
	}
	c, err := shimclient.Start(ctx, shimclient.SpawnOptions{Path: exe, Args: []string{"shim"}, Env: env, Config: cfg, Stderr: stderr})
	if err != nil {
		return 1, err
	}
	defer c.Close()
	out := newEventPrinter(stdout, asJSON)

	// Events closes after the shim's last event; c.Err then says why.
	// Anything but io.EOF (the shim exited) means the channel broke, for
	// example on a frame that cannot be decoded, and was closed.
	events := c.Events()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdin)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		if err := sc.Err(); err != nil {
			fmt.Fprintln(stderr, "batty chat: reading stdin:", err)
		}
	}()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)

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
				c.Stop(ctx, shutdownTimeout, "requested")
			}()
			for m := range events {
				out.print(m)
			}
			<-stopped
			if err := channelBroken(c.Err(), len(outstanding)); err != nil {
				return 1, err
			}
			if failed > 0 {
				return 1, nil
			}
			return 0, nil
		}
		select {
		case line, ok := <-lines:
			if !ok {
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
				fmt.Fprintf(stderr, "batty chat: %s not sent: %v\n", id, err)
				failed++
				continue
			}
			outstanding[id] = true
			if err := c.Send(protocol.SendMessage{ID: id, From: team.Human, Body: line}); err != nil {
				return 1, fmt.Errorf("send message %s: %w", id, err)
			}
		case m, ok := <-events:
			if !ok {
				c.Wait()
				if err := channelBroken(c.Err(), len(outstanding)); err != nil {
					return 1, err
				}
				if len(outstanding) > 0 || interrupted {
					fmt.Fprintf(stderr, "batty chat: shim exited (status %d) with %d message(s) unfinished\n", c.ExitCode(), len(outstanding))
					return 1, nil
				}
				return 0, nil
			}
			out.print(m)
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
		case s := <-sigs:
			if interrupted {
				if err := c.Send(protocol.Kill{}); err != nil && !errors.Is(err, protocol.ErrClosed) {
					c.Kill()
				}
				continue
			}
			interrupted = true
			fmt.Fprintf(stderr, "batty chat: %s: stopping (again to kill)\n", s)
			c.BeginStop(shutdownTimeout, "interrupted")
		case <-ctx.Done():
			c.Close()
			return 1, ctx.Err()
		}
	}
}

// readInstructions reads a standing-instructions file: its text without
// surrounding blank space, refused when it is too long to hand to codex.
func readInstructions(path string) (string, error) {
	text, err := codex.ReadInstructions(path)
	if err != nil {
		return "", fmt.Errorf("--instructions-file %s: %w", path, err)
	}
	return text, nil
}

// channelBroken turns the error that ended the shim's event stream into
// the error chat fails with: nil for io.EOF, the shim's clean exit.
func channelBroken(err error, unfinished int) error {
	if err == nil || errors.Is(err, io.EOF) {
		return nil
	}
	return fmt.Errorf("the shim broke the control channel (now closed) with %d message(s) unfinished: %w", unfinished, err)
}
