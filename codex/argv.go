package codex

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Sandbox modes accepted by `codex exec -s`.
const (
	// SandboxReadOnly lets model commands read but not write; patches are
	// rejected.
	SandboxReadOnly = "read-only"
	// SandboxWorkspaceWrite lets model commands write in the workspace.
	SandboxWorkspaceWrite = "workspace-write"
	// SandboxDangerFullAccess runs model commands without a sandbox.
	SandboxDangerFullAccess = "danger-full-access"
)

// Approval policies accepted by the approval_policy setting.
const (
	// ApprovalUntrusted asks before running commands not known to be safe.
	ApprovalUntrusted = "untrusted"
	// ApprovalOnFailure asks only when a sandboxed command fails.
	ApprovalOnFailure = "on-failure"
	// ApprovalOnRequest lets the model decide when to ask.
	ApprovalOnRequest = "on-request"
	// ApprovalNever never asks; what the sandbox refuses fails.
	ApprovalNever = "never"
)

// ExecOptions are the codex settings that become command-line flags. The
// zero value passes no settings, leaving everything to codex's config.
type ExecOptions struct {
	// Model becomes `-m Model`; empty: not passed.
	Model string
	// ReasoningEffort becomes `-c model_reasoning_effort="X"`; empty: not
	// passed.
	ReasoningEffort string
	// Sandbox becomes `-s X` (one of the Sandbox* constants); empty: not
	// passed.
	Sandbox string
	// ApprovalPolicy becomes `-c approval_policy="X"` (one of the
	// Approval* constants); empty: not passed.
	ApprovalPolicy string
	// AddDirs become `--add-dir D` each: directories the workspace-write
	// sandbox lets model commands write besides the working directory.
	AddDirs []string
	// Config holds extra `key=value` overrides, each passed verbatim as
	// `-c key=value` (the value is parsed as TOML by codex, or taken as a
	// literal string if it is not TOML).
	Config []string
	// DeveloperInstructions are standing instructions for the model,
	// passed as `-c developer_instructions="…"` after Config: codex adds
	// them to every model request of the thread as a developer message.
	// Empty: not passed. Like every flag they travel on codex's command
	// line, so once TOML-escaped they must fit one argument (MaxArgLen;
	// a role's own instructions must leave InstructionsReserve of it, see
	// CheckInstructions).
	DeveloperInstructions string
	// OutputSchema becomes `--output-schema FILE`: a JSON Schema file the
	// model's final answer must match. Empty: not passed.
	OutputSchema string
	// ExtraArgs are appended verbatim after the other flags and before
	// `resume` or the prompt argument.
	ExtraArgs []string
	// SkipGitRepoCheck adds --skip-git-repo-check, needed outside a git
	// repository.
	SkipGitRepoCheck bool
	// Permissions, when set, is the permission profile model commands run
	// under, in place of the workspace-write sandbox: ExecArgs passes it
	// as -c overrides before Config, and passes neither `-s` nor
	// --add-dir (Codex would take them over the profile).
	Permissions *Permissions
}

// Validate checks the values ExecArgs cannot vouch for: Sandbox and
// ApprovalPolicy must be empty or known, every Config entry must have the
// form key=value with a non-empty key, and every argument must be short
// enough for execve (MaxArgLen; an *ArgTooLongError otherwise).
func (o ExecOptions) Validate() error {
	switch o.Sandbox {
	case "", SandboxReadOnly, SandboxWorkspaceWrite, SandboxDangerFullAccess:
	default:
		return fmt.Errorf("codex: sandbox %q: want %s, %s or %s", o.Sandbox, SandboxReadOnly, SandboxWorkspaceWrite, SandboxDangerFullAccess)
	}
	switch o.ApprovalPolicy {
	case "", ApprovalUntrusted, ApprovalOnFailure, ApprovalOnRequest, ApprovalNever:
	default:
		return fmt.Errorf("codex: approval policy %q: want %s, %s, %s or %s", o.ApprovalPolicy, ApprovalUntrusted, ApprovalOnFailure, ApprovalOnRequest, ApprovalNever)
	}
	for _, kv := range o.Config {
		if k, _, ok := strings.Cut(kv, "="); !ok || strings.TrimSpace(k) == "" {
			return fmt.Errorf("codex: config override %q: want key=value", kv)
		}
	}
	for _, d := range o.AddDirs {
		if d == "" {
			return errors.New("codex: empty --add-dir directory")
		}
	}
	if o.Permissions != nil {
		if err := o.Permissions.Validate(); err != nil {
			return err
		}
	}
	if o.OutputSchema != "" && strings.HasPrefix(o.OutputSchema, "-") {
		return fmt.Errorf("codex: output schema %q: a file name must not start with '-' (write ./%s)", o.OutputSchema, o.OutputSchema)
	}
	if strings.ContainsAny(o.Model, "\n\r") {
		return errors.New("codex: model name contains a line break")
	}
	// The whole argument, batty's own section included: no reserve.
	if err := checkInstructionsArg(o.DeveloperInstructions, 0); err != nil {
		return err
	}
	return checkArgLens(ExecArgs(o, ""))
}

// ExecArgs returns the argv after the codex binary for one turn. The prompt
// always goes on stdin (the final "-"), never in argv; codex starts only
// once stdin is closed.
//
// First turn (resumeThreadID empty):
//
//	exec --json [--skip-git-repo-check] [-m M] [-c model_reasoning_effort="E"] [-s S] [-c approval_policy="A"] [--add-dir D]... [-c kv]... [-c developer_instructions="I"] [--output-schema F] [extra]... -
//
// With Permissions, `-s S` and the --add-dir flags give way to the
// profile's overrides (Permissions.ConfigOverrides), placed before Config.
//
// Resume: the same flags, then `resume <resumeThreadID> -`. The flags must
// come before `resume`: they belong to `codex exec`, and `resume` itself
// rejects some of them (e.g. -s). resumeThreadID should be a thread id
// (see IsThreadID): codex takes any other word as a thread name and, when
// no thread has that name, silently starts a new thread.
func ExecArgs(o ExecOptions, resumeThreadID string) []string {
	args := []string{"exec", "--json"}
	if o.SkipGitRepoCheck {
		args = append(args, "--skip-git-repo-check")
	}
	if o.Model != "" {
		args = append(args, "-m", o.Model)
	}
	if o.ReasoningEffort != "" {
		args = append(args, "-c", "model_reasoning_effort="+TOMLString(o.ReasoningEffort))
	}
	if o.Sandbox != "" && o.Permissions == nil {
		args = append(args, "-s", o.Sandbox)
	}
	if o.ApprovalPolicy != "" {
		args = append(args, "-c", "approval_policy="+TOMLString(o.ApprovalPolicy))
	}
	if o.Permissions != nil {
		for _, kv := range o.Permissions.ConfigOverrides() {
			args = append(args, "-c", kv)
		}
	} else {
		for _, d := range o.AddDirs {
			args = append(args, "--add-dir", d)
		}
	}
	for _, kv := range o.Config {
		args = append(args, "-c", kv)
	}
	if o.DeveloperInstructions != "" {
		args = append(args, "-c", instructionsArg(o.DeveloperInstructions))
	}
	if o.OutputSchema != "" {
		args = append(args, "--output-schema", o.OutputSchema)
	}
	args = append(args, o.ExtraArgs...)
	if resumeThreadID != "" {
		args = append(args, "resume", resumeThreadID)
	}
	return append(args, "-")
}

// ExecForkArgs is ExecArgs for a turn that forks thread threadID: `codex
// exec … fork <threadID> -`, a new thread that starts with the history of
// threadID and runs the prompt read from stdin.
func ExecForkArgs(o ExecOptions, threadID string) []string {
	args := ExecArgs(o, "")
	return append(args[:len(args)-1], "fork", threadID, "-")
}

// StoreArgs is the command line that archives (archive) or unarchives
// thread threadID in Codex's own store under $CODEX_HOME: `codex archive
// <id>` moves its rollout to archived_sessions/ and marks it archived in
// Codex's index, so that Codex's pickers (resume, fork) no longer offer
// it; `codex unarchive <id>` undoes it. Each fails (exit 1) when the thread
// is not in the state it leaves.
func StoreArgs(archive bool, threadID string) []string {
	if archive {
		return []string{"archive", threadID}
	}
	return []string{"unarchive", threadID}
}

// TOMLString returns s as a TOML basic string: in double quotes, with
// quotes, backslashes and control characters escaped.
func TOMLString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if r < 0x20 || r == 0x7f {
				b.WriteString(`\u`)
				h := strconv.FormatInt(int64(r), 16)
				b.WriteString(strings.Repeat("0", 4-len(h)))
				b.WriteString(h)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

var threadIDRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// IsThreadID reports whether s has the form of a codex thread id (a UUID,
// e.g. "01a1fe06-da19-7320-bb56-f999f5fa1a4a"). Only such ids are safe to
// pass to ExecArgs as resumeThreadID.
func IsThreadID(s string) bool { return threadIDRE.MatchString(s) }
