package team

import (
	"strings"
	"testing"
)

func TestParseLimits(t *testing.T) {
	for _, c := range []struct {
		src  string
		want Limits
		host int
	}{
		{"", Limits{}, 0},
		{"limits:\n  concurrent_turns: 4\n  min_free_memory: 512MiB\n", Limits{ConcurrentTurns: 4, MinFreeMemory: 512 << 20}, 0},
		{"limits: {min_free_memory: 2G}\n", Limits{MinFreeMemory: 2 << 30}, 0},
		{"limits: {min_free_memory: 3 GB}\n", Limits{MinFreeMemory: 3e9}, 0},
		{"limits: {min_free_memory: 100B}\n", Limits{MinFreeMemory: 100}, 0},
		{"hosts: [{name: b, ssh: x, concurrent_turns: 2}]\n", Limits{}, 2},
	} {
		cfg, msg, _ := loadString(t, "name: t\n"+c.src+"roles: [{name: a}]\n")
		if msg != "" {
			t.Fatalf("%q: %s", c.src, msg)
		}
		if cfg.Limits != c.want {
			t.Errorf("%q: Limits = %+v, want %+v", c.src, cfg.Limits, c.want)
		}
		if c.host != 0 && (len(cfg.Hosts) != 1 || cfg.Hosts[0].ConcurrentTurns != c.host) {
			t.Errorf("%q: hosts %+v", c.src, cfg.Hosts)
		}
	}
}

func TestParseLimitsErrors(t *testing.T) {
	const roles = "roles: [{name: a}]\n"
	for _, c := range []struct{ name, src, want string }{
		{"not a mapping", "limits: 4\n", `team.yaml:2:9: limits must be a mapping`},
		{"unknown key", "limits: {concurrent: 4}\n", `team.yaml:2:10: unknown key "concurrent" in limits`},
		{"zero turns", "limits: {concurrent_turns: 0}\n", `team.yaml:2:28: limits.concurrent_turns must be between 1 and 10000, got 0`},
		{"turns a string", "limits: {concurrent_turns: four}\n", `team.yaml:2:28: limits.concurrent_turns must be an integer, not a string`},
		{"bare memory", "limits: {min_free_memory: 512}\n", `team.yaml:2:27: limits.min_free_memory must be a size with a unit, not a bare number (add a unit, e.g. 512MiB)`},
		{"bad memory", "limits: {min_free_memory: lots}\n", `team.yaml:2:27: limits.min_free_memory: "lots" is not a size`},
		{"fractional memory", "limits: {min_free_memory: 1.5G}\n", `limits.min_free_memory: "1.5G" is not a size`},
		{"zero memory", "limits: {min_free_memory: 0MiB}\n", `team.yaml:2:27: limits.min_free_memory must be more than 0 and at most 1PiB, got 0MiB`},
		{"huge memory", "limits: {min_free_memory: 2000000TiB}\n", `limits.min_free_memory must be more than 0 and at most 1PiB`},
		{"host turns zero", "hosts: [{name: b, ssh: x, concurrent_turns: 0}]\n", `team.yaml:2:45: host concurrent_turns must be between 1 and 10000, got 0`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, msg, _ := loadString(t, "name: t\n"+c.src+roles)
			if !strings.Contains(msg, c.want) {
				t.Fatalf("error\n%s\nwant a line containing\n%s", msg, c.want)
			}
		})
	}
}
