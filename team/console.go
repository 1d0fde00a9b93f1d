package team

import (
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// DefaultConsoleListen is where the console listens when the team file
// does not say: loopback, on a port the kernel picks.
const DefaultConsoleListen = "127.0.0.1:0"

// consoleKeys are the keys of the console mapping.
var consoleKeys = []string{"listen", "tls_cert", "tls_key", "insecure"}

// Console is the team file's console: the web view the daemon serves
// (see the console package).
type Console struct {
	// Off is set by `console: off` (or false): the daemon serves no
	// console.
	Off bool
	// Listen is the TCP address, host:port, an IP and a port (0: one the
	// kernel picks). Default DefaultConsoleListen.
	Listen string
	// TLSCert and TLSKey are the PEM files of the console's certificate
	// (its chain) and private key, absolute; both or neither. With them
	// the console serves HTTPS.
	TLSCert, TLSKey string
	// Insecure lets a console on an address that is not loopback serve
	// plain HTTP (the login token and the session cookie cross the
	// network in the clear): `batty validate` and `batty start` warn.
	Insecure bool
}

// TLS reports whether the console serves HTTPS.
func (c Console) TLS() bool { return c.TLSCert != "" }

// Warning is what `batty validate` and `batty start` say of c, "" when
// nothing: a console on an address that is not loopback served in the
// clear (insecure: true). It is a pure function.
func (c Console) Warning() string {
	if c.Off || c.TLS() || !c.Insecure || loopbackListen(c.Listen) {
		return ""
	}
	return fmt.Sprintf("console.listen %q is not a loopback address and insecure: true serves it without TLS: "+
		"the login token and the session cookie cross the network in the clear (give tls_cert and tls_key instead)", c.Listen)
}

// loopbackListen reports whether addr (host:port) is on a loopback IP.
func loopbackListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	ip := net.ParseIP(host)
	return err == nil && ip != nil && ip.IsLoopback()
}

// console decodes the top-level console key of f into cfg: absent or
// null, the default; off or false, no console; a mapping {listen,
// tls_cert, tls_key, insecure}. A listen address that is not loopback
// needs the TLS files or insecure: true.
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
	p.listener(m, "console", e.val, &cfg.Console.Listen, &cfg.Console.TLSCert, &cfg.Console.TLSKey, &cfg.Console.Insecure)
}

// listener decodes the keys listen, tls_cert, tls_key and insecure of m,
// the mapping of what (its node whole), into listen, cert, key and
// insecure, as the console and the metrics endpoint take them: listen an
// IP and a port (ConsoleListenProblem); the TLS files both or neither,
// the key readable by its owner only and matching the certificate; an
// address that is not loopback needs TLS or insecure: true. listen keeps
// its value when m has none. Each problem names its key as what.key.
func (p *parser) listener(m map[string]entry, what string, whole *yaml.Node, listen, cert, key *string, insecure *bool) {
	listenNode := whole
	if le, ok := m["listen"]; ok {
		listenNode = le.val
		s, ok := p.str(le.val, what+".listen")
		if !ok {
			return
		}
		if problem := ConsoleListenProblem(s); problem != "" {
			p.add(le.val, `e.g. "127.0.0.1:8420", or "127.0.0.1:0" for a free port`, "%s.listen %.60q: %s", what, s, problem)
			return
		}
		*listen = s
	}
	if ie, ok := m["insecure"]; ok {
		if *insecure, ok = p.boolean(ie.val, what+".insecure"); !ok {
			return
		}
	}
	files := map[string]string{}
	for _, k := range []string{"tls_cert", "tls_key"} {
		fe, ok := m[k]
		if !ok {
			continue
		}
		s, ok := p.str(fe.val, what+"."+k)
		if !ok {
			return
		}
		abs, ok := p.path(fe.val, s)
		if !ok || !p.checkFile(fe.val, what+"."+k, s, abs, false) {
			return
		}
		files[k] = abs
	}
	c, k := files["tls_cert"], files["tls_key"]
	switch {
	case (c == "") != (k == ""):
		missing, given := "tls_key", m["tls_cert"]
		if c == "" {
			missing, given = "tls_cert", m["tls_key"]
		}
		p.add(given.val, "give both tls_cert (the certificate, PEM) and tls_key (its private key, PEM)", "%s.%s is missing", what, missing)
	case c != "":
		if problem := ConsoleKeyProblem(k); problem != "" {
			p.add(m["tls_key"].val, "chmod 600 "+k, "%s.tls_key %.80q: %s", what, k, problem)
			return
		}
		if _, err := tls.LoadX509KeyPair(c, k); err != nil {
			p.add(m["tls_key"].val, "tls_cert is the certificate (chain) and tls_key its private key, both PEM",
				"%s.tls_cert %.80q and tls_key %.80q cannot be used: %v", what, c, k, err)
			return
		}
		*cert, *key = c, k
	case !loopbackListen(*listen) && !*insecure:
		p.add(listenNode, "give tls_cert and tls_key (a certificate and its key, PEM) to serve HTTPS, or set insecure: true to serve it in the clear",
			"%s.listen %.60q is not a loopback address: it needs TLS", what, *listen)
	}
}

// ConsoleKeyProblem says what is wrong with the console's private key
// file at path, "" when nothing: others than its owner may read it.
func ConsoleKeyProblem(path string) string {
	st, err := os.Stat(path)
	if err != nil {
		return err.Error()
	}
	if st.Mode().Perm()&0o077 != 0 {
		return fmt.Sprintf("others than its owner may read it (mode %04o)", st.Mode().Perm())
	}
	return ""
}

// ConsoleListenProblem says what is wrong with addr as console.listen, ""
// when nothing is: it must be host:port with an IP literal (a name could
// resolve elsewhere) and a port in 0–65535. It is a pure function.
func ConsoleListenProblem(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "not host:port"
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return "the port must be a number from 0 to 65535"
	}
	if net.ParseIP(host) == nil {
		return "the host must be an IP address, such as 127.0.0.1, ::1 or 0.0.0.0"
	}
	return ""
}
