package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/battyhq/batty/cmd/batty/internal/iostreams"
	"github.com/battyhq/batty/fanout"
	"github.com/battyhq/batty/hosts"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/retry"
	"github.com/battyhq/batty/shim/shimconfig"
	"github.com/battyhq/batty/team"
)

// fanoutArgs are the settings of one `batty fanout`.
type fanoutArgs struct {
	csv, instruction, output, schema string
	role, teamFile, instructionsFile string
	accounts                         []string // --accounts: names in the team file
	hosts                            []string // --hosts: names in the team file, or team.LocalHost
	concurrency                      int
	keepGoing                        bool
	maxTokens                        int64
	grace                            time.Duration
	cfg                              shimconfig.Config
	// rowDir, when set, is --cwd naming columns: each row's own working
	// directory, relative to rowBase (the current directory).
	rowDir  *fanout.Template
	rowBase string
}

// fanoutCodexFlags are the flags that set codex for the workers; with
// --role the role's settings do instead.
var fanoutCodexFlags = []string{"cwd", "codex-bin", "model", "reasoning-effort", "sandbox", "approval-policy",
	"add-dir", "codex-config", "codex-arg", "env", "instructions-file"}

func newFanoutCmd(f *Factory) *cobra.Command {
	var a fanoutArgs
	cmd := &cobra.Command{
		Use:   "fanout --csv IN --instruction TEXT --output OUT [flags]",
		Short: "Run one instruction over every row of a CSV file, a fresh Codex thread per row",
		Long: `fanout runs the instruction once per row of the CSV file IN (which needs a
header line), on a fresh Codex thread each time, at most --concurrency rows at
once. {column} in the instruction is the row's value of that column; {{ and }}
are literal braces. Each row must answer with one JSON object (with --schema,
one matching that JSON Schema: codex --output-schema).

OUT gets the input columns plus status (done, failed or pending), result (the
JSON object), error, thread_id, tokens and duration_s, one line per input row
in input order. Each row is recorded durably as it finishes (in OUT.journal
until the job ends), so an interrupted or killed job loses at most the rows
running; run the same command again and the rows already done are skipped,
failed and pending ones run. Failures that may pass (server errors, dropped
streams, timeouts) are retried as for team messages; a usage limit holds new
rows back until the reset and the job goes on by itself. --max-tokens stops
starting rows once the job's recorded usage (OUT's tokens, earlier runs
included) reaches that many tokens. When the first 5 rows to finish all fail
with the same error (a wrong instruction, no login), no more rows start: the
running ones finish, the summary names the error and how many rows were not
started, and the same command runs the rest once the cause is fixed;
--keep-going runs every row anyway. The summary names the most common error
of the failed rows.

Codex settings come from a role of the team file (--role) or from the same
flags as batty chat. --accounts work,spare runs the rows on those accounts of
the team file (--team, or the team file found as for --role), in order of
preference: on the first with quota left; when its usage limit is hit, the
rows go on on the next one within seconds, and go back to the preferred one
once its reset has come and one row got through there. Only when every
listed account is at its limit do new rows wait, until the earliest reset.
Without --accounts, a --role whose role lists accounts uses those.
--hosts build1,pod1 runs the workers on those hosts of the team file, taken
in turn by worker number (local is this machine). batty is installed on each
host and its Codex checked there first; a host that fails is left out, with a
line saying why, and with no host left the job stops (exit 1) with each
host's problem and fix. The workers run in the host's project directory
(its dir); replies come back whole and OUT is written here. Accounts are not
supported on hosts yet, and a --schema file must lie in the project.

By default (--runtime app-server) every row is a thread of one warm, shared
codex app-server per account, started before the first row; each row keeps
its own working directory, sandbox and environment, its thread is not saved
(ephemeral), and a crash of that process is noticed at once, the process
started again and the rows that were running on it retried once, not
counted. --runtime exec runs a codex exec per row (each thread saved); it is
the default when --hosts names another host or a --codex-arg (or the role's
codex.args) is a flag only codex exec takes, and what the job falls back to
when the app-server cannot start. The summary line names the runtime.
--cwd may name columns ('work/{repo}'): each row then runs in that
directory of its own, which must exist.

Ctrl-C stops starting rows and lets running ones finish for
--shutdown-timeout; a second Ctrl-C stops them at once.

Exit status: 0 every row done, 1 a row failed, the job stopped or no host
could run it, 2 usage (bad flags, an unknown host, an unreadable or invalid
CSV file, a placeholder naming no column, an OUT that is not a fanout output
of this input).`,
		Example: `  batty fanout --csv repos.csv --instruction "Summarise the README of {repo} as {{\"summary\": ...}}" --output out.csv
  batty fanout --csv issues.csv --instruction "Triage issue {id}: {title}" --schema triage.json --output triage.csv --role triager -c 16
  batty fanout --csv big.csv --instruction "..." --output out.csv --max-tokens 2000000
  batty fanout --csv big.csv --instruction "..." --output out.csv --accounts work,spare
  batty fanout --csv big.csv --instruction "..." --output out.csv --hosts build1,pod1,local -c 12`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runFanoutCmd(cmd, f, a)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&a.csv, "csv", "", "input CSV file with a header line (required)")
	fl.StringVar(&a.instruction, "instruction", "", "the instruction for each row; {column} is the row's value (required)")
	fl.StringVarP(&a.output, "output", "o", "", "output CSV file; rows done in it are skipped (required)")
	fl.IntVarP(&a.concurrency, "concurrency", "c", fanout.DefaultConcurrency, fmt.Sprintf("rows running at once (1 to %d)", fanout.MaxConcurrency))
	fl.StringVar(&a.schema, "schema", "", "JSON Schema file each row's answer must match (codex --output-schema)")
	fl.Int64Var(&a.maxTokens, "max-tokens", 0, "stop starting rows once the job's recorded usage, earlier runs included, reaches this many tokens (0: no limit)")
	fl.BoolVar(&a.keepGoing, "keep-going", false, fmt.Sprintf("run every row even when the first %d rows to finish all fail with the same error", fanout.SameErrorRows))
	fl.StringVar(&a.role, "role", "", "take codex settings from this role of the team file")
	addTeamFlags(cmd, &a.teamFile, true) // the team of --role, --accounts and --hosts
	fl.StringSliceVar(&a.hosts, "hosts", nil, "run the workers on these hosts of the team file, taken in turn by worker number (local: this machine)")
	fl.StringSliceVar(&a.accounts, "accounts", nil, "run rows on these accounts of the team file, in order of preference, moving on when one hits its usage limit (default: the --role's accounts)")
	fl.DurationVar(&a.grace, "shutdown-timeout", fanout.DefaultGrace, "on Ctrl-C, how long running rows may finish")
	fs := a.cfg.FlagSet()
	for _, name := range []string{"agent", "thread-id", "thread-usage", "queue-depth", "transcript", "transcript-root", "output-schema", "pressure-pct", "ephemeral-threads", "app-server-socket"} {
		fs.Lookup(name).Hidden = true
	}
	fs.Lookup("runtime").Usage = "how rows run: app-server (every row a thread of one shared codex app-server per account; the default unless --hosts names another host) or exec (a codex exec per row)"
	fs.Lookup("cwd").Usage = "working directory for codex; {column} gives each row a directory of its own (which must exist), relative to the current one"
	fl.AddFlagSet(fs)
	fl.StringArrayVar(&a.cfg.Env, "env", nil, "extra KEY=VALUE environment for codex (repeatable; visible on this command line, so export secrets instead: the environment passes through)")
	fl.StringVar(&a.instructionsFile, "instructions-file", "", "file with standing instructions, given to codex on every row")
	return cmd
}

// runFanoutCmd checks the command line and the files, then runs the job.
func runFanoutCmd(cmd *cobra.Command, f *Factory, a fanoutArgs) error {
	ios := f.IOStreams
	for _, req := range []struct{ name, v string }{{"--csv", a.csv}, {"--instruction", a.instruction}, {"--output", a.output}} {
		if req.v == "" {
			return usageError(cmd, "%s is required", req.name)
		}
	}
	if a.concurrency < 1 || a.concurrency > fanout.MaxConcurrency {
		return usageError(cmd, "--concurrency %d: want 1 to %d (each row in flight has a shim of its own)", a.concurrency, fanout.MaxConcurrency)
	}
	if a.maxTokens < 0 {
		return usageError(cmd, "--max-tokens %d must not be negative", a.maxTokens)
	}
	in, err := os.Open(a.csv)
	if err != nil {
		return usageError(cmd, "--csv: %v", err)
	}
	table, err := fanout.ReadTable(in)
	in.Close()
	if err != nil {
		return usageError(cmd, "--csv %s: %v", a.csv, err)
	}
	tmpl, err := fanout.ParseTemplate(a.instruction, table.Columns)
	if err != nil {
		return usageError(cmd, "--instruction: %v", err)
	}
	pol := fanoutPolicy{attempts: fanout.DefaultMaxAttempts, quota: retry.DefaultQuotaPolicy()}
	var teamCfg *team.Config
	var accounts []team.Account
	if a.role != "" {
		if teamCfg, accounts, err = roleSettings(cmd, f, &a, &pol); err != nil {
			return err
		}
	} else {
		if a.teamFile != "" && !cmd.Flags().Changed("accounts") && !cmd.Flags().Changed("hosts") {
			return usageError(cmd, "--team names the team file of --role, --accounts and --hosts: give one of them too")
		}
		if a.instructionsFile != "" {
			if a.cfg.Instructions, err = readInstructions(a.instructionsFile); err != nil {
				return usageError(cmd, "%v", err)
			}
		}
	}
	if cmd.Flags().Changed("accounts") {
		if teamCfg == nil {
			if _, teamCfg, err = f.Team(a.teamFile); err != nil {
				return usageError(cmd, "--accounts: %v", err)
			}
		}
		if accounts, err = pickAccounts(teamCfg, a.accounts); err != nil {
			return usageError(cmd, "--accounts: %v", err)
		}
	}
	for _, acct := range accounts {
		pol.accounts = append(pol.accounts, acct.Name)
		pol.homes = append(pol.homes, acct.CodexHome)
	}
	var on fanoutHosts
	if cmd.Flags().Changed("hosts") {
		if len(accounts) > 0 {
			return usageError(cmd, "--hosts: accounts are not supported on hosts yet; drop --accounts (or use a --role without accounts)")
		}
		proj, err := f.Project(a.teamFile)
		if err == nil && teamCfg == nil {
			_, teamCfg, err = f.Team(a.teamFile)
		}
		if err != nil {
			return usageError(cmd, "--hosts: %v", err)
		}
		if on.list, err = pickHosts(teamCfg, a.hosts); err != nil {
			return usageError(cmd, "--hosts: %v", err)
		}
		on.root = proj.Layout.Root()
	}
	if a.role == "" && strings.Contains(a.cfg.Cwd, "{") {
		dir, err := fanout.ParseTemplate(a.cfg.Cwd, table.Columns)
		if err != nil {
			return usageError(cmd, "--cwd: %v", err)
		}
		if on.remote() {
			return usageError(cmd, "--cwd %s: a row's own working directory is not supported on other hosts yet; drop the {column} or --hosts", a.cfg.Cwd)
		}
		if a.rowBase, err = os.Getwd(); err != nil {
			return fmt.Errorf("the current directory: %w", err)
		}
		if dir.HasColumns() {
			a.rowDir, a.cfg.Cwd = dir, ""
		} else {
			a.cfg.Cwd = dir.Render(nil) // {{ and }} were literal braces
		}
	}
	if a.schema != "" {
		abs, err := checkSchema(a.schema)
		if err != nil {
			return usageError(cmd, "--schema: %v", err)
		}
		if on.remote() && !hosts.InProject(on.root, abs) {
			return usageError(cmd, "--schema %s: with --hosts the schema file must lie inside the project directory %s (the hosts have the project directory only)", a.schema, on.root)
		}
		a.cfg.Exec.OutputSchema = abs
	}
	execOnly := execOnlyArgs(a.cfg.Exec.ExtraArgs)
	switch {
	case !cmd.Flags().Changed("runtime"):
		a.cfg.Runtime = defaultFanoutRuntime(on.remote(), len(execOnly) > 0)
	case a.cfg.Runtime == shimconfig.RuntimeAppServer && len(execOnly) > 0:
		return usageError(cmd, "--runtime app-server: codex app-server does not take the codex exec arguments %s (--codex-arg, or the role's codex.args): drop them or use --runtime exec", strings.Join(execOnly, " "))
	}
	a.cfg.Agent = "fanout"
	if err := checkShimConfig(a.cfg); err != nil {
		return usageError(cmd, "%v", err)
	}
	store, err := fanout.OpenStore(a.output, table)
	if err != nil {
		return usageError(cmd, "--output: %v", err)
	}
	code, err := runFanout(cmd.Context(), ios, a, table, tmpl, store, pol, on)
	if err != nil {
		return err
	}
	if code != 0 {
		return exitError{code}
	}
	return nil
}

// fanoutPolicy is the retry and quota policy of a job: the team file's
// with --role, else the defaults of one; and the accounts its rows run on
// (names and CODEX_HOMEs, in order of preference; none: the workers' own
// environment's).
type fanoutPolicy struct {
	attempts int
	quota    retry.QuotaPolicy
	accounts []string
	homes    []string
}

// fanoutHosts are the hosts of --hosts, in its order (a zero team.Host is
// this machine), and the project directory here; no list: every worker
// here.
type fanoutHosts struct {
	list []team.Host
	root string
}

// remote reports whether a worker may run on another host.
func (h fanoutHosts) remote() bool {
	return slices.ContainsFunc(h.list, func(h team.Host) bool { return h.Name != "" })
}

// pickHosts returns the hosts of cfg that names lists, in its order,
// team.LocalHost as a zero team.Host (this machine): an error names an
// unknown or repeated name, and the team's hosts. It is a pure function.
func pickHosts(cfg *team.Config, names []string) ([]team.Host, error) {
	known := []string{team.LocalHost}
	for _, h := range cfg.Hosts {
		known = append(known, h.Name)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("name at least one host of %s (its hosts: %s)", cfg.Path, strings.Join(known, ", "))
	}
	var out []team.Host
	for i, n := range names {
		h, ok := cfg.Host(n)
		switch {
		case slices.Contains(names[:i], n):
			return nil, fmt.Errorf("host %q is listed twice", n)
		case n == team.LocalHost:
			out = append(out, team.Host{})
		case !ok:
			return nil, fmt.Errorf("unknown host %q: the hosts of %s are %s", n, cfg.Path, strings.Join(known, ", "))
		default:
			out = append(out, h)
		}
	}
	return out, nil
}

// pickAccounts returns the accounts of cfg that names lists, in its order:
// an error names an unknown or repeated name, and the team's accounts. It
// is a pure function.
func pickAccounts(cfg *team.Config, names []string) ([]team.Account, error) {
	known := make([]string, len(cfg.Accounts))
	for i, acct := range cfg.Accounts {
		known[i] = acct.Name
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("name at least one account of %s (its accounts: %s)", cfg.Path, orNone(known))
	}
	var out []team.Account
	for _, n := range names {
		i := slices.Index(known, n)
		switch {
		case i < 0:
			return nil, fmt.Errorf("unknown account %q: the accounts of %s are %s", n, cfg.Path, orNone(known))
		case slices.ContainsFunc(out, func(acct team.Account) bool { return acct.Name == n }):
			return nil, fmt.Errorf("account %q is listed twice", n)
		}
		out = append(out, cfg.Accounts[i])
	}
	return out, nil
}

// orNone joins names with commas, or says there are none.
func orNone(names []string) string {
	if len(names) == 0 {
		return "none (define them in its top-level accounts list)"
	}
	return strings.Join(names, ", ")
}

// checkShimConfig validates the workers' settings as a shim would.
func checkShimConfig(c shimconfig.Config) error {
	probe := c
	if _, err := shimconfig.ParseArgs(probe.Args()); err != nil {
		return err
	}
	return probe.Validate()
}

// checkSchema returns the schema file's absolute path once it holds a
// JSON Schema that strict structured output accepts (fanout.CheckSchema;
// codex reads the file from the workers' directory).
func checkSchema(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(abs)
	if err != nil {
		return "", err
	}
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil {
		return "", fmt.Errorf("%s is not a JSON Schema (a JSON object): %v", path, err)
	}
	if err := fanout.CheckSchema(obj); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return abs, nil
}

// runFanout runs the job (fanout.Job.Run) with signals wired up: the
// first SIGINT, SIGTERM or SIGHUP (a closed terminal, which would
// otherwise end batty at once) stops starting rows, the second kills the
// running ones (Job.Interrupts). Its progress, notes and log, and the workers' stderr, go
// to ios.ErrOut (a live line when that is a terminal). It returns the exit
// code.
func runFanout(parent context.Context, ios *iostreams.IOStreams, a fanoutArgs, table *fanout.Table, tmpl *fanout.Template, store *fanout.Store, pol fanoutPolicy, on fanoutHosts) (int, error) {
	if parent == nil {
		parent = context.Background()
	}
	exe, err := os.Executable()
	if err != nil {
		store.Close()
		return 1, fmt.Errorf("find the batty binary: %w", err)
	}
	env := os.Environ()
	if os.Getenv("BATTY_LOG_LEVEL") == "" {
		env = append(env, "BATTY_LOG_LEVEL=warn")
	}
	level := hclog.LevelFromString(os.Getenv("BATTY_LOG_LEVEL"))
	if level == hclog.NoLevel {
		level = hclog.Warn
	}
	job := fanout.Job{
		Engine: fanout.Options{
			Table: table, Template: tmpl, Schema: a.schema != "", Store: store,
			Concurrency: a.concurrency, MaxTokens: a.maxTokens, MaxAttempts: pol.attempts, Quota: pol.quota, Accounts: pol.accounts,
			KeepGoing: a.keepGoing, Grace: a.grace, Cwd: a.rowDir, CwdBase: a.rowBase,
		},
		Output:   a.output,
		Workers:  fanout.ShimWorkers{Path: exe, Args: []string{"shim"}, Env: env, Config: a.cfg, Stderr: ios.ErrOut, Homes: pol.homes, RowDirs: a.rowDir != nil},
		Hosts:    on.list,
		Progress: fanout.NewProgress(ios.ErrOut, ios.IsStderrTTY()),
		Notes:    ios.ErrOut,
		Log:      hclog.New(&hclog.LoggerOptions{Name: "fanout", Level: level, Output: ios.ErrOut}),
	}
	job.Progress.Width = ios.ErrWidth
	if a.cfg.Runtime == shimconfig.RuntimeAppServer {
		job.Shared = &fanout.SharedSetup{Config: a.cfg, Env: env, Homes: pol.homes, Log: job.Log}
	}
	if len(on.list) > 0 {
		if job.HostSetup, err = hostSetup(a.cfg, on); err != nil {
			store.Close()
			return 1, err
		}
	}

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	job.Interrupts = sigs
	sum, err := job.Run(parent)
	if err != nil {
		return 1, err
	}
	if !sum.Complete() {
		return 1, nil
	}
	return 0, nil
}

// defaultFanoutRuntime is the runtime of a job whose command line names
// none: the shared app-server, unless a worker may run on another host
// (whose rows would each need an app-server of their own there) or codex
// gets arguments only codex exec takes (execOnly): exec. Pure.
func defaultFanoutRuntime(remote, execOnly bool) string {
	if remote || execOnly {
		return shimconfig.RuntimeExec
	}
	return shimconfig.RuntimeAppServer
}

// execOnlyArgs returns the extra codex arguments that are not config
// overrides (-c K=V, --config K=V, -c=K=V, --config=K=V): flags of codex
// exec, which the app-server does not take. Pure.
func execOnlyArgs(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case (a == "-c" || a == "--config") && i+1 < len(args):
			i++
		case strings.HasPrefix(a, "-c=") || strings.HasPrefix(a, "--config="):
		default:
			out = append(out, a)
		}
	}
	return out
}

// hostSetup is how the job readies the hosts of on: batty's own binary to
// install there, this machine's project, working and home directories.
func hostSetup(cfg shimconfig.Config, on fanoutHosts) (fanout.HostSetup, error) {
	setup := fanout.HostSetup{Transport: &hosts.Transport{}, Root: on.root, Home: localHomeDir(), Config: cfg}
	var err error
	if setup.Cwd, err = os.Getwd(); err != nil {
		return setup, fmt.Errorf("the workers' directory: %w", err)
	}
	if setup.Batty, err = hosts.Self(versionString(), protocol.Version); err != nil {
		return setup, err
	}
	return setup, nil
}

// localHomeDir is the home directory here, "" when unknown.
func localHomeDir() string {
	h, _ := os.UserHomeDir()
	return h
}

// roleSettings fills the workers' codex settings, timeouts and retry policy
// from --role's role in the team file, and returns the team and the
// role's accounts.
func roleSettings(cmd *cobra.Command, f *Factory, a *fanoutArgs, pol *fanoutPolicy) (*team.Config, []team.Account, error) {
	var given []string
	cmd.Flags().Visit(func(f *pflag.Flag) {
		for _, n := range fanoutCodexFlags {
			if f.Name == n {
				given = append(given, "--"+n)
			}
		}
	})
	if len(given) > 0 {
		return nil, nil, usageError(cmd, "%s: with --role the codex settings come from the role in the team file; drop %s or --role", strings.Join(given, ", "), map[bool]string{true: "them", false: "it"}[len(given) > 1])
	}
	_, cfg, err := f.Team(a.teamFile)
	if err != nil {
		return nil, nil, usageError(cmd, "--role: %v", err)
	}
	var agent *team.Agent
	for _, ag := range cfg.Agents() {
		if ag.Role == a.role {
			agent = &ag
			break
		}
	}
	if agent == nil {
		var roles []string
		for _, r := range cfg.Roles {
			roles = append(roles, r.Name)
		}
		return nil, nil, usageError(cmd, "--role %q: no such role in %s; roles: %s", a.role, cfg.Path, strings.Join(roles, ", "))
	}
	applyRole(&a.cfg, *agent)
	t := cfg.Timeouts
	setIfUnset(cmd, "turn-timeout", &a.cfg.TurnTimeout, t.Turn)
	setIfUnset(cmd, "idle-timeout", &a.cfg.IdleTimeout, t.Idle)
	setIfUnset(cmd, "network-wait", &a.cfg.NetworkWait, t.NetworkWait)
	pol.attempts = cfg.MaxAttempts
	pol.quota.BackoffMax = max(cfg.Quota.BackoffMax, pol.quota.BackoffMin)
	pol.quota.Cooldown, pol.quota.CooldownMax = cfg.Quota.Cooldown, cfg.Quota.CooldownMax
	return cfg, agent.Accounts, nil
}

// setIfUnset sets *d to v unless the flag was given.
func setIfUnset(cmd *cobra.Command, flag string, d *time.Duration, v time.Duration) {
	if !cmd.Flags().Changed(flag) && v > 0 {
		*d = v
	}
}
