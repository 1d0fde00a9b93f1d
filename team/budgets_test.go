package team

import (
	"strings"
	"testing"
)

const budgetRoles = "name: t\nroles:\n  - name: manager\n  - name: eng\n    instances: 2\n"

func TestParseBudgets(t *testing.T) {
	src := budgetRoles + `budgets:
  - {for: team, tokens: 5000000, per: day}
  - {for: eng, tokens: 100000, per: hour, warn_at: 50%}
  - {for: eng-2, tokens: 1, per: week, warn_at: 99%}
`
	cfg, msg, _ := loadString(t, src)
	if msg != "" {
		t.Fatalf("unexpected problems:\n%s", msg)
	}
	want := []Budget{
		{For: "team", Tokens: 5000000, Per: PerDay, WarnAt: DefaultWarnAt, Line: 7},
		{For: "eng", Tokens: 100000, Per: PerHour, WarnAt: 50, Line: 8},
		{For: "eng-2", Tokens: 1, Per: PerWeek, WarnAt: 99, Line: 9},
	}
	if len(cfg.Budgets) != len(want) {
		t.Fatalf("budgets = %+v", cfg.Budgets)
	}
	for i, b := range cfg.Budgets {
		if b != want[i] {
			t.Errorf("budget %d = %+v, want %+v", i, b, want[i])
		}
	}
	if cfg.Budgets[1].Key() != "eng/hour" {
		t.Errorf("key %q", cfg.Budgets[1].Key())
	}
}

func TestParseBudgetErrors(t *testing.T) {
	tests := []struct {
		name, budget string
		want         string
	}{
		{"missing keys", "{for: team}", `team.yaml:7:5: budget is missing required key "tokens"`},
		{"missing per", "{for: team, tokens: 5}", `budget is missing required key "per"`},
		{"null tokens", "{for: team, tokens: ~, per: day}", `team.yaml:7:25: budget tokens must not be empty`},
		{"null for", "{for: ~, tokens: 5, per: day}", `budget for must not be empty`},
		{"zero tokens", "{for: team, tokens: 0, per: day}", `team.yaml:7:25: budget tokens must be between 1 and`},
		{"negative tokens", "{for: team, tokens: -3, per: day}", `budget tokens must be between 1 and`},
		{"string tokens", "{for: team, tokens: many, per: day}", `budget tokens must be an integer`},
		{"per month", "{for: team, tokens: 5, per: month}", `team.yaml:7:33: invalid budget per "month"`},
		{"per typo", "{for: team, tokens: 5, per: dya}", `did you mean "day"?`},
		{"unknown for", "{for: engg, tokens: 5, per: day}", `team.yaml:7:11: budget for "engg": no such role or agent`},
		{"unknown key", "{for: team, tokens: 5, per: day, warn: 5%}", `unknown key "warn" in budget`},
		{"warn bare", "{for: team, tokens: 5, per: day, warn_at: 80}", `budget warn_at must be a percentage such as 80%, not a bare number`},
		{"warn no percent", "{for: team, tokens: 5, per: day, warn_at: eighty}", `budget warn_at: invalid percentage "eighty"`},
		{"warn fraction", "{for: team, tokens: 5, per: day, warn_at: 80.5%}", `invalid percentage "80.5%"`},
		{"warn zero", "{for: team, tokens: 5, per: day, warn_at: 0%}", `budget warn_at must be between 1% and 99%, got 0%`},
		{"warn full", "{for: team, tokens: 5, per: day, warn_at: 100%}", `budget warn_at must be between 1% and 99%, got 100%`},
		{"not a mapping", "team", `budget must be a mapping`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, msg, _ := loadString(t, budgetRoles+"budgets:\n  - "+tt.budget+"\n")
			if !strings.Contains(msg, tt.want) {
				t.Fatalf("problems:\n%s\nwant %q", msg, tt.want)
			}
		})
	}
}

func TestParseBudgetsNotAList(t *testing.T) {
	_, msg, _ := loadString(t, budgetRoles+"budgets: {for: team}\n")
	if !strings.Contains(msg, "team.yaml:6:10: budgets must be a list, not a mapping") {
		t.Fatalf("problems:\n%s", msg)
	}
}

func TestParseBudgetDuplicate(t *testing.T) {
	_, msg, _ := loadString(t, budgetRoles+"budgets:\n  - {for: eng, tokens: 5, per: day}\n  - {for: eng, tokens: 9, per: day}\n  - {for: eng, tokens: 9, per: week}\n")
	if !strings.Contains(msg, `team.yaml:8:5: duplicate budget for "eng" per day (first defined at line 7)`) || strings.Contains(msg, "week") {
		t.Fatalf("problems:\n%s", msg)
	}
}

func TestParseBudgetReservedStateName(t *testing.T) {
	_, msg, _ := loadString(t, "name: t\nroles:\n  - name: budgets\n")
	if msg == "" {
		t.Fatal("a role named budgets (the daemon's state file) was accepted")
	}
}

// A budget is a trusted setting: an agent that edits the team file to
// raise or drop its budget is shown by `batty restart`.
func TestBudgetsAreTrustedSettings(t *testing.T) {
	before, msg, _ := loadString(t, budgetRoles+"budgets:\n  - {for: eng, tokens: 5, per: day}\n")
	if msg != "" {
		t.Fatal(msg)
	}
	after, msg, _ := loadString(t, budgetRoles+"budgets:\n  - {for: eng, tokens: 500, per: day, warn_at: 90%}\n")
	if msg != "" {
		t.Fatal(msg)
	}
	none, _, _ := loadString(t, budgetRoles)
	// Each load is in a directory of its own: only the budgets matter.
	budgetsOnly := func(cs []SettingChange) []SettingChange {
		var out []SettingChange
		for _, c := range cs {
			if strings.HasPrefix(c.Key, "budgets.") {
				out = append(out, c)
			}
		}
		return out
	}
	changes := budgetsOnly(TrustedChanges(TrustedSettings(before), TrustedSettings(after)))
	if len(changes) != 1 || changes[0].Key != "budgets.eng/day" || changes[0].Old != "5 tokens, warn_at 80%" || changes[0].New != "500 tokens, warn_at 90%" {
		t.Fatalf("changes %+v", changes)
	}
	if removed := budgetsOnly(TrustedChanges(TrustedSettings(before), TrustedSettings(none))); len(removed) != 1 || removed[0].New != "" {
		t.Fatalf("a removed budget: %+v", removed)
	}
}
