package team

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// FuzzParse checks that Parse never panics and that its results are
// consistent: valid configs expand to unique valid agent names, and every
// problem carries a line number of at least 1 whenever it names one.
// Seeds live in testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Add([]byte("name: t\nroles: [{name: a, prompt: prompts/a.md}]\n"))
	f.Add([]byte("name: t\ncodex: {runtime: app-server}\nroles: [{name: a, codex: {runtime: exec}}, {name: b}]\n"))
	f.Add([]byte("name: t\nroles: [{name: a, codex: {runtime: appserver}}]\n"))
	f.Add([]byte("name: t\nworkspace: {base: main, verify: make}\nroles: [{name: a, workspace: worktree}]\n"))
	f.Add([]byte("name: t\nhosts: [{name: b, ssh: dev@b, dir: ~/p}, {name: k, command: [kubectl, exec, -i, p, --]}]\nroles: [{name: a, instances: 3, hosts: [b, local, k]}]\n"))
	dir := newTeamDir(f)
	path := filepath.Join(dir, "team.yaml")
	lineRE := regexp.MustCompile(`^` + regexp.QuoteMeta(path) + `:(\d+)(?::(\d+))?: `)

	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(path, data)
		if err != nil {
			if cfg != nil {
				t.Fatalf("Parse returned both a config and an error")
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error is %T, want *ValidationError: %v", err, err)
			}
			if len(ve.Problems) == 0 {
				t.Fatalf("ValidationError without problems")
			}
			for _, p := range ve.Problems {
				if p.File != path || p.Message == "" || p.Line < 0 || p.Column < 0 || (p.Column > 0 && p.Line < 1) {
					t.Fatalf("malformed problem %+v", p)
				}
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, path+":") {
					continue // a message containing a newline
				}
				if m := lineRE.FindStringSubmatch(line); m != nil {
					if n, _ := strconv.Atoi(m[1]); n < 1 {
						t.Fatalf("problem names line %d: %q", n, line)
					}
				}
			}
			return
		}
		if cfg == nil || !ValidName(cfg.Name) || len(cfg.Roles) == 0 || cfg.BacklogLimit < 1 ||
			cfg.Timeouts.Turn <= 0 || cfg.Timeouts.Idle <= 0 || cfg.Timeouts.Shutdown <= 0 {
			t.Fatalf("invalid config accepted: %+v", cfg)
		}
		ws := cfg.Workspace
		if ws.VerifyTimeout <= 0 || ws.VerifyTimeout > MaxWorkspaceTimeout || ws.SetupTimeout <= 0 || ws.SetupTimeout > MaxWorkspaceTimeout ||
			(ws.Base != "" && CheckBranchName(ws.Base) != nil) || ws.Line < 0 ||
			(ws.Verify != "" && strings.TrimSpace(ws.Verify) == "") || (ws.Setup != "" && strings.TrimSpace(ws.Setup) == "") {
			t.Fatalf("invalid workspace settings accepted: %+v", ws)
		}
		names := map[string]bool{}
		for _, s := range cfg.Schedules {
			if !ValidName(s.Name) || names[s.Name] || s.Every <= 0 || strings.TrimSpace(s.Prompt) == "" || s.To == Human ||
				(s.MaxRuns != nil && *s.MaxRuns < 0) || (s.OnError != OnErrorStop && s.OnError != OnErrorContinue) ||
				(!s.StartAt.IsZero() && !s.StopAt.IsZero() && !s.StopAt.After(s.StartAt)) {
				t.Fatalf("invalid schedule accepted: %+v", s)
			}
			names[s.Name] = true
			if got, err := cfg.ResolveRecipient(s.To); err != nil || len(got) == 0 {
				t.Fatalf("schedule %q: ResolveRecipient(%q) = %v, %v", s.Name, s.To, got, err)
			}
		}
		for model, pr := range cfg.Pricing {
			if model == "" || !(pr.Input >= 0 && pr.CachedInput >= 0 && pr.Output >= 0) || pr.Input > maxPrice || pr.CachedInput > maxPrice || pr.Output > maxPrice {
				t.Fatalf("invalid price accepted: %q %+v", model, pr)
			}
		}
		seen := map[string]bool{}
		for _, r := range cfg.Roles {
			if !ValidName(r.Name) || r.Name == Human || r.Instances < 1 || r.Instances > MaxInstances || r.Line < 1 {
				t.Fatalf("invalid role accepted: %+v", r)
			}
			if r.Workspace != WorkspaceShared && r.Workspace != WorkspaceWorktree {
				t.Fatalf("role %q: workspace %q accepted", r.Name, r.Workspace)
			}
			if r.Codex.Bin == "" || r.Codex.Sandbox == "" || r.Codex.ApprovalPolicy == "" || r.Codex.Window() < 1 {
				t.Fatalf("incomplete codex settings: %+v", r.Codex)
			}
			if got, err := cfg.ResolveRecipient(r.Name); err != nil || len(got) != r.Instances || got[0].Role != r.Name {
				t.Fatalf("ResolveRecipient(%q) = %v, %v", r.Name, got, err)
			}
			for _, to := range r.TalksTo {
				if !slices.ContainsFunc(cfg.Roles, func(r Role) bool { return r.Name == to }) {
					t.Fatalf("talks_to names unknown role %q", to)
				}
			}
		}
		for _, a := range cfg.Agents() {
			if !ValidName(a.Name) || seen[a.Name] {
				t.Fatalf("bad or duplicate agent name %q", a.Name)
			}
			seen[a.Name] = true
			if h, ok := cfg.Host(a.Host); a.Host != "" && (!ok || (h.SSH == "") == (len(h.Command) == 0) || h.Name == LocalHost) {
				t.Fatalf("agent %q: host %q is not a valid host of the team: %+v", a.Name, a.Host, h)
			}
			if r, _, _ := cfg.agentRole(a.Name); a.Workspace != r.Workspace {
				t.Fatalf("agent %q: workspace %q, its role's %q", a.Name, a.Workspace, r.Workspace)
			}
			if b, ok := cfg.Agent(a.Name); !ok || !reflect.DeepEqual(a, b) {
				t.Fatalf("Agent(%q) = %+v, %v; Agents() has %+v", a.Name, b, ok, a)
			}
			got, err := cfg.ResolveRecipient(a.Name)
			if err != nil || len(got) != 1 || got[0].Name != a.Name {
				t.Fatalf("ResolveRecipient(%q) = %v, %v", a.Name, got, err)
			}
			if !cfg.MayTalk(a.Name, Human) || !cfg.MayTalk(Human, a.Name) {
				t.Fatalf("human link broken for %q", a.Name)
			}
		}
	})
}

// TestFuzzSeeds checks that the seed corpus still means what its file
// names say: valid_* seeds load cleanly and invalid_* seeds are rejected.
func TestFuzzSeeds(t *testing.T) {
	dir := newTeamDir(t)
	seeds, err := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzParse", "*"))
	if err != nil || len(seeds) == 0 {
		t.Fatalf("no seeds: %v", err)
	}
	for _, seed := range seeds {
		raw, err := os.ReadFile(seed)
		if err != nil {
			t.Fatal(err)
		}
		body, ok := strings.CutPrefix(strings.TrimSpace(string(raw)), "go test fuzz v1\n[]byte(")
		body, ok2 := strings.CutSuffix(body, ")")
		data, err := strconv.Unquote(body)
		if !ok || !ok2 || err != nil {
			t.Fatalf("%s: not in fuzz corpus format", seed)
		}
		_, err = Parse(filepath.Join(dir, "team.yaml"), []byte(data))
		switch name := filepath.Base(seed); {
		case strings.HasPrefix(name, "valid_") && err != nil:
			t.Errorf("%s: %v", name, err)
		case strings.HasPrefix(name, "invalid_") && err == nil:
			t.Errorf("%s: accepted", name)
		}
	}
}
