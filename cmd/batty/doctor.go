package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/battyhq/batty/control"
	"github.com/battyhq/batty/doctor"
	"github.com/battyhq/batty/hosts"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/safetext"
	"github.com/battyhq/batty/sandbox"
	"github.com/battyhq/batty/team"
)

func newDoctorCmd(f *Factory) *cobra.Command {
	var teamFile string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor [-f team.yaml] [--json]",
		Short: "Check that this machine can run the team: Codex, logins, sandbox, tools, disk, memory, hosts",
		Long: `doctor checks whether this machine can run the team of the team file (found as
batty start finds it; without one, the default codex here): batty's version; for
each way the agents run Codex (each account of a role too), the binary, its
version (one of those batty is tested with, or a warning) and the login of its
CODEX_HOME; that Codex's sandbox runs a command here; git and tmux; free disk and
memory against the team's needs; each host its agents run on, reachable with
batty and codex there (batty is installed there as batty start would); and,
while the team runs, each shared app-server (codex.app_server: per-account):
its process alive and its broker's socket answering.

It prints one line per check with its result, and for a failure the fix. It
exits 1 when a check fails, 0 otherwise (warnings included).`,
		Example: `  batty doctor
  batty doctor --team ~/src/demo/team.yaml
  batty doctor --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDoctor(cmd, teamFile, asJSON)
		},
	}
	addTeamFlags(cmd, &teamFile, true)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the checks as one JSON object")
	return cmd
}

// doctorReport is `batty doctor --json`'s output.
type doctorReport struct {
	// OK is false when a check failed.
	OK bool `json:"ok"`
	// TeamFile is the team file checked, "" without one.
	TeamFile string         `json:"team_file,omitempty"`
	Checks   []doctor.Check `json:"checks"`
}

// runDoctor is `batty doctor`: the team of teamFile (or the one found
// from here, or none) checked on this machine, printed, exit 1 when a
// check failed.
func runDoctor(cmd *cobra.Command, teamFile string, asJSON bool) error {
	cfg, err := doctorTeam(teamFile)
	if err != nil {
		return err
	}
	wd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("doctor: %w", err)
	}
	o := doctor.Options{Dir: wd, Home: localHomeDir()}
	if cfg != nil {
		o.Dir = cfg.Dir
	}
	if o.Batty, err = hosts.Self(versionString(), protocol.Version); err != nil {
		o.Batty = hosts.Binary{Version: fmt.Sprintf("batty %s (protocol %d)", versionString(), protocol.Version)}
	}
	o.SandboxHomes = sandboxHomes()
	if cfg != nil {
		o.Shared = runningShared(cfg)
	}
	checks := doctor.Decide(doctor.Gather(cmd.Context(), cfg, o))
	rep := doctorReport{OK: !doctor.Failed(checks), Checks: checks}
	if cfg != nil {
		rep.TeamFile = cfg.Path
	}
	out := cmd.OutOrStdout()
	if asJSON {
		b, err := json.Marshal(rep)
		if err != nil {
			return fmt.Errorf("doctor: %w", err)
		}
		fmt.Fprintf(out, "%s\n", b)
	} else {
		printDoctor(out, rep)
	}
	if !rep.OK {
		return exitError{1}
	}
	return nil
}

// runningShared are the shared app-servers of cfg's team as its running
// daemon's status names them; none when the daemon does not run or does
// not answer (doctor checks the machine either way).
func runningShared(cfg *team.Config) []doctor.SharedFacts {
	l, err := project.LayoutFor(cfg.Path)
	if err != nil {
		return nil
	}
	resp, err := control.Call(l, control.Request{Op: control.OpStatus}, 10*time.Second)
	if err != nil || resp.Status == nil {
		return nil
	}
	return doctor.SharedFromStatus(resp.Status.Agents)
}

// doctorTeam is the team doctor checks: the explicit team file's, else
// the one found from here up, else none (nil) when there is no team file.
// An invalid team file is an error.
func doctorTeam(teamFile string) (*team.Config, error) {
	path, err := findTeamFile(teamFile)
	switch {
	case teamFile == "" && errors.Is(err, team.ErrNoTeamFile):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return loadTeamFile(path)
}

// sandboxHomes is where the sandbox trials' fresh CODEX_HOMEs go: the
// user's cache directory, where the daemon makes its own.
func sandboxHomes() string {
	return sandbox.HomesIn(filepath.Join(os.TempDir(), "batty-sandbox-homes"))
}

// printDoctor prints one line per check — "ok    codex    eng: codex
// 0.171.0 at …" — with an indented "fix: …" line under a failure or a
// warning that has one, then a summary. Every text is made one safe line
// (it may quote codex's or ssh's output).
func printDoctor(w io.Writer, rep doctorReport) {
	if rep.TeamFile != "" {
		fmt.Fprintf(w, "team file %s\n", safetext.Line(rep.TeamFile, 0))
	} else {
		fmt.Fprintln(w, "no team file here: checking the default codex on this machine")
	}
	counts := map[doctor.Status]int{}
	for _, c := range rep.Checks {
		counts[c.Status]++
		line := safetext.Line(c.Detail, 0)
		if c.Subject != "" {
			line = safetext.Line(c.Subject, 0) + ": " + line
		}
		fmt.Fprintf(w, "%-5s %-8s %s\n", c.Status, c.Name, line)
		if c.Fix != "" {
			fmt.Fprintf(w, "%-5s %-8s fix: %s\n", "", "", safetext.Line(c.Fix, 0))
		}
	}
	var parts []string
	for _, s := range []doctor.Status{doctor.Fail, doctor.Warn, doctor.Skip} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], map[doctor.Status]string{doctor.Fail: "failed", doctor.Warn: "warning(s)", doctor.Skip: "skipped"}[s]))
		}
	}
	switch {
	case !rep.OK:
		fmt.Fprintf(w, "batty doctor: %s; fix what is named above\n", strings.Join(parts, ", "))
	case len(parts) > 0:
		fmt.Fprintf(w, "batty doctor: this machine can run the team (%s)\n", strings.Join(parts, ", "))
	default:
		fmt.Fprintln(w, "batty doctor: this machine can run the team")
	}
}
