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
	"github.com/battyhq/batty/shim"
)

func newChatCmd() *cobra.Command {
	var (
		cfg              shim.Config
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
			code, err := runChat(cmd.Context(), cfg, cmd.InOrStdin(), cmd.OutOrStdout(), asJSON, shutdownTimeout)
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
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per event")
	cmd.Flags().DurationVar(&shutdownTimeout, "shutdown-timeout", 30*time.Second, "on Ctrl-C, how long the turn in flight may finish")
	return cmd
}

// runChat drives one shim; it returns the exit code.
func runChat(ctx context.Context, cfg shim.Config, stdin io.Reader, stdout io.Writer, asJSON bool, shutdownTimeout time.Duration) (int, error) {
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
	p, err := shim.Spawn(shim.SpawnOptions{Path: exe, Args: []string{"shim"}, Env: env, Config: cfg, Stderr: os.Stderr})
	if err != nil {
		return 1, err
	}
	out := newEventPrinter(stdout, asJSON)

	events := make(chan protocol.Message)
	go func() {
		defer close(events)
		for {
			m, err := p.Conn.Recv()
			if err != nil {
				return
			}
			events <- m
		}
	}()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdin)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		if err := sc.Err(); err != nil {
			fmt.Fprintln(os.Stderr, "batty chat: reading stdin:", err)
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
			p.Stop(shutdownTimeout)
			for m := range events {
				out.print(m)
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
			if err := shim.CheckBodyLen(line); err != nil {
				// Codex would refuse it: not sent, counted as failed.
				fmt.Fprintf(os.Stderr, "batty chat: %s not sent: %v\n", id, err)
				failed++
				continue
			}
			outstanding[id] = true
			if err := p.Conn.Send(protocol.SendMessage{ID: id, From: shim.HumanSender, Body: line}); err != nil {
				return 1, fmt.Errorf("send message %s: %w", id, err)
			}
		case m, ok := <-events:
			if !ok {
				p.Wait()
				if len(outstanding) > 0 || interrupted {
					fmt.Fprintf(os.Stderr, "batty chat: shim exited (status %d) with %d message(s) unfinished\n", p.ExitCode(), len(outstanding))
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
				p.Conn.Send(protocol.Kill{})
				continue
			}
			interrupted = true
			fmt.Fprintf(os.Stderr, "batty chat: %s: stopping (again to kill)\n", s)
			if err := p.Conn.Send(protocol.Shutdown{Timeout: shutdownTimeout, Reason: "interrupted"}); err != nil && !errors.Is(err, protocol.ErrClosed) {
				p.Kill()
			}
		case <-ctx.Done():
			p.Kill()
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
