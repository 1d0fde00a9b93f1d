package team

import (
	"math"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Price is a model's price (pricing.<model>), in dollars per million
// tokens, as Codex counts them: Input an input token not served from the
// prompt cache, CachedInput one served from it, Output an output token
// (reasoning included).
type Price struct {
	Input       float64
	CachedInput float64
	Output      float64
	// Line is the line of the team file where the model is priced.
	Line int
}

// priceKeys are the keys of a model's price; all three are required.
var priceKeys = []string{"input", "cached_input", "output"}

// maxPrice bounds a price, in dollars per million tokens.
const maxPrice = 1_000_000

// maxModelName bounds a model's name in pricing.
const maxModelName = 200

// pricing decodes the top-level pricing mapping of f into cfg: model name
// → {input, cached_input, output}.
func (p *parser) pricing(f map[string]entry, cfg *Config) {
	e, ok := f["pricing"]
	if !ok || isNull(e.val) {
		return
	}
	models, ok := p.mapping(e.val, "pricing", nil)
	if !ok {
		return
	}
	cfg.Pricing = map[string]Price{}
	for model, me := range models {
		if !p.visit(me.key) {
			return
		}
		what := "pricing." + model
		if model == "" || len(model) > maxModelName || strings.ContainsFunc(model, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			p.add(me.key, "name the model as codex.model does, e.g. gpt-5-codex", "invalid model name %.60q in pricing", model)
			continue
		}
		if isNull(me.val) {
			p.add(me.val, `e.g. {input: 1.25, cached_input: 0.125, output: 10}`, "%s must be a mapping of input, cached_input and output, not null", what)
			continue
		}
		keys, ok := p.mapping(me.val, what, priceKeys)
		if !ok {
			continue
		}
		pr := Price{Line: me.key.Line}
		complete := true
		for _, k := range priceKeys {
			ke, ok := keys[k]
			if !ok {
				p.add(me.key, "add \""+k+": <dollars per million tokens>\"; batty never guesses a price", "%s has no %s", what, k)
				complete = false
				continue
			}
			v, ok := p.price(ke.val, what+"."+k)
			if !ok {
				complete = false
				continue
			}
			switch k {
			case "input":
				pr.Input = v
			case "cached_input":
				pr.CachedInput = v
			case "output":
				pr.Output = v
			}
		}
		if complete {
			cfg.Pricing[model] = pr
		}
	}
}

// price decodes a price: a number of dollars per million tokens, 0 to
// maxPrice.
func (p *parser) price(n *yaml.Node, what string) (float64, bool) {
	if !p.visit(n) {
		return 0, false
	}
	d := deref(n)
	if d == nil || d.Kind != yaml.ScalarNode || (d.ShortTag() != "!!int" && d.ShortTag() != "!!float") {
		p.add(n, "write dollars per million tokens as a number, e.g. 1.25, without quotes or $", "%s must be a number, not %s", what, kindName(n))
		return 0, false
	}
	var v float64
	if err := d.Decode(&v); err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > maxPrice {
		p.add(n, "", "%s must be between 0 and %d dollars per million tokens, got %.40s", what, maxPrice, d.Value)
		return 0, false
	}
	return v, true
}
