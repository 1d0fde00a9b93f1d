package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/battyhq/batty/chat"
	"github.com/battyhq/batty/codex"
	"github.com/battyhq/batty/shim/shimclient"
	"github.com/battyhq/batty/shim/shimconfig"
)

func newChatCmd(f *Factory) *cobra.Command {
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
			code, err := runChat(cmd.Context(), cfg, f.IOStreams.In, f.IOStreams.Out, f.IOStreams.ErrOut, asJSON, shutdownTimeout)
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

// runChat drives one shim (chat.Session.Run) with the batty binary as the
// shim and SIGINT and SIGTERM as its interrupts: the lines of stdin are its
// messages, its events go to stdout, and chat's own notes and the shim's
// stderr to stderr. It returns the exit code once every message is
// finished (or it was interrupted).
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
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	s := chat.Session{
		Spawn:           shimclient.SpawnOptions{Path: exe, Args: []string{"shim"}, Env: env, Config: cfg, Stderr: stderr},
		Event:           newEventPrinter(stdout, asJSON).print,
		Notes:           stderr,
		Interrupts:      sigs,
		ShutdownTimeout: shutdownTimeout,
	}
	ok, err := s.Run(ctx, stdin)
	if err != nil {
		return 1, err
	}
	if !ok {
		return 1, nil
	}
	return 0, nil
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
