package team

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/battyhq/batty/shellword"
)

// Setting is one trusted setting of a team: one that says what batty runs
// as the user (on_alert, workspace.setup and verify, codex.bin, a host's
// command) or how tightly an agent is held (its sandbox, approval policy,
// Codex arguments, configuration, environment and home, its working
// directory, whether its landings wait for the human's review and for
// which paths, its token budgets). In a
// shared workspace an agent can edit the team file, so
// `batty restart` shows a change of these and asks before applying it.
type Setting struct {
	// Key names the setting, as in the team file: "on_alert",
	// "workspace.verify", "hosts.<host>.command",
	// "roles.<role>.codex.sandbox", "roles.<role>.codex.env.<NAME>".
	Key string `json:"key"`
	// Value is the setting as shown: a command as shell words, "" when
	// unset. The value of an environment variable whose name suggests a
	// secret (KEY, TOKEN, SECRET, PASSWORD) is shown as a digest.
	Value string `json:"value"`
}

// SettingChange is one trusted setting that differs between two teams;
// Old or New is "" when the setting is unset on that side.
type SettingChange struct {
	Key, Old, New string
}

// harmlessConfig are the Codex configuration keys (their first dotted
// part) that neither widen an agent's sandbox, nor reach the network, nor
// run a command: which model, how it reasons and how that shows. Every
// other key is a trusted setting.
var harmlessConfig = []string{
	"model", "model_reasoning_effort", "model_reasoning_summary", "model_verbosity",
	"model_context_window", "model_auto_compact_token_limit",
	"hide_agent_reasoning", "show_raw_agent_reasoning",
}

// secretWords mark an environment variable whose value is not shown.
var secretWords = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"}

// TrustedSettings returns the trusted settings of c (see Setting), sorted
// by key: the team's on_alert, workspace.setup, workspace.verify and
// workspace.review (the merge queue's review gate), workspace.protected
// (the paths whose change waits for review), each token budget
// (budgets.<for>/<per>), where telemetry goes (telemetry.metrics,
// telemetry.otlp.endpoint and headers, the values hidden) and
// telemetry.include_text, each
// host's ssh destination and command, and for each role its effective
// codex.bin, sandbox, approval_policy, args, codex_home, each
// configuration key but the harmless ones (the model and its reasoning),
// each environment variable, its accounts' homes, its cwd and workspace
// kind. It is a pure function.
func TrustedSettings(c *Config) []Setting {
	var s []Setting
	add := func(key, value string) { s = append(s, Setting{Key: key, Value: value}) }
	add("on_alert", words(c.OnAlert))
	add("workspace.setup", c.Workspace.Setup)
	add("workspace.verify", c.Workspace.Verify)
	review := c.Workspace.Review
	if review == "" {
		review = ReviewNone
	}
	add("workspace.review", review)
	add("workspace.protected", words(c.Workspace.Protected))
	// Where the team's metrics and traces go, and whether its text goes
	// with them: an agent that may edit the team file must not send them
	// elsewhere unseen.
	add("telemetry.metrics", c.Telemetry.Metrics.Listen)
	add("telemetry.otlp.endpoint", c.Telemetry.OTLP.Endpoint)
	for _, k := range slices.Sorted(maps.Keys(c.Telemetry.OTLP.Headers)) {
		add("telemetry.otlp.headers."+k, hidden(c.Telemetry.OTLP.Headers[k]))
	}
	add("telemetry.include_text", fmt.Sprint(c.Telemetry.IncludeText))
	for _, b := range c.Budgets {
		// An agent that may edit the team file must not raise its own
		// budget unseen.
		add("budgets."+b.Key(), fmt.Sprintf("%d tokens, warn_at %d%%", b.Tokens, b.WarnAt))
	}
	for _, h := range c.Hosts {
		if h.SSH != "" {
			add("hosts."+h.Name+".ssh", h.SSH)
		}
		if len(h.Command) > 0 {
			add("hosts."+h.Name+".command", words(h.Command))
		}
	}
	for _, r := range c.Roles {
		p := "roles." + r.Name + "."
		add(p+"codex.bin", r.Codex.Bin)
		add(p+"codex.sandbox", r.Codex.Sandbox)
		add(p+"codex.approval_policy", r.Codex.ApprovalPolicy)
		add(p+"codex.args", words(r.Codex.Args))
		add(p+"codex.codex_home", r.Codex.CodexHome)
		for _, k := range slices.Sorted(maps.Keys(r.Codex.Config)) {
			first, _, _ := strings.Cut(k, ".")
			if !slices.Contains(harmlessConfig, first) {
				add(p+"codex.config."+k, r.Codex.Config[k])
			}
		}
		for _, k := range slices.Sorted(maps.Keys(r.Codex.Env)) {
			add(p+"codex.env."+k, envValue(k, r.Codex.Env[k]))
		}
		var homes []string
		for _, a := range r.Accounts {
			homes = append(homes, a.Name+"="+a.CodexHome)
		}
		add(p+"accounts", words(homes))
		add(p+"cwd", r.Cwd)
		workspace := r.Workspace
		if workspace == "" {
			workspace = WorkspaceShared
		}
		add(p+"workspace", workspace)
	}
	slices.SortStableFunc(s, func(a, b Setting) int { return strings.Compare(a.Key, b.Key) })
	return s
}

// words shows argv as shell words, "" for none.
func words(argv []string) string {
	q := make([]string, len(argv))
	for i, w := range argv {
		q[i] = shellword.Quote(w)
	}
	return strings.Join(q, " ")
}

// envValue is the value of the environment variable name as shown: a
// digest when the name suggests a secret.
func envValue(name, value string) string {
	upper := strings.ToUpper(name)
	if !slices.ContainsFunc(secretWords, func(w string) bool { return strings.Contains(upper, w) }) {
		return value
	}
	return hidden(value)
}

// hidden shows a secret value as the start of its digest.
func hidden(value string) string {
	sum := sha256.Sum256([]byte(value))
	return "(hidden, sha256 " + hex.EncodeToString(sum[:4]) + ")"
}

// TrustedChanges lists the trusted settings that differ between old and
// new (each as TrustedSettings returns them), sorted by key: changed,
// set only in new, or set only in old. Nil when none differs. It is a
// pure function.
func TrustedChanges(old, new []Setting) []SettingChange {
	before := map[string]string{}
	for _, s := range old {
		before[s.Key] = s.Value
	}
	after := map[string]string{}
	for _, s := range new {
		after[s.Key] = s.Value
	}
	var out []SettingChange
	for _, k := range slices.Sorted(maps.Keys(mergeKeys(before, after))) {
		if before[k] != after[k] {
			out = append(out, SettingChange{Key: k, Old: before[k], New: after[k]})
		}
	}
	return out
}

// mergeKeys is the union of the keys of a and b.
func mergeKeys(a, b map[string]string) map[string]struct{} {
	keys := make(map[string]struct{}, len(a)+len(b))
	for k := range a {
		keys[k] = struct{}{}
	}
	for k := range b {
		keys[k] = struct{}{}
	}
	return keys
}

// TrustedFingerprint is a digest of settings: two lists with the same
// settings have the same fingerprint, whatever their order. It lets
// `batty restart` check that the team its daemon starts is the one
// accepted. It is a pure function.
func TrustedFingerprint(settings []Setting) string {
	s := slices.Clone(settings)
	slices.SortFunc(s, func(a, b Setting) int { return strings.Compare(a.Key, b.Key) })
	h := sha256.New()
	for _, x := range s {
		fmt.Fprintf(h, "%d:%s%d:%s", len(x.Key), x.Key, len(x.Value), x.Value)
	}
	return hex.EncodeToString(h.Sum(nil))
}
