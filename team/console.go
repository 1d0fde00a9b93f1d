package team

import (
	"net"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// DefaultConsoleListen is where the console listens when the team file
// does not say: loopback, on a port the kernel picks.
const DefaultConsoleListen = "127.0.0.1:0"

// consoleKeys are the keys of the console mapping.
var consoleKeys = []string{"listen"}

// Console is the team file's console: the web view the daemon serves
// (see the console package).
type Console struct {
	// Off is set by `console: off` (or false): the daemon serves no
	// console.
	Off bool
	// Listen is the TCP address, host:port, a loopback IP and a port (0:
	// one the kernel picks). Default DefaultConsoleListen.
	Listen string
}

// console decodes the top-level console key of f into cfg: absent or
// null, the default; off or false, no console; a mapping {listen: ...}.
func (p *parser) console(f map[string]entry, cfg *Config) {
	cfg.Console = Console{Listen: DefaultConsoleListen}
	e, ok := f["console"]
	if !ok || isNull(e.val) {
		return
	}
	d := deref(e.val)
	if d != nil && d.Kind == yaml.ScalarNode {
		if !p.visit(e.val) {
			return
		}
		if (d.ShortTag() == "!!str" && d.Value == "off") || (d.ShortTag() == "!!bool" && d.Value == "false") {
			cfg.Console.Off = true
			return
		}
		p.add(e.val, `write "console: off", or a mapping such as {listen: "127.0.0.1:8420"}`, "console must be off or a mapping, not %.40q", d.Value)
		return
	}
	m, ok := p.mapping(e.val, "console", consoleKeys)
	if !ok {
		return
	}
	if le, ok := m["listen"]; ok {
		s, ok := p.str(le.val, "console.listen")
		if !ok {
			return
		}
		if problem := ConsoleListenProblem(s); problem != "" {
			p.add(le.val, `e.g. "127.0.0.1:8420", or "127.0.0.1:0" for a free port`, "console.listen %.60q: %s", s, problem)
			return
		}
		cfg.Console.Listen = s
	}
}

// ConsoleListenProblem says what is wrong with addr as console.listen, ""
// when nothing is: it must be host:port with a loopback IP literal (a
// name could resolve elsewhere; a non-loopback address would need TLS,
// which this console does not serve yet) and a port in 0–65535. It is a
// pure function.
func ConsoleListenProblem(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "not host:port"
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return "the port must be a number from 0 to 65535"
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return "the host must be an IP address, such as 127.0.0.1 or ::1"
	}
	if !ip.IsLoopback() {
		return "the console listens only on a loopback address (127.0.0.1, ::1): a wider one would need TLS"
	}
	return ""
}
