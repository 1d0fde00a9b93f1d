package team

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The OTLP protocols telemetry.otlp.protocol takes, as
// OTEL_EXPORTER_OTLP_PROTOCOL names them.
const (
	OTLPHTTP = "http/protobuf"
	OTLPGRPC = "grpc"
)

// telemetryKeys, metricsKeys and otlpKeys are the keys of the telemetry
// mapping and of its metrics and otlp mappings.
var (
	telemetryKeys = []string{"metrics", "otlp", "include_text"}
	metricsKeys   = []string{"listen", "tls_cert", "tls_key", "insecure"}
	otlpKeys      = []string{"endpoint", "protocol", "headers"}
)

// Telemetry is the team file's telemetry: the Prometheus metrics and the
// OpenTelemetry traces the daemon exports (see the telemetry package).
// Both are off by default.
type Telemetry struct {
	// Metrics is where /metrics is served; its Listen is "" when the file
	// sets none (the console serves it all the same, behind its login).
	Metrics Metrics
	// OTLP is where traces go; its Endpoint is "" when the file sets none
	// (the standard OTEL_EXPORTER_OTLP_* variables may still turn them
	// on).
	OTLP OTLP
	// IncludeText puts the text of messages and replies in the spans'
	// attributes; off, no prompt or reply text leaves the machine.
	IncludeText bool
}

// Metrics is the listener of telemetry.metrics: an address, host:port
// with an IP (ConsoleListenProblem), and, as the console's, the TLS files
// or insecure: true for an address that is not loopback.
type Metrics struct {
	Listen          string
	TLSCert, TLSKey string
	Insecure        bool
}

// On reports whether the metrics have a listener of their own.
func (m Metrics) On() bool { return m.Listen != "" }

// TLS reports whether the metrics are served over HTTPS.
func (m Metrics) TLS() bool { return m.TLSCert != "" }

// OTLP is telemetry.otlp: the collector's endpoint (a URL, http or
// https), its protocol (OTLPHTTP, the default, or OTLPGRPC) and the
// headers every export carries (an authorization token, say).
type OTLP struct {
	Endpoint string
	Protocol string
	Headers  map[string]string
}

// Warning is what `batty validate` and `batty start` say of t, "" when
// nothing: metrics served in the clear on an address that is not
// loopback. It is a pure function.
func (t Telemetry) Warning() string {
	m := t.Metrics
	if !m.On() || m.TLS() || !m.Insecure || loopbackListen(m.Listen) {
		return ""
	}
	return fmt.Sprintf("telemetry.metrics %q is not a loopback address and insecure: true serves it without TLS: "+
		"anyone who reaches it reads the team's metrics (give tls_cert and tls_key instead)", m.Listen)
}

// telemetry decodes the top-level telemetry key of f into cfg: absent or
// null, everything off; a mapping {metrics, otlp, include_text}, metrics
// an address or a mapping {listen, tls_cert, tls_key, insecure}, otlp a
// mapping {endpoint, protocol, headers}.
func (p *parser) telemetry(f map[string]entry, cfg *Config) {
	e, ok := f["telemetry"]
	if !ok || isNull(e.val) {
		return
	}
	m, ok := p.mapping(e.val, "telemetry", telemetryKeys)
	if !ok {
		return
	}
	if me, ok := m["metrics"]; ok && !isNull(me.val) {
		p.telemetryMetrics(me.val, &cfg.Telemetry.Metrics)
	}
	if oe, ok := m["otlp"]; ok && !isNull(oe.val) {
		p.telemetryOTLP(oe.val, &cfg.Telemetry.OTLP)
	}
	if ie, ok := m["include_text"]; ok {
		cfg.Telemetry.IncludeText, _ = p.boolean(ie.val, "telemetry.include_text")
	}
}

// telemetryMetrics decodes telemetry.metrics n into out.
func (p *parser) telemetryMetrics(n *yaml.Node, out *Metrics) {
	const what = "telemetry.metrics"
	d := deref(n)
	if d != nil && d.Kind == yaml.ScalarNode {
		// The short form: the address alone.
		s, ok := p.str(n, what)
		if !ok {
			return
		}
		if problem := ConsoleListenProblem(s); problem != "" {
			p.add(n, `e.g. "127.0.0.1:9464"`, "%s %.60q: %s", what, s, problem)
			return
		}
		if !loopbackListen(s) {
			p.add(n, "write the mapping {listen, tls_cert, tls_key} to serve HTTPS, or {listen, insecure: true} to serve it in the clear",
				"%s %.60q is not a loopback address: it needs TLS", what, s)
			return
		}
		out.Listen = s
		return
	}
	m, ok := p.mapping(n, what, metricsKeys)
	if !ok {
		return
	}
	if _, ok := m["listen"]; !ok {
		p.add(n, `e.g. {listen: "127.0.0.1:9464"}`, "%s needs listen", what)
		return
	}
	var got Metrics
	before := len(p.problems)
	p.listener(m, what, n, &got.Listen, &got.TLSCert, &got.TLSKey, &got.Insecure)
	if len(p.problems) == before {
		*out = got
	}
}

// telemetryOTLP decodes telemetry.otlp n into out.
func (p *parser) telemetryOTLP(n *yaml.Node, out *OTLP) {
	m, ok := p.mapping(n, "telemetry.otlp", otlpKeys)
	if !ok {
		return
	}
	var got OTLP
	if ee, ok := m["endpoint"]; ok {
		s, ok := p.str(ee.val, "telemetry.otlp.endpoint")
		if !ok {
			return
		}
		if problem := OTLPEndpointProblem(s); problem != "" {
			p.add(ee.val, `e.g. "http://127.0.0.1:4318" (http/protobuf) or "http://127.0.0.1:4317" (grpc)`, "telemetry.otlp.endpoint %.80q: %s", s, problem)
			return
		}
		got.Endpoint = s
	}
	if pe, ok := m["protocol"]; ok {
		s, ok := p.str(pe.val, "telemetry.otlp.protocol")
		if !ok {
			return
		}
		if s != OTLPHTTP && s != OTLPGRPC {
			p.add(pe.val, "write "+OTLPHTTP+" or "+OTLPGRPC, "telemetry.otlp.protocol must be %s or %s, not %.40q", OTLPHTTP, OTLPGRPC, s)
			return
		}
		got.Protocol = s
	}
	if he, ok := m["headers"]; ok && !isNull(he.val) {
		hm, ok := p.mapping(he.val, "telemetry.otlp.headers", nil)
		if !ok {
			return
		}
		got.Headers = map[string]string{}
		for _, k := range slices.Sorted(maps.Keys(hm)) {
			v, ok := p.str(hm[k].val, "telemetry.otlp.headers."+k)
			if !ok {
				return
			}
			if problem := headerProblem(k, v); problem != "" {
				p.add(hm[k].val, "", "telemetry.otlp.headers.%.40s: %s", k, problem)
				return
			}
			got.Headers[k] = v
		}
	}
	if got.Endpoint == "" && (got.Protocol != "" || got.Headers != nil) {
		p.add(n, `e.g. {endpoint: "http://127.0.0.1:4318"}`, "telemetry.otlp needs endpoint")
		return
	}
	*out = got
}

// OTLPEndpointProblem says what is wrong with s as telemetry.otlp.endpoint,
// "" when nothing: an absolute http or https URL with a host, no user
// information (a secret goes in headers), no query or fragment. It is a
// pure function.
func OTLPEndpointProblem(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "not a URL"
	case u.Scheme != "http" && u.Scheme != "https":
		return "the scheme must be http or https"
	case u.Host == "":
		return "no host"
	case u.User != nil:
		return "no user or password in the URL: give them in headers"
	case u.RawQuery != "" || u.Fragment != "":
		return "no query or fragment"
	}
	return ""
}

// headerProblem says what is wrong with the header k: v, "" when nothing:
// a token of a name, a value without control characters.
func headerProblem(k, v string) string {
	if k == "" || strings.ContainsFunc(k, func(r rune) bool {
		return r <= ' ' || r >= 0x7f || strings.ContainsRune("()<>@,;:\\\"/[]?={}", r)
	}) {
		return "not a header name"
	}
	if strings.ContainsFunc(v, func(r rune) bool { return (r < ' ' && r != '\t') || r == 0x7f }) {
		return "the value holds a control character"
	}
	return ""
}
