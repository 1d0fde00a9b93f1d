package team

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/battyhq/batty/codex"
)

// maxWork bounds the number of nodes visited while validating one file, so
// that documents built from nested aliases cannot blow up.
const maxWork = 200_000

// maxMergeDepth bounds nested YAML merge keys (<<).
const maxMergeDepth = 8

// parser accumulates problems while walking a decoded YAML tree.
type parser struct {
	file     string // path for messages, as given by the caller
	dir      string // absolute directory of the team file
	problems []Problem
	// hostNames are the names the hosts list declares (see hosts); nil
	// when the list could not be read.
	hostNames map[string]bool
	work      int
	aborted   bool
	// lines records where settings are (Config.lines).
	lines map[string]int
}

// setLine records that the setting key is on line.
func (p *parser) setLine(key string, line int) {
	if p.lines == nil {
		p.lines = map[string]int{}
	}
	p.lines[key] = line
}

// add records a problem at node n (or for the whole file when n is nil).
func (p *parser) add(n *yaml.Node, hint, format string, args ...any) {
	pr := Problem{File: p.file, Message: fmt.Sprintf(format, args...), Hint: hint}
	if n != nil && n.Line > 0 {
		pr.Line = n.Line
		if n.Column > 0 {
			pr.Column = n.Column
		}
	}
	p.problems = append(p.problems, pr)
}

// visit charges one unit of work and reports whether walking may go on.
func (p *parser) visit(n *yaml.Node) bool {
	if p.aborted {
		return false
	}
	p.work++
	if p.work > maxWork {
		p.aborted = true
		p.add(n, "simplify the file", "document is too large or uses too many aliases")
		return false
	}
	return true
}

// deref follows aliases to the node they refer to.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode; i++ {
		if i > 16 {
			return nil
		}
		n = n.Alias
	}
	return n
}

// isNull reports whether n is absent or a YAML null.
func isNull(n *yaml.Node) bool {
	n = deref(n)
	return n == nil || n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// kindName describes what n is, for "must be X, not Y" messages.
func kindName(n *yaml.Node) string {
	n = deref(n)
	if isNull(n) {
		return "null"
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.DocumentNode:
		return "a document"
	case yaml.ScalarNode:
		switch t := n.ShortTag(); t {
		case "!!str":
			return "a string"
		case "!!int":
			return "an integer"
		case "!!float":
			return "a number"
		case "!!bool":
			return "a boolean"
		case "!!timestamp":
			return "a timestamp"
		case "!!binary":
			return "binary data"
		default:
			return fmt.Sprintf("a value tagged %.40s", t)
		}
	}
	return "an unknown node"
}

// isMergeKey reports whether k is the YAML merge key "<<".
func isMergeKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && k.ShortTag() == "!!merge"
}

// entry is one key/value pair of a mapping.
type entry struct{ key, val *yaml.Node }

// mapping checks that n is a mapping and returns its entries by key. Keys
// not in known (when known is non-nil), duplicate keys and non-string keys
// are reported. A null n yields an empty map. ok is false when n is not a
// mapping.
func (p *parser) mapping(n *yaml.Node, what string, known []string) (map[string]entry, bool) {
	out := map[string]entry{}
	if isNull(n) {
		return out, true
	}
	d := deref(n)
	if d == nil || d.Kind != yaml.MappingNode {
		p.add(n, "", "%s must be a mapping, not %s", what, kindName(n))
		return nil, false
	}
	p.entries(d, what, known, out, 0)
	return out, true
}

// entries adds the pairs of mapping m to out, explicit keys first, then keys
// inherited through merge keys (which never override).
func (p *parser) entries(m *yaml.Node, what string, known []string, out map[string]entry, depth int) {
	if !p.visit(m) {
		return
	}
	seen := map[string]*yaml.Node{}
	var merges []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if !p.visit(k) {
			return
		}
		if isMergeKey(k) {
			merges = append(merges, v)
			continue
		}
		kd := deref(k)
		if kd == nil || kd.Kind != yaml.ScalarNode || isNull(kd) {
			p.add(k, "", "keys in %s must be plain strings, not %s", what, kindName(k))
			continue
		}
		name := kd.Value
		if prev, dup := seen[name]; dup {
			p.add(k, fmt.Sprintf("first defined at line %d", prev.Line), "duplicate key %q in %s", name, what)
			continue
		}
		seen[name] = k
		if fix, gone := removedKeys[what][name]; gone && known != nil && !slices.Contains(known, name) {
			p.add(k, fix, "%s is no longer a key of the %s", name, what)
			continue
		}
		if known != nil && !slices.Contains(known, name) {
			hint := didYouMean(name, known)
			if hint == "" {
				hint = "valid keys: " + strings.Join(known, ", ")
			}
			p.add(k, hint, "unknown key %q in %s", name, what)
			continue
		}
		out[name] = entry{k, v}
	}
	for _, src := range merges {
		p.merge(src, what, known, out, depth)
	}
}

// merge adds the entries of a merge key's value (a mapping or a list of
// mappings) to out without overriding existing keys.
func (p *parser) merge(src *yaml.Node, what string, known []string, out map[string]entry, depth int) {
	if depth >= maxMergeDepth {
		p.add(src, "", "merge keys (<<) nested too deeply")
		return
	}
	d := deref(src)
	var maps []*yaml.Node
	switch {
	case d != nil && d.Kind == yaml.MappingNode:
		maps = []*yaml.Node{d}
	case d != nil && d.Kind == yaml.SequenceNode:
		for _, it := range d.Content {
			maps = append(maps, deref(it))
		}
	}
	if len(maps) == 0 {
		p.add(src, "", "merge key (<<) needs a mapping or a list of mappings, not %s", kindName(src))
		return
	}
	for _, m := range maps {
		if m == nil || m.Kind != yaml.MappingNode {
			p.add(src, "", "merge key (<<) needs a mapping or a list of mappings")
			return
		}
		inherited := map[string]entry{}
		p.entries(m, what, known, inherited, depth+1)
		for k, e := range inherited {
			if _, ok := out[k]; !ok {
				out[k] = e
			}
		}
	}
}

// quoteHint suggests quoting a scalar that YAML typed as non-string.
func quoteHint(n *yaml.Node) string {
	d := deref(n)
	if d != nil && d.Kind == yaml.ScalarNode && len(d.Value) <= 60 && !isNull(d) {
		return fmt.Sprintf("quote it: %q", d.Value)
	}
	return ""
}

// str decodes a string scalar. Null yields ok=false without a problem; any
// other non-string is reported.
func (p *parser) str(n *yaml.Node, what string) (string, bool) {
	if isNull(n) || !p.visit(n) {
		return "", false
	}
	d := deref(n)
	if d.Kind != yaml.ScalarNode || d.ShortTag() != "!!str" {
		p.add(n, quoteHint(n), "%s must be a string, not %s", what, kindName(n))
		return "", false
	}
	if strings.ContainsRune(d.Value, 0) {
		p.add(n, "", "%s must not contain NUL characters", what)
		return "", false
	}
	return d.Value, true
}

// integer decodes an integer scalar in [lo, hi]. Null yields ok=false
// without a problem.
func (p *parser) integer(n *yaml.Node, what string, lo, hi int) (int, bool) {
	if isNull(n) || !p.visit(n) {
		return 0, false
	}
	d := deref(n)
	if d.Kind != yaml.ScalarNode || d.ShortTag() != "!!int" {
		hint := ""
		if _, err := strconv.Atoi(strings.TrimSpace(d.Value)); err == nil && d.Kind == yaml.ScalarNode {
			hint = "remove the quotes"
		}
		p.add(n, hint, "%s must be an integer, not %s", what, kindName(n))
		return 0, false
	}
	var v int64
	if err := d.Decode(&v); err != nil || v < int64(lo) || v > int64(hi) {
		p.add(n, "", "%s must be between %d and %d, got %.40s", what, lo, hi, d.Value)
		return 0, false
	}
	return int(v), true
}

// duration decodes a positive Go duration such as "90s" or "1h30m".
func (p *parser) duration(n *yaml.Node, what string) (time.Duration, bool) {
	if isNull(n) {
		return 0, false
	}
	d := deref(n)
	if d.Kind == yaml.ScalarNode && (d.ShortTag() == "!!int" || d.ShortTag() == "!!float") {
		p.add(n, fmt.Sprintf("add a unit, e.g. %.20ss or %.20sm", d.Value, d.Value), "%s must be a duration with a unit, not a bare number", what)
		return 0, false
	}
	s, ok := p.str(n, what)
	if !ok {
		return 0, false
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		p.add(n, "use Go duration syntax, e.g. 90s, 10m or 1h30m", "%s: invalid duration %.60q", what, s)
		return 0, false
	}
	if v <= 0 {
		p.add(n, "", "%s must be positive, got %s", what, s)
		return 0, false
	}
	return v, true
}

// enum decodes a string that must be one of allowed (or empty when
// allowEmpty).
func (p *parser) enum(n *yaml.Node, what string, allowed []string, allowEmpty bool) (string, bool) {
	s, ok := p.str(n, what)
	if !ok {
		return "", false
	}
	if slices.Contains(allowed, s) || (allowEmpty && s == "") {
		return s, true
	}
	hint := didYouMean(s, allowed)
	if hint == "" {
		hint = "one of: " + strings.Join(allowed, ", ")
		if allowEmpty {
			hint += `, or ""`
		}
	}
	p.add(n, hint, "invalid %s %.60q", what, s)
	return "", false
}

// item is a string list element with its node, for positioned messages.
type item struct {
	val  string
	node *yaml.Node
}

// strList decodes a list of strings. Null yields ok=false without a
// problem; a bad element is reported and skipped.
func (p *parser) strList(n *yaml.Node, what string) ([]item, bool) {
	if isNull(n) || !p.visit(n) {
		return nil, false
	}
	d := deref(n)
	if d.Kind != yaml.SequenceNode {
		hint := ""
		if d.Kind == yaml.ScalarNode && len(d.Value) <= 60 {
			hint = fmt.Sprintf("write a list: [%s]", d.Value)
		}
		p.add(n, hint, "%s must be a list, not %s", what, kindName(n))
		return nil, false
	}
	out := []item{}
	for _, c := range d.Content {
		if isNull(c) {
			p.add(c, `use "" for an empty string`, "%s must not contain null elements", what)
			continue
		}
		if s, ok := p.str(c, what+" element"); ok {
			out = append(out, item{s, c})
		}
	}
	return out, true
}

// configKeyRE matches a dotted TOML key made of bare key segments.
var configKeyRE = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)

// tomlValue renders a scalar as a TOML value: strings quoted, booleans and
// numbers bare.
func (p *parser) tomlValue(n *yaml.Node, what string) (string, bool) {
	if !p.visit(n) {
		return "", false
	}
	d := deref(n)
	if isNull(d) {
		p.add(n, `use "" for an empty string`, "%s must not be null", what)
		return "", false
	}
	if d.Kind != yaml.ScalarNode {
		p.add(n, `pass structured values through codex.args, e.g. ["-c", "key=[1, 2]"]`,
			"%s must be a string, number or boolean, not %s", what, kindName(n))
		return "", false
	}
	switch d.ShortTag() {
	case "!!str":
		return codex.TOMLString(d.Value), true
	case "!!bool":
		var b bool
		if err := d.Decode(&b); err == nil {
			return strconv.FormatBool(b), true
		}
	case "!!int":
		var i int64
		if err := d.Decode(&i); err == nil {
			return strconv.FormatInt(i, 10), true
		}
		p.add(n, "", "%s: integer %.40s does not fit in 64 bits", what, d.Value)
		return "", false
	case "!!float":
		var f float64
		if err := d.Decode(&f); err == nil {
			return tomlFloat(f), true
		}
	}
	p.add(n, quoteHint(n), "%s must be a string, number or boolean, not %s", what, kindName(n))
	return "", false
}

// tomlFloat renders f as a TOML float (always with a fraction or exponent).
func tomlFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}
