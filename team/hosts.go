package team

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// LocalHost is the reserved host name that stands for this machine: no
// entry of hosts may take it, and a role's hosts list may name it to keep
// some of its instances here.
const LocalHost = "local"

// maxHostField bounds the length of a host's ssh destination, dir and
// each command word, in bytes.
const maxHostField = 1024

// maxHostCommand bounds the number of words of a host's command.
const maxHostCommand = 64

var hostKeys = []string{"name", "ssh", "command", "dir", "concurrent_turns"}

// Host is one validated entry of the team file's hosts list: a machine
// that agents of the roles naming it run on, reached over the transport
// of package hosts. Exactly one of SSH and Command is set.
type Host struct {
	// Name identifies the host in roles' hosts lists; it matches ValidName,
	// is unique among the team's hosts and is never LocalHost.
	Name string
	// SSH is the destination given to ssh ("user@host", "host", an alias
	// of ~/.ssh/config, "ssh://user@host:port"): never empty when set,
	// never starting with "-", without blanks or control characters.
	SSH string
	// Command is a program and its arguments that run the words appended
	// to them as a command on the host, with its stdin and stdout
	// connected (kubectl exec -i POD --, docker exec -i CONTAINER): at
	// least one word, the first not empty. Run without a shell.
	Command []string
	// Dir is the project directory on the host as written: an absolute
	// path, "~" or a path starting with "~/" (the home directory of the
	// user on the host). Empty means the same path as the project here
	// (Config.Dir); see ProjectDir.
	Dir string
	// ConcurrentTurns caps the turns running at once on the host, between
	// 1 and 10000; 0 when unset (only the team's limits apply).
	ConcurrentTurns int
	// Line is the line of the team file where the host is defined.
	Line int
}

// ProjectDir is the directory of the project on h: h.Dir, or local (the
// project directory here) when h.Dir is empty. A path starting with "~"
// is left for the host's shell to expand.
func (h Host) ProjectDir(local string) string {
	if h.Dir == "" {
		return local
	}
	return h.Dir
}

// Host returns the host named name and whether the team defines it.
// LocalHost and "" are never defined hosts.
func (c *Config) Host(name string) (Host, bool) {
	i := slices.IndexFunc(c.Hosts, func(h Host) bool { return h.Name == name })
	if i < 0 {
		return Host{}, false
	}
	h := c.Hosts[i]
	h.Command = slices.Clone(h.Command)
	return h, true
}

// host returns the host of instance i (1-based, 0 for a single instance)
// of r: its hosts taken round robin, "" (this machine) when it has none or
// the turn falls on LocalHost.
func (r Role) host(i int) string {
	if len(r.Hosts) == 0 {
		return ""
	}
	h := r.Hosts[max(i-1, 0)%len(r.Hosts)]
	if h == LocalHost {
		return ""
	}
	return h
}

// hosts decodes the top-level hosts list into cfg.Hosts and records in
// p.hostNames every name it declares, valid entry or not, so that a role
// naming a host with another problem is not told that it does not exist.
// p.hostNames stays nil when the list itself cannot be read.
func (p *parser) hosts(f map[string]entry, cfg *Config) {
	e, ok := f["hosts"]
	if !ok || isNull(e.val) {
		p.hostNames = map[string]bool{}
		return
	}
	n := deref(e.val)
	if n.Kind != yaml.SequenceNode {
		p.add(e.val, "write a list of hosts, each starting with \"- name:\"", "hosts must be a list, not %s", kindName(e.val))
		return
	}
	p.hostNames = map[string]bool{}
	first := map[string]int{}
	for _, c := range n.Content {
		if !p.visit(c) {
			return
		}
		h, nameNode, ok := p.host(c)
		if nameNode == nil {
			continue
		}
		if line, dup := first[h.Name]; dup {
			p.add(nameNode, fmt.Sprintf("first defined at line %d", line), "duplicate host name %q", h.Name)
			continue
		}
		first[h.Name] = nameNode.Line
		p.hostNames[h.Name] = true
		if ok {
			cfg.Hosts = append(cfg.Hosts, h)
		}
	}
}

// host validates one element of the hosts list. nameNode is the node of a
// valid name (nil without one); ok says the whole entry is valid.
func (p *parser) host(n *yaml.Node) (h Host, nameNode *yaml.Node, ok bool) {
	d := deref(n)
	if d == nil || d.Kind != yaml.MappingNode {
		p.add(n, "each host is a mapping starting with \"- name:\", with ssh: or command:", "host must be a mapping, not %s", kindName(n))
		return h, nil, false
	}
	before := len(p.problems)
	h.Line = d.Line
	f, _ := p.mapping(d, "host", hostKeys)

	if e, ok := f["name"]; ok {
		if s, ok := p.name(e.val, "host name"); ok {
			if s == LocalHost {
				p.add(e.val, `"local" stands for this machine in a role's hosts; pick another name`, "host name %q is reserved", s)
			} else {
				h.Name, nameNode = s, e.val
			}
		}
	} else {
		p.add(d, `add e.g. "name: build1"`, "host is missing required key \"name\"")
	}

	se, hasSSH := f["ssh"]
	ce, hasCmd := f["command"]
	switch {
	case hasSSH && hasCmd:
		p.add(ce.key, "keep ssh: for a host reached over ssh, or command: for any other way in, not both", "host %q sets both ssh and command", h.Name)
	case !hasSSH && !hasCmd:
		p.add(d, `add e.g. "ssh: dev@build1.example.com", or "command: [kubectl, exec, -i, POD, --]"`, "host %q sets neither ssh nor command", h.Name)
	case hasSSH:
		h.SSH = p.sshDest(se.val)
	default:
		h.Command = p.hostCommand(ce.val)
	}

	if e, ok := f["dir"]; ok {
		h.Dir = p.hostDir(e.val)
	}
	if e, ok := f["concurrent_turns"]; ok {
		h.ConcurrentTurns, _ = p.integer(e.val, "host concurrent_turns", 1, maxConcurrentTurns)
	}
	return h, nameNode, len(p.problems) == before
}

// sshDest validates a host's ssh destination; "" after a problem.
func (p *parser) sshDest(n *yaml.Node) string {
	const hint = `write what you would type after "ssh", e.g. dev@build1.example.com or an alias of ~/.ssh/config`
	if isNull(n) {
		p.add(n, hint, "host ssh must not be empty")
		return ""
	}
	s, ok := p.str(n, "host ssh")
	switch {
	case !ok:
		return ""
	case strings.TrimSpace(s) == "":
		p.add(n, hint, "host ssh must not be empty")
	case strings.HasPrefix(s, "-"):
		p.add(n, "put ssh options in ~/.ssh/config under a Host entry and name that host here", "host ssh %.60q starts with \"-\": it would be read as an option", s)
	case len(s) > maxHostField:
		p.add(n, "", "host ssh is too long (%d bytes, at most %d)", len(s), maxHostField)
	case strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		p.add(n, hint, "host ssh %.60q holds a blank or a control character", s)
	default:
		return s
	}
	return ""
}

// hostCommand validates a host's command; nil after a problem.
func (p *parser) hostCommand(n *yaml.Node) []string {
	const hint = "write the command as a list of words, e.g. [kubectl, exec, -i, batty-0, --]"
	if d := deref(n); d != nil && d.Kind == yaml.ScalarNode && !isNull(d) {
		p.add(n, hint, "host command must be a list, not %s", kindName(n))
		return nil
	}
	items, ok := p.strList(n, "host command")
	switch {
	case !ok && isNull(n), ok && len(items) == 0:
		p.add(n, hint, "host command must not be empty")
		return nil
	case !ok:
		return nil
	case len(items) > maxHostCommand:
		p.add(n, "", "host command has %d words, at most %d", len(items), maxHostCommand)
		return nil
	}
	var out []string
	for i, it := range items {
		switch {
		case i == 0 && strings.TrimSpace(it.val) == "":
			p.add(it.node, hint, "host command must start with a program")
			return nil
		case len(it.val) > maxHostField:
			p.add(it.node, "", "host command word is too long (%d bytes, at most %d)", len(it.val), maxHostField)
			return nil
		}
		out = append(out, it.val)
	}
	if len(out) != len(deref(n).Content) {
		return nil // an element was reported
	}
	return out
}

// hostDir validates a host's dir; "" after a problem or for null.
func (p *parser) hostDir(n *yaml.Node) string {
	s, ok := p.str(n, "host dir")
	if !ok {
		return ""
	}
	const hint = "write an absolute path, or one starting with ~/ (the home directory on the host); leave dir out for the same path as here"
	switch {
	case s == "":
		p.add(n, hint, "host dir must not be empty")
	case len(s) > maxHostField:
		p.add(n, "", "host dir is too long (%d bytes, at most %d)", len(s), maxHostField)
	case strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f }):
		p.add(n, "", "host dir %.60q holds a control character", s)
	case s != "~" && !strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "~/"):
		p.add(n, hint, "host dir %.60q is relative", s)
	default:
		return s
	}
	return ""
}

// roleHosts decodes a role's hosts list: names of hosts of the team or
// LocalHost, each at most once. nil (this machine) after a problem.
func (p *parser) roleHosts(n *yaml.Node) []string {
	if isNull(n) {
		return nil
	}
	items, ok := p.strList(n, "role hosts")
	if !ok {
		return nil
	}
	if len(items) == 0 {
		p.add(n, "name hosts of the hosts list, or leave hosts out to run the role here", "role hosts is empty")
		return nil
	}
	var out []string
	bad := len(items) != len(deref(n).Content)
	for _, it := range items {
		switch {
		case slices.Contains(out, it.val):
			p.add(it.node, "name each host once; instances are spread over the list in turn", "host %q is listed twice", it.val)
			bad = true
		case it.val == LocalHost || p.hostNames == nil || p.hostNames[it.val]:
			out = append(out, it.val)
		default:
			known := append([]string{LocalHost}, keys(p.hostNames)...)
			hint := didYouMean(it.val, known)
			if hint == "" {
				hint = "define it in the top-level hosts list, or name one of: " + strings.Join(known, ", ")
			}
			p.add(it.node, hint, "role hosts names unknown host %.60q", it.val)
			bad = true
		}
	}
	if bad {
		return nil
	}
	return out
}

// keys returns the keys of m, sorted.
func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// remoteRole refuses, at the role's hosts key (hostsNode, nil without
// one), what agents on other hosts cannot do yet: run on the team's
// accounts, or work in a directory outside the project (the host has
// only the project directory). A role whose hosts are all LocalHost is
// not remote.
func (p *parser) remoteRole(hostsNode *yaml.Node, f map[string]entry, r *roleDraft) {
	if hostsNode == nil || !slices.ContainsFunc(r.Hosts, func(h string) bool { return h != LocalHost }) {
		return
	}
	if len(r.Accounts) > 0 {
		n := hostsNode
		if e, ok := f["accounts"]; ok {
			n = e.key
		}
		p.add(n, "remove accounts from this role, or its hosts to run it here", "accounts for agents on other hosts are not supported yet")
	}
	if rel, err := filepath.Rel(p.dir, r.Cwd); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		n := hostsNode
		if e, ok := f["cwd"]; ok {
			n = e.val
		}
		p.add(n, "set cwd to a directory inside the project: the host has the project directory only", "the cwd of a role on other hosts must lie inside the project directory")
	}
}
