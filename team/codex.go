package team

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// codexOverlay holds the Codex keys set in one codex section.
type codexOverlay struct {
	strs          map[string]string
	args          []string
	argsSet       bool
	config, env   map[string]string
	contextWindow int
	handoffPct    int
	runtimeIdle   *time.Duration // nil: not set here
	binLine       int            // the line of bin, 0 when not set here
	allowSockets  []string       // nil: not set here
}

// codex validates a codex section.
func (p *parser) codex(n *yaml.Node, what string) codexOverlay {
	o := codexOverlay{strs: map[string]string{}}
	f, ok := p.mapping(n, what, codexKeys)
	if !ok {
		return o
	}
	set := func(key string, v string, ok bool) {
		if ok {
			o.strs[key] = v
		}
	}
	for _, key := range []string{"bin", "model", "codex_home"} {
		e, ok := f[key]
		if !ok {
			continue
		}
		s, ok := p.str(e.val, what+"."+key)
		switch {
		case !ok:
		case key == "bin" && s == "":
			p.add(e.val, `e.g. "codex" or "/usr/local/bin/codex"`, "%s.bin must not be empty", what)
		case key == "model" && strings.ContainsAny(s, "\r\n"):
			p.add(e.val, "", "%s.model must not contain line breaks", what)
		case (key == "bin" && strings.ContainsRune(s, '/')) || (key == "codex_home" && s != ""):
			s, ok = p.path(e.val, s)
			set(key, s, ok)
		default:
			set(key, s, true)
		}
		if key == "bin" {
			o.binLine = e.val.Line
		}
	}
	enums := []struct {
		key     string
		allowed []string
		empty   bool
	}{
		{"reasoning_effort", reasoningEfforts, true},
		{"sandbox", sandboxModes, false},
		{"approval_policy", approvalPolicies, false},
		{"runtime", runtimes, false},
		{"app_server", appServerModes, false},
	}
	for _, en := range enums {
		if e, ok := f[en.key]; ok {
			s, ok := p.enum(e.val, what+"."+en.key, en.allowed, en.empty)
			set(en.key, s, ok)
		}
	}
	if e, ok := f["args"]; ok {
		items, ok := p.strList(e.val, what+".args")
		if ok {
			o.argsSet = true
			o.args = []string{}
			for i, it := range items {
				kv, isOverride := strings.CutPrefix(it.val, "-c=")
				if !isOverride {
					kv, isOverride = strings.CutPrefix(it.val, "--config=")
				}
				if !isOverride && (it.val == "-c" || it.val == "--config") && i+1 < len(items) {
					kv, isOverride = items[i+1].val, true
				}
				if k, _, _ := strings.Cut(kv, "="); isOverride && ownPermissionsKey(strings.TrimSpace(k)) {
					p.add(it.node, "batty gives each workspace-write or read-only agent a permission profile of its own; widen it with sandbox_workspace_write keys or allow_sockets, or set sandbox: danger-full-access",
						"%s.args: a permission profile of your own (%.40s) would replace batty's and is refused", what, strings.TrimSpace(k))
				}
				o.args = append(o.args, it.val)
			}
		}
	}
	if e, ok := f["allow_sockets"]; ok {
		if items, ok := p.strList(e.val, what+".allow_sockets"); ok {
			o.allowSockets = []string{}
			for _, it := range items {
				if !slices.Contains(UserSockets, it.val) {
					p.add(it.node, "one of "+strings.Join(UserSockets, ", "), "invalid %s.allow_sockets element %.60q", what, it.val)
					continue
				}
				o.allowSockets = append(o.allowSockets, it.val)
			}
		}
	}
	if e, ok := f["config"]; ok {
		m, _ := p.mapping(e.val, what+".config", nil)
		o.config = map[string]string{}
		for k, kv := range m {
			if !configKeyRE.MatchString(k) {
				p.add(kv.key, "use a dotted key such as model_providers.local.base_url", "invalid %s.config key %.60q", what, k)
				continue
			}
			if ownPermissionsKey(k) {
				p.add(kv.key, "batty gives each workspace-write or read-only agent a permission profile of its own (its workspace and outbox writable, or its outbox alone, the state directory and other agents' worktrees denied); widen it with sandbox_workspace_write keys or allow_sockets, or set sandbox: danger-full-access",
					"%s.config.%s: a permission profile of your own would replace batty's and is refused", what, k)
				continue
			}
			if v, ok := p.tomlValue(kv.val, what+".config."+k); ok {
				o.config[k] = v
			}
		}
	}
	if e, ok := f["env"]; ok {
		m, _ := p.mapping(e.val, what+".env", nil)
		o.env = map[string]string{}
		for k, kv := range m {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				p.add(kv.key, "", "invalid %s.env variable name %.60q", what, k)
				continue
			}
			if isNull(kv.val) {
				p.add(kv.val, `use "" for an empty value`, "%s.env.%s must be a string, not null", what, k)
				continue
			}
			if v, ok := p.str(kv.val, what+".env."+k); ok {
				o.env[k] = v
			}
		}
	}
	if e, ok := f["context_window"]; ok {
		if v, ok := p.integer(e.val, what+".context_window", 1, math.MaxInt32); ok {
			o.contextWindow = v
		}
	}
	if e, ok := f["context_handoff_pct"]; ok {
		if v, ok := p.integer(e.val, what+".context_handoff_pct", 1, 100); ok {
			o.handoffPct = v
		}
	}
	if e, ok := f["runtime_idle"]; ok {
		if v, ok := p.runtimeIdle(e.val, what+".runtime_idle"); ok {
			o.runtimeIdle = &v
		}
	}
	return o
}

// runtimeIdle decodes runtime_idle: a Go duration ("10m", "90s"), or 0
// ("0", 0, "0s") for never.
func (p *parser) runtimeIdle(n *yaml.Node, what string) (time.Duration, bool) {
	if d := deref(n); d.Kind == yaml.ScalarNode && d.ShortTag() == "!!int" && d.Value == "0" {
		return 0, true
	}
	if d := deref(n); d.Kind == yaml.ScalarNode && (d.ShortTag() == "!!int" || d.ShortTag() == "!!float") {
		p.add(n, fmt.Sprintf("add a unit, e.g. %.20sm, or 0 for never", d.Value), "%s must be a duration with a unit, not a bare number", what)
		return 0, false
	}
	s, ok := p.str(n, what)
	if !ok {
		return 0, false
	}
	v, err := time.ParseDuration(s)
	switch {
	case err != nil:
		p.add(n, "use Go duration syntax, e.g. 90s, 10m or 1h30m, or 0 for never", "%s: invalid duration %.60q", what, s)
		return 0, false
	case v < 0:
		p.add(n, "use 0 for never", "%s must not be negative, got %s", what, s)
		return 0, false
	}
	return v, true
}

// apply returns base with the overlay's keys applied: scalars and args
// replace, config and env merge key by key.
func (o codexOverlay) apply(base CodexSettings) CodexSettings {
	s := base.clone()
	for k, v := range o.strs {
		switch k {
		case "bin":
			s.Bin = v
		case "model":
			s.Model = v
		case "codex_home":
			s.CodexHome = v
		case "reasoning_effort":
			s.ReasoningEffort = v
		case "sandbox":
			s.Sandbox = v
		case "approval_policy":
			s.ApprovalPolicy = v
		case "runtime":
			s.Runtime = v
		case "app_server":
			s.AppServer = v
		}
	}
	if o.argsSet {
		s.Args = slices.Clone(o.args)
	}
	s.Config = mergeMaps(s.Config, o.config)
	s.Env = mergeMaps(s.Env, o.env)
	if o.contextWindow > 0 {
		s.ContextWindow = o.contextWindow
	}
	if o.handoffPct > 0 {
		s.HandoffPct = o.handoffPct
	}
	if o.runtimeIdle != nil {
		s.RuntimeIdle = *o.runtimeIdle
	}
	if o.allowSockets != nil {
		s.AllowSockets = slices.Clone(o.allowSockets)
	}
	return s
}

// ownPermissionsKey reports whether config key k selects or defines a
// Codex permission profile (default_permissions, permissions.*). Pure.
func ownPermissionsKey(k string) bool {
	return k == "default_permissions" || k == "permissions" || strings.HasPrefix(k, "permissions.")
}

// mergeMaps sets every key of over in dst (allocating it when needed).
func mergeMaps(dst, over map[string]string) map[string]string {
	for k, v := range over {
		if dst == nil {
			dst = map[string]string{}
		}
		dst[k] = v
	}
	return dst
}
