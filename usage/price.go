package usage

// Price is what a model's tokens cost, in dollars per million tokens.
type Price struct {
	Input       float64 `json:"input"`        // an input token not served from the cache
	CachedInput float64 `json:"cached_input"` // an input token served from the cache
	Output      float64 `json:"output"`       // an output token, reasoning included
}

// Prices maps a model's name, as team.yaml sets it, to its price. A turn
// whose model has no price has no cost: batty never guesses one.
type Prices map[string]Price

// Cost is what t costs at p, in dollars: the input not cached at Input,
// the cached input at CachedInput, the output at Output (Codex counts
// cached input in input, and reasoning in output).
func (p Price) Cost(t Tokens) float64 {
	fresh := max(t.Input-t.CachedInput, 0)
	return (float64(fresh)*p.Input + float64(t.CachedInput)*p.CachedInput + float64(t.Output)*p.Output) / 1e6
}
