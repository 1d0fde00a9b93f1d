package team

import (
	"fmt"
	"slices"

	"go.yaml.in/yaml/v3"
)

// Account is one named Codex home of the team's accounts list: a CODEX_HOME
// logged in on its own, which agents may switch to when the account they
// run on hits a usage limit.
type Account struct {
	// Name is the account's name; it matches ValidName.
	Name string
	// CodexHome is the account's CODEX_HOME, an absolute path.
	CodexHome string
	// Line is the line of the team file where the account is defined.
	Line int
}

// DefaultWarnPct is quota.warn_pct's default: the share of a rate-limit
// window, in percent, at which an account's usage raises one alert.
const DefaultWarnPct = 90

var accountKeys = []string{"name", "codex_home"}

// accounts decodes the top-level accounts list into cfg.Accounts.
func (p *parser) accounts(f map[string]entry, cfg *Config) {
	e, ok := f["accounts"]
	if !ok || isNull(e.val) {
		return
	}
	n := deref(e.val)
	if n.Kind != yaml.SequenceNode {
		p.add(e.val, "write a list of accounts, each with \"- name:\" and \"codex_home:\"", "accounts must be a list, not %s", kindName(e.val))
		return
	}
	seen := map[string]int{}
	homes := map[string]string{}
	for _, c := range n.Content {
		if !p.visit(c) {
			return
		}
		d := deref(c)
		if d == nil || d.Kind != yaml.MappingNode {
			p.add(c, "each account is a mapping: \"- name: work\" and \"codex_home: ~/.codex-work\"", "account must be a mapping, not %s", kindName(c))
			continue
		}
		a := Account{Line: d.Line}
		af, _ := p.mapping(d, "account", accountKeys)
		for _, key := range accountKeys {
			if _, ok := af[key]; !ok {
				p.add(d, `e.g. "- name: work" with "codex_home: ~/.codex-work"`, "account is missing required key %q", key)
			}
		}
		var nameNode, homeNode *yaml.Node
		if ae, ok := af["name"]; ok {
			if v, ok := p.name(ae.val, "account name"); ok {
				a.Name, nameNode = v, ae.val
			}
		}
		if ae, ok := af["codex_home"]; ok {
			if v, ok := p.str(ae.val, "account codex_home"); ok {
				if v == "" {
					p.add(ae.val, "name the account's CODEX_HOME, e.g. ~/.codex-work", "account codex_home must not be empty")
				} else if abs, ok := p.path(ae.val, v); ok {
					a.CodexHome, homeNode = abs, ae.val
				}
			}
		}
		if nameNode != nil {
			if line, dup := seen[a.Name]; dup {
				p.add(nameNode, fmt.Sprintf("first defined at line %d", line), "duplicate account name %q", a.Name)
				continue
			}
			seen[a.Name] = nameNode.Line
		}
		if homeNode != nil {
			if other, dup := homes[a.CodexHome]; dup {
				p.add(homeNode, "each account is its own login: give it its own CODEX_HOME", "account %q has the same codex_home as account %q", a.Name, other)
				continue
			}
			homes[a.CodexHome] = a.Name
		}
		if nameNode != nil && homeNode != nil {
			cfg.Accounts = append(cfg.Accounts, a)
		}
	}
}

// roleAccounts decodes a role's accounts list: names of the team's
// accounts, in order of preference, each at most once.
func (p *parser) roleAccounts(n *yaml.Node, cfg *Config, r *roleDraft) {
	items, ok := p.strList(n, "accounts")
	if !ok {
		return
	}
	if len(items) == 0 {
		p.add(n, "list at least one account, or remove the key", "accounts must not be empty")
		return
	}
	for _, it := range items {
		i := slices.IndexFunc(cfg.Accounts, func(a Account) bool { return a.Name == it.val })
		switch {
		case i < 0:
			p.add(it.node, accountsHint(cfg), "unknown account %.60q", it.val)
		case slices.ContainsFunc(r.Accounts, func(a Account) bool { return a.Name == it.val }):
			p.add(it.node, "list each account once", "account %q is listed twice", it.val)
		default:
			r.Accounts = append(r.Accounts, cfg.Accounts[i])
		}
	}
}

// accountsHint names the accounts a role may list.
func accountsHint(cfg *Config) string {
	if len(cfg.Accounts) == 0 {
		return "define it in the team's top-level accounts list"
	}
	names := make([]string, len(cfg.Accounts))
	for i, a := range cfg.Accounts {
		names[i] = a.Name
	}
	return fmt.Sprintf("the team's accounts are %v", names)
}

// checkAccountScope refuses accounts on a role when usage limits are not
// counted per account: rotation moves agents between accounts, which only
// means something when an account's limit is the account's.
func (p *parser) checkAccountScope(f map[string]entry, cfg *Config) {
	if cfg.Quota.Scope == QuotaScopeAccount {
		return
	}
	for _, r := range cfg.Roles {
		if len(r.Accounts) > 0 {
			at := f["quota"].val
			p.add(at, "remove quota.scope (its default, account, is what accounts need)",
				"role %q lists accounts, which rotate on usage limits per account, but quota.scope is %q", r.Name, cfg.Quota.Scope)
			return
		}
	}
}
