package team

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// maxConcurrentTurns bounds limits.concurrent_turns and a host's
// concurrent_turns.
const maxConcurrentTurns = 10000

var limitKeys = []string{"concurrent_turns", "min_free_memory"}

// Limits are the team's caps on its turns (the limits mapping); zero
// values mean no cap.
type Limits struct {
	// ConcurrentTurns caps the turns running at once across the team (a
	// turn is a Codex process at work; an app-server agent's idle process
	// is none), between 1 and 10000; 0 when unset. The others wait, first
	// asked first served.
	ConcurrentTurns int
	// MinFreeMemory is the memory available on this machine (MemAvailable
	// of /proc/meminfo), in bytes, below which no new turn of an agent
	// here starts; 0 when unset.
	MinFreeMemory uint64
}

// limits decodes the top-level limits mapping into cfg.Limits.
func (p *parser) limits(f map[string]entry, cfg *Config) {
	e, ok := f["limits"]
	if !ok || isNull(e.val) {
		return
	}
	lf, ok := p.mapping(e.val, "limits", limitKeys)
	if !ok {
		return
	}
	if le, ok := lf["concurrent_turns"]; ok {
		if v, ok := p.integer(le.val, "limits.concurrent_turns", 1, maxConcurrentTurns); ok {
			cfg.Limits.ConcurrentTurns = v
		}
	}
	if le, ok := lf["min_free_memory"]; ok {
		if v, ok := p.size(le.val, "limits.min_free_memory"); ok {
			cfg.Limits.MinFreeMemory = v
		}
	}
}

var sizeRE = regexp.MustCompile(`^([0-9]+)\s*([KMGT]?i?B|[KMGT])$`)

// maxSize bounds a size: 1 PiB.
const maxSize = 1 << 50

// size decodes a positive whole size with a unit, such as "512MiB" or
// "2GiB": B, K/KiB, M/MiB, G/GiB, T/TiB count in powers of 1024, KB, MB,
// GB, TB in powers of 1000.
func (p *parser) size(n *yaml.Node, what string) (uint64, bool) {
	if isNull(n) || !p.visit(n) {
		return 0, false
	}
	const hint = "write a size with a unit, e.g. 512MiB or 2GiB"
	d := deref(n)
	if d.Kind != yaml.ScalarNode {
		p.add(n, hint, "%s must be a size, not %s", what, kindName(n))
		return 0, false
	}
	s := strings.TrimSpace(d.Value)
	m := sizeRE.FindStringSubmatch(s)
	if m == nil {
		if _, err := strconv.ParseUint(s, 10, 64); err == nil {
			p.add(n, fmt.Sprintf("add a unit, e.g. %.20sMiB", s), "%s must be a size with a unit, not a bare number", what)
		} else {
			p.add(n, hint, "%s: %.40q is not a size", what, s)
		}
		return 0, false
	}
	unit := map[string]uint64{"B": 1, "K": 1 << 10, "KiB": 1 << 10, "M": 1 << 20, "MiB": 1 << 20, "G": 1 << 30, "GiB": 1 << 30,
		"T": 1 << 40, "TiB": 1 << 40, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}[m[2]]
	v, err := strconv.ParseUint(m[1], 10, 64)
	if unit == 0 || err != nil || v == 0 || v > maxSize/unit {
		p.add(n, hint, "%s must be more than 0 and at most 1PiB, got %.40s", what, s)
		return 0, false
	}
	return v * unit, true
}
