package searchindex

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/journal"
	"github.com/battyhq/batty/protocol"
)

// The daemon's keeper: a turn appended is in the journal at once and in
// the index after the keeper's next sync; a corrupt index found at the
// start is made again from the journal.
func TestKeeper(t *testing.T) {
	l := layout(t)
	team(t, l)
	if err := os.MkdirAll(filepath.Join(l.Dir, DirName), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(Path(l), []byte(strings.Repeat("garbage ", 1000)), 0o600); err != nil {
		t.Fatal(err)
	}
	synced := make(chan Stats, 10)
	var mu sync.Mutex
	var errs []error
	k := NewKeeper(l, KeeperOptions{Settle: time.Millisecond, OnSync: func(st Stats, err error) {
		if err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
			return
		}
		synced <- st
	}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx) }()
	if st := <-synced; st.Indexed != 4 {
		t.Errorf("the first sync indexed %d", st.Indexed)
	}
	err := k.Append(journal.Turn{Agent: "carol", Role: "dev", At: t0.Add(time.Hour),
		Message:  inbox.Message{ID: "m100", From: "alice", Body: "please look at the tokenizer", CreatedAt: t0, Attempt: 1},
		Finished: protocol.TurnFinished{ThreadID: "th-c", Status: protocol.TurnCompleted, Reply: "looked"}})
	if err != nil {
		t.Fatal(err)
	}
	if st := <-synced; st.Indexed != 1 {
		t.Errorf("the turn's sync indexed %d", st.Indexed)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "made again") {
		t.Errorf("errors told %v", errs)
	}
	mu.Unlock()
	res := search(t, l, Query{Text: "tokenizer"})
	if len(res.Hits) != 1 || res.Hits[0].From != "alice" || res.Direct != "" {
		t.Errorf("hits %+v, direct %q", res.Hits, res.Direct)
	}
}
