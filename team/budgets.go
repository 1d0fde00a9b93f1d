package team

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Budget periods (per).
const (
	PerHour = "hour"
	PerDay  = "day"
	PerWeek = "week"
)

// BudgetTeam is the for of a budget that covers every agent of the team.
const BudgetTeam = "team"

// DefaultWarnAt is the warn_at of a budget that sets none, in percent.
const DefaultWarnAt = 80

var (
	budgetKeys = []string{"for", "tokens", "per", "warn_at"}
	budgetPers = []string{PerHour, PerDay, PerWeek}
)

// Budget is one validated entry of the team file's budgets list: at most
// Tokens tokens (the usage ledger's total, input + output as Codex counts
// them) per calendar Per for the agents it covers. The semantics are those
// of docs/config.md ("budgets"); the package budget decides.
type Budget struct {
	// For is BudgetTeam, a role of the team or an agent of the team.
	For string
	// Tokens is the budget, ≥ 1.
	Tokens int64
	// Per is PerHour, PerDay or PerWeek.
	Per string
	// WarnAt is the percent of Tokens at which the warning is sent, in
	// [1, 99] (DefaultWarnAt when the file sets none).
	WarnAt int
	// Line is the line of the team file where the budget is defined.
	Line int
}

// Key names the budget in the daemon's state and its events: "<for>/<per>",
// unique among the team's budgets.
func (b Budget) Key() string { return b.For + "/" + b.Per }

// budgets decodes the top-level budgets list into cfg.Budgets; the for of
// each is checked against the team's roles and agents only when resolve is
// set (the roles are valid).
func (p *parser) budgets(f map[string]entry, cfg *Config, resolve bool) {
	e, ok := f["budgets"]
	if !ok || isNull(e.val) {
		return
	}
	n := deref(e.val)
	if n.Kind != yaml.SequenceNode {
		p.add(e.val, `write a list of budgets, e.g. "- {for: team, tokens: 5000000, per: day}"`, "budgets must be a list, not %s", kindName(e.val))
		return
	}
	seen := map[string]int{}
	for _, c := range n.Content {
		if !p.visit(c) {
			return
		}
		b, forNode, ok := p.budget(c)
		if !ok {
			continue
		}
		if resolve && !budgetForKnown(cfg, b.For) {
			p.add(forNode, `name "team", a role or an agent of the team`, "budget for %.60q: no such role or agent", b.For)
			continue
		}
		if line, dup := seen[b.Key()]; dup {
			p.add(c, fmt.Sprintf("first defined at line %d", line), "duplicate budget for %q per %s", b.For, b.Per)
			continue
		}
		seen[b.Key()] = b.Line
		cfg.Budgets = append(cfg.Budgets, b)
	}
}

// budgetForKnown reports whether a budget's for names the team, a role or
// an agent of cfg.
func budgetForKnown(cfg *Config, name string) bool {
	if name == BudgetTeam {
		return true
	}
	if slices.ContainsFunc(cfg.Roles, func(r Role) bool { return r.Name == name }) {
		return true
	}
	_, ok := cfg.Agent(name)
	return ok
}

// budget validates one element of the budgets list; ok is false when it
// has a problem (reported).
func (p *parser) budget(n *yaml.Node) (b Budget, forNode *yaml.Node, ok bool) {
	d := deref(n)
	if d == nil || d.Kind != yaml.MappingNode {
		p.add(n, `each budget is a mapping, e.g. "- {for: team, tokens: 5000000, per: day}"`, "budget must be a mapping, not %s", kindName(n))
		return b, nil, false
	}
	before := len(p.problems)
	b = Budget{WarnAt: DefaultWarnAt, Line: d.Line}
	f, _ := p.mapping(d, "budget", budgetKeys)
	for _, key := range []string{"for", "tokens", "per"} {
		switch e, ok := f[key]; {
		case !ok:
			p.add(d, budgetHint(key), "budget is missing required key %q", key)
		case isNull(e.val) && key != "for": // name says so for for
			p.add(e.val, budgetHint(key), "budget %s must not be empty", key)
		}
	}
	if e, ok := f["for"]; ok {
		if v, ok := p.name(e.val, "budget for"); ok {
			b.For, forNode = v, e.val
		}
	}
	if e, ok := f["tokens"]; ok {
		if v, ok := p.integer(e.val, "budget tokens", 1, math.MaxInt); ok {
			b.Tokens = int64(v)
		}
	}
	if e, ok := f["per"]; ok {
		if v, ok := p.enum(e.val, "budget per", budgetPers, false); ok {
			b.Per = v
		}
	}
	if e, ok := f["warn_at"]; ok && !isNull(e.val) {
		if v, ok := p.percent(e.val, "budget warn_at", 1, 99); ok {
			b.WarnAt = v
		}
	}
	return b, forNode, len(p.problems) == before
}

// percent decodes a percentage written "N%" with N an integer in [lo, hi].
func (p *parser) percent(n *yaml.Node, what string, lo, hi int) (int, bool) {
	d := deref(n)
	if d.Kind == yaml.ScalarNode && d.ShortTag() == "!!int" {
		p.add(n, fmt.Sprintf("write %.20s%%", d.Value), "%s must be a percentage such as 80%%, not a bare number", what)
		return 0, false
	}
	s, ok := p.str(n, what)
	if !ok {
		return 0, false
	}
	digits, found := strings.CutSuffix(s, "%")
	v, err := strconv.Atoi(digits)
	if !found || err != nil || digits != strconv.Itoa(v) {
		p.add(n, "write a whole percentage such as 80%", "%s: invalid percentage %.60q", what, s)
		return 0, false
	}
	if v < lo || v > hi {
		p.add(n, "", "%s must be between %d%% and %d%%, got %s", what, lo, hi, s)
		return 0, false
	}
	return v, true
}

// budgetHint is the example given for a missing budget key.
func budgetHint(key string) string {
	switch key {
	case "for":
		return `add e.g. "for: team" (or a role, or an agent)`
	case "tokens":
		return `add e.g. "tokens: 5000000"`
	default:
		return `add e.g. "per: day" (hour, day or week)`
	}
}
