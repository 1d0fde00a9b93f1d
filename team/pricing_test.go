package team

import (
	"strings"
	"testing"
)

func TestParsePricing(t *testing.T) {
	cfg, msg, _ := loadString(t, "name: t\npricing:\n  gpt-5-codex: {input: 1.25, cached_input: 0.125, output: 10}\n  local-llm:\n    input: 0\n    cached_input: 0\n    output: 0\nroles:\n  - name: a\n")
	if msg != "" {
		t.Fatal(msg)
	}
	want := map[string]Price{"gpt-5-codex": {Input: 1.25, CachedInput: 0.125, Output: 10, Line: 3}, "local-llm": {Line: 4}}
	if len(cfg.Pricing) != 2 || cfg.Pricing["gpt-5-codex"] != want["gpt-5-codex"] || cfg.Pricing["local-llm"] != want["local-llm"] {
		t.Fatalf("Pricing = %+v, want %+v", cfg.Pricing, want)
	}
	cfg, msg, _ = loadString(t, "name: t\nroles:\n  - name: a\n")
	if msg != "" || cfg.Pricing != nil {
		t.Fatalf("no pricing: %+v, %s", cfg.Pricing, msg)
	}
}

func TestParsePricingErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"pricing: [gpt-5]", "team.yaml:2:10: pricing must be a mapping, not a list"},
		{"pricing:\n  gpt-5: {input: 1, output: 2}", "team.yaml:3:3: pricing.gpt-5 has no cached_input"},
		{"pricing:\n  gpt-5: {input: \"1.25\", cached_input: 0.1, output: 2}", "team.yaml:3:18: pricing.gpt-5.input must be a number, not a string"},
		{"pricing:\n  gpt-5: {input: $1, cached_input: 0.1, output: 2}", "pricing.gpt-5.input must be a number"},
		{"pricing:\n  gpt-5: {input: -1, cached_input: 0.1, output: 2}", "team.yaml:3:18: pricing.gpt-5.input must be between 0 and"},
		{"pricing:\n  gpt-5: {input: .nan, cached_input: 0.1, output: 2}", "pricing.gpt-5.input must be between 0 and"},
		{"pricing:\n  gpt-5: {input: 1, cached_input: 0.1, output: 2, per: token}", `team.yaml:3:51: unknown key "per" in pricing.gpt-5`},
		{"pricing:\n  gpt-5:", "team.yaml:3:9: pricing.gpt-5 must be a mapping of input, cached_input and output, not null"},
		{"pricing:\n  gpt-5: 3", "pricing.gpt-5 must be a mapping, not an integer"},
		{"pricing:\n  gpt-5: {input: 1, cached_input: 0.1, output: 2}\n  gpt-5: {input: 1, cached_input: 0.1, output: 2}", "team.yaml:4:3: duplicate key"},
		{"pricing:\n  \"\": {input: 1, cached_input: 0.1, output: 2}", `invalid model name ""`},
	} {
		_, msg, _ := loadString(t, "name: t\n"+tc.src+"\nroles:\n  - name: a\n")
		if !strings.Contains(msg, tc.want) {
			t.Errorf("%s:\n got %q\nwant it to contain %q", tc.src, msg, tc.want)
		}
	}
}
