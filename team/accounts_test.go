package team

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseAccounts(t *testing.T) {
	dir := t.TempDir()
	src := `name: t
accounts:
  - name: work
    codex_home: homes/work
  - name: spare
    codex_home: /srv/spare
quota:
  warn_pct: 75
roles:
  - name: engineer
    instances: 2
    accounts: [spare, work]
  - name: architect
`
	path := filepath.Join(dir, "team.yaml")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Accounts) != 2 || cfg.Accounts[0].Name != "work" || cfg.Accounts[0].CodexHome != filepath.Join(dir, "homes/work") || cfg.Accounts[1].CodexHome != "/srv/spare" {
		t.Fatalf("accounts = %+v", cfg.Accounts)
	}
	if cfg.Quota.WarnPct != 75 {
		t.Errorf("warn_pct = %d, want 75", cfg.Quota.WarnPct)
	}
	agents := cfg.Agents()
	eng := agents[0]
	if len(eng.Accounts) != 2 || eng.Accounts[0].Name != "spare" || eng.Accounts[1].Name != "work" {
		t.Fatalf("engineer accounts = %+v", eng.Accounts)
	}
	if eng.Codex.CodexHome != "/srv/spare" {
		t.Errorf("engineer starts on %q, want the preferred account's home", eng.Codex.CodexHome)
	}
	if a, ok := cfg.Agent("engineer-2"); !ok || len(a.Accounts) != 2 || a.Codex.CodexHome != "/srv/spare" {
		t.Errorf("Agent(engineer-2) = %+v", a)
	}
	if arch := agents[2]; arch.Accounts != nil || arch.Codex.CodexHome != "" {
		t.Errorf("architect = accounts %+v, home %q; want none", arch.Accounts, arch.Codex.CodexHome)
	}
}

func TestParseAccountErrors(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"not a list", "name: t\naccounts: {name: w}\nroles: [{name: a}]\n",
			`team.yaml:2:11: accounts must be a list, not a mapping`},
		{"missing home", "name: t\naccounts:\n  - name: w\nroles: [{name: a}]\n",
			`team.yaml:3:5: account is missing required key "codex_home"`},
		{"unknown key", "name: t\naccounts:\n  - {name: w, codex_hom: /x}\nroles: [{name: a}]\n",
			`team.yaml:3:15: unknown key "codex_hom" in account (did you mean "codex_home"?)`},
		{"empty home", "name: t\naccounts:\n  - {name: w, codex_home: \"\"}\nroles: [{name: a}]\n",
			`team.yaml:3:27: account codex_home must not be empty`},
		{"duplicate name", "name: t\naccounts:\n  - {name: w, codex_home: /x}\n  - {name: w, codex_home: /y}\nroles: [{name: a}]\n",
			`team.yaml:4:12: duplicate account name "w" (first defined at line 3)`},
		{"same home", "name: t\naccounts:\n  - {name: w, codex_home: /x}\n  - {name: v, codex_home: /x/}\nroles: [{name: a}]\n",
			`team.yaml:4:27: account "v" has the same codex_home as account "w"`},
		{"unknown account", "name: t\naccounts:\n  - {name: w, codex_home: /x}\nroles:\n  - name: a\n    accounts: [w, spare]\n",
			`team.yaml:6:19: unknown account "spare" (the team's accounts are [w])`},
		{"no accounts defined", "name: t\nroles:\n  - name: a\n    accounts: [w]\n",
			`team.yaml:4:16: unknown account "w" (define it in the team's top-level accounts list)`},
		{"listed twice", "name: t\naccounts:\n  - {name: w, codex_home: /x}\nroles:\n  - name: a\n    accounts: [w, w]\n",
			`team.yaml:6:19: account "w" is listed twice (list each account once)`},
		{"empty list", "name: t\naccounts:\n  - {name: w, codex_home: /x}\nroles:\n  - name: a\n    accounts: []\n",
			`team.yaml:6:15: accounts must not be empty (list at least one account, or remove the key)`},
		{"role home and accounts", "name: t\naccounts:\n  - {name: w, codex_home: /x}\nroles:\n  - name: a\n    codex: {codex_home: /y}\n    accounts: [w]\n",
			`team.yaml:6:12: a role with accounts may not set codex.codex_home`},
		{"scope not account", "name: t\nquota: {scope: team}\naccounts:\n  - {name: w, codex_home: /x}\nroles:\n  - name: a\n    accounts: [w]\n",
			`team.yaml:2:8: role "a" lists accounts, which rotate on usage limits per account, but quota.scope is "team"`},
		{"warn_pct out of range", "name: t\nquota: {warn_pct: 0}\nroles: [{name: a}]\n",
			`team.yaml:2:19: quota.warn_pct must be between 1 and 100`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("team.yaml", []byte(tt.src))
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("err = %v, want a ValidationError", err)
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if strings.HasPrefix(line, tt.want) {
					return
				}
			}
			t.Fatalf("error:\n%v\nwant a line starting with:\n%s", err, tt.want)
		})
	}
}
