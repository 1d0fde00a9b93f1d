package dispatch

import (
	"cmp"
	"slices"
	"time"

	"github.com/battyhq/batty/project"
)

// usageSaveEvery is how often at most an account's rate-limit snapshot is
// written to state/quota.json when nothing else changed.
const usageSaveEvery = time.Minute

// UsageWarning is an account's rate-limit use crossing quota.warn_pct.
type UsageWarning struct {
	Account, Name string
	Agents        []string
	// Window is the window that crossed the threshold (the most used).
	Window project.RateLimitWindow
	Pct    float64 // the threshold
}

// warnStep decides what a new snapshot of windows means for an account
// whose last snapshot was warned or not, at threshold pct (0: never): warn
// once when the most used window reaches pct, and clear the mark when every
// window is below it again (after a reset). It returns the new mark, and
// the window to warn of (ok false: no warning). It is a pure function.
func warnStep(windows []project.RateLimitWindow, warned bool, pct float64) (bool, project.RateLimitWindow, bool) {
	if pct <= 0 || len(windows) == 0 {
		return warned, project.RateLimitWindow{}, false
	}
	top := slices.MaxFunc(windows, func(a, b project.RateLimitWindow) int { return cmp.Compare(a.UsedPct, b.UsedPct) })
	switch {
	case top.UsedPct < pct:
		return false, project.RateLimitWindow{}, false
	case warned:
		return true, project.RateLimitWindow{}, false
	}
	return true, top, true
}

// Usage records the rate-limit snapshot (windows, seen at seen) that
// agent's codex reported for the account of key ("" = the one agent is
// placed on). It returns the warning to raise when the account's use just
// crossed quota.warn_pct (nil otherwise: at most one per crossing, kept
// across restarts). The snapshot is persisted with a change of the warning
// mark, else at most once a minute.
func (b *QuotaBook) Usage(agent, key string, windows []project.RateLimitWindow, seen time.Time) (*UsageWarning, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	acc := b.accountFor(agent, key)
	if acc == nil {
		return nil, nil
	}
	was := acc.usage != nil && acc.usage.Warned
	warned, top, warn := warnStep(windows, was, b.warnPct)
	acc.usage = &project.AccountUsage{Account: acc.key, Windows: slices.Clone(windows), SeenAt: seen.UTC(), Warned: warned}
	var err error
	if warned != was || seen.Sub(acc.usageSaved) >= usageSaveEvery || seen.Before(acc.usageSaved) {
		// Codex reports a snapshot with every model response: the file
		// is written when the warning mark changes, else at most once per
		// usageSaveEvery per account (status reads the book, not the file,
		// while the daemon runs). A clock set back saves at once rather
		// than never.
		acc.usageSaved = seen
		err = b.persist()
	}
	if !warn {
		return nil, err
	}
	return &UsageWarning{Account: acc.key, Name: acc.name, Agents: slices.Clone(acc.agents), Window: top, Pct: b.warnPct}, err
}
