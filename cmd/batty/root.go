package main

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/shim"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = ""

// exitError carries a process exit code through cobra.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "batty",
		Short:         "Run a team of Codex agents as one crew",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newVersionCmd(), newShimCmd(), newChatCmd(),
		newStartCmd(), newDaemonCmd(), newStopCmd(), newStatusCmd(), newPauseCmd(true), newPauseCmd(false), newResetCmd())
	root.AddCommand(newSendCmd(), newInboxCmd(), newLogsCmd(), newInitCmd(), newValidateCmd())
	return root
}

// execute runs the CLI and returns the exit code.
func execute(args []string) int {
	root := newRoot()
	root.SetArgs(args)
	err := root.Execute()
	var ee exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	default:
		fmt.Fprintln(os.Stderr, "batty:", err)
		return 1
	}
}

func versionString() string {
	v := version
	if v == "" {
		v = "dev"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
	}
	return v
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print batty's version and protocol version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "batty %s (protocol %d)\n", versionString(), protocol.Version)
			return nil
		},
	}
}

func newShimCmd() *cobra.Command {
	var cfg shim.Config
	cmd := &cobra.Command{
		Use:                "shim",
		Short:              "Run one agent (started by batty with its control socket on fd 3)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			if code := shim.Main(args); code != 0 {
				return exitError{code}
			}
			return nil
		},
	}
	cmd.Flags().AddFlagSet(cfg.FlagSet())
	return cmd
}
