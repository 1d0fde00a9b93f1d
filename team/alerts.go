package team

import (
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// DefaultAlertTimeout is how long an on_alert command may run before it is
// killed (timeouts.alert).
const DefaultAlertTimeout = 10 * time.Second

// maxAlertArgs bounds the length of the on_alert list.
const maxAlertArgs = 64

// alerts decodes the top-level on_alert and alert_on_reply keys of f into
// cfg.
func (p *parser) alerts(f map[string]entry, cfg *Config) {
	if e, ok := f["on_alert"]; ok && !isNull(e.val) {
		items, ok := p.strList(e.val, "on_alert")
		switch {
		case !ok:
		case len(items) == 0:
			p.add(e.val, `e.g. [notify-send, batty] or leave the key out`, "on_alert must name a command, not an empty list")
		case len(items) > maxAlertArgs:
			p.add(e.val, "", "on_alert has %d elements; at most %d are allowed", len(items), maxAlertArgs)
		case items[0].val == "":
			p.add(items[0].node, `e.g. "notify-send" or "./scripts/alert.sh"`, "on_alert's command (its first element) must not be empty")
		default:
			argv := make([]string, 0, len(items))
			for _, it := range items {
				argv = append(argv, it.val)
			}
			if strings.ContainsRune(argv[0], '/') {
				abs, ok := p.path(items[0].node, argv[0])
				if !ok {
					return
				}
				argv[0] = abs
			}
			cfg.OnAlert = argv
			p.setLine("on_alert", e.val.Line)
		}
	}
	if e, ok := f["alert_on_reply"]; ok {
		if v, ok := p.boolean(e.val, "alert_on_reply"); ok {
			cfg.AlertOnReply = v
		}
	}
}

// boolean decodes a boolean scalar. Null yields ok=false without a problem.
func (p *parser) boolean(n *yaml.Node, what string) (bool, bool) {
	if isNull(n) || !p.visit(n) {
		return false, false
	}
	d := deref(n)
	if d.Kind != yaml.ScalarNode || d.ShortTag() != "!!bool" {
		p.add(n, "write true or false, without quotes", "%s must be true or false, not %s", what, kindName(n))
		return false, false
	}
	var v bool
	if err := d.Decode(&v); err != nil {
		p.add(n, "write true or false", "%s must be true or false, got %.40s", what, d.Value)
		return false, false
	}
	return v, true
}
