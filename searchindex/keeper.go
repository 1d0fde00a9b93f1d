package searchindex

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/battyhq/batty/journal"
	"github.com/battyhq/batty/project"
)

// Keeper is the daemon's side of the turn journal and its index: Append
// records a finished turn in the journal (durably, before it returns) and
// tells the index; Run, the index's one writer, brings the index up to the
// journal from its own goroutine, a second after the first turn it was
// told of (the turns of that second in one transaction), and all of it at
// its start and every FullEvery. A turn never waits for the index: a
// search reads what the index lacks from the journal directly.
type Keeper struct {
	l    project.Layout
	opts KeeperOptions

	mu      sync.Mutex
	pending []string      // the agents whose journals grew
	wake    chan struct{} // cap 1: pending has news
}

// KeeperOptions tunes a Keeper; the zero value is the daemon's.
type KeeperOptions struct {
	// Settle is how long after the first turn it is told of the keeper
	// waits for more before it syncs (default a second).
	Settle time.Duration
	// FullEvery is how often the whole journal is checked against the
	// index (a journal replaced or moved by hand; default 10 minutes).
	FullEvery time.Duration
	// OnSync, when set, is told of each sync's result (from Run's
	// goroutine): the daemon's log, and tests.
	OnSync func(Stats, error)
}

// NewKeeper returns the keeper of the project in l.
func NewKeeper(l project.Layout, opts KeeperOptions) *Keeper {
	if opts.Settle <= 0 {
		opts.Settle = time.Second
	}
	if opts.FullEvery <= 0 {
		opts.FullEvery = 10 * time.Minute
	}
	return &Keeper{l: l, opts: opts, wake: make(chan struct{}, 1)}
}

// Append records turn t in its agent's journal (journal.Append: one line,
// fsynced before it returns) and tells Run. It is the daemon's one call
// per turn that ran, made as the turn's end reaches it, once the turn's
// edits are committed (t.Commit), before its outcome is recorded. It never
// waits for the index. Safe for concurrent use.
func (k *Keeper) Append(t journal.Turn) error {
	r := journal.Build(t)
	if _, _, err := journal.Append(k.l, r); err != nil {
		return err
	}
	k.mu.Lock()
	if !slices.Contains(k.pending, r.Agent) {
		k.pending = append(k.pending, r.Agent)
	}
	k.mu.Unlock()
	select {
	case k.wake <- struct{}{}:
	default:
	}
	return nil
}

// Run owns the index's writer until ctx ends: it opens the index (made
// again when missing or corrupt), brings it up to the whole journal, then
// syncs the journals Append names, a Settle after the first, and the
// whole journal every FullEvery. A sync that fails is told to OnSync and
// tried again with the next. It returns when ctx ends (nil), or when the
// index cannot be opened.
func (k *Keeper) Run(ctx context.Context) error {
	w, err := Open(ctx, k.l)
	if err != nil {
		return fmt.Errorf("the search index: %w", err)
	}
	defer w.Close()
	if w.Rebuilt != "" {
		k.told(Stats{}, fmt.Errorf("the search index was %s: made again from the turn journal", w.Rebuilt))
	}
	k.told(w.Sync(ctx))
	full := time.NewTicker(k.opts.FullEvery)
	defer full.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-full.C:
			k.told(w.Sync(ctx))
		case <-k.wake:
			settle := time.NewTimer(k.opts.Settle)
			select {
			case <-ctx.Done():
				settle.Stop()
				return nil
			case <-settle.C:
			}
			k.mu.Lock()
			agents := k.pending
			k.pending = nil
			k.mu.Unlock()
			if len(agents) == 0 {
				continue
			}
			var all Stats
			var errs []error
			for _, a := range agents {
				st, err := w.SyncAgent(ctx, a)
				all.Indexed += st.Indexed
				all.Reindexed += st.Reindexed
				all.Skips = append(all.Skips, st.Skips...)
				if err != nil {
					errs = append(errs, err)
					// Tried again with the next sync.
					k.mu.Lock()
					if !slices.Contains(k.pending, a) {
						k.pending = append(k.pending, a)
					}
					k.mu.Unlock()
				}
			}
			k.told(all, errors.Join(errs...))
		}
	}
}

func (k *Keeper) told(st Stats, err error) {
	if k.opts.OnSync != nil {
		k.opts.OnSync(st, err)
	}
}
