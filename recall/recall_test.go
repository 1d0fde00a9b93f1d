package recall

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/inbox"
	"github.com/battyhq/batty/journal"
	"github.com/battyhq/batty/outbox"
	"github.com/battyhq/batty/project"
	"github.com/battyhq/batty/protocol"
	"github.com/battyhq/batty/team"
)

var t0 = time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC)

const secret = "password=hunter2hunter2"

// fixture is a team of two agents and its journal: alice's turn holds a
// secret, bob's a long reply.
func fixture(t *testing.T, long string) (project.Layout, *team.Config) {
	t.Helper()
	dir := t.TempDir()
	cfg, err := team.Parse(filepath.Join(dir, "team.yaml"), []byte("name: mem\nroles:\n  - name: alice\n  - name: bob\n"))
	if err != nil {
		t.Fatal(err)
	}
	l := project.Layout{Dir: filepath.Join(dir, "state")}
	recs := []journal.Record{
		rec("alice", "th-alice-1", 1, "deploy zanzibar with "+secret, "deployed zanzibar"),
		rec("bob", "th-bob-1", 2, "zanzibar notes", long),
	}
	for _, r := range recs {
		if _, _, err := journal.Append(l, r); err != nil {
			t.Fatal(err)
		}
	}
	return l, cfg
}

func rec(agent, thread string, n int, body, reply string) journal.Record {
	return journal.Build(journal.Turn{Agent: agent, Role: agent, At: t0.Add(time.Duration(n) * time.Minute),
		Message:  inbox.Message{ID: fmt.Sprintf("m%03d", n), From: "human", Body: body, CreatedAt: t0, Attempt: 1},
		Finished: protocol.TurnFinished{ThreadID: thread, Status: protocol.TurnCompleted, Reply: reply}})
}

func TestAnswerSearchRedacts(t *testing.T) {
	l, cfg := fixture(t, "short")
	for _, format := range []string{outbox.FormatText, outbox.FormatJSON} {
		a := Answer(context.Background(), l, cfg, outbox.Recall{Search: "hunter2hunter2", Format: format}, time.UTC)
		if a.Error != "" {
			t.Fatalf("%q: %s", format, a.Error)
		}
		if strings.Contains(a.Output, "hunter2") || !strings.Contains(a.Output, "REDACTED") {
			t.Fatalf("%q: the secret is not redacted:\n%s", format, a.Output)
		}
	}
	a := Answer(context.Background(), l, cfg, outbox.Recall{Search: "zanzibar", Agents: []string{"alice"}, Format: outbox.FormatJSON}, time.UTC)
	var got struct{ Hits []struct{ Agent string } }
	if err := json.Unmarshal([]byte(a.Output), &got); err != nil || len(got.Hits) != 1 || got.Hits[0].Agent != "alice" {
		t.Fatalf("search of alice's turns: %+v, %v\n%s", got, err, a.Output)
	}
}

func TestAnswerShowRedacts(t *testing.T) {
	l, cfg := fixture(t, "short")
	a := Answer(context.Background(), l, cfg, outbox.Recall{Thread: "th-alice-1"}, time.UTC)
	if a.Error != "" {
		t.Fatal(a.Error)
	}
	if strings.Contains(a.Output, "hunter2") || !strings.Contains(a.Output, "deployed zanzibar") {
		t.Fatalf("thread shown:\n%s", a.Output)
	}
}

// Only the team's own agents and threads: another name is an error, not
// a search of somewhere else.
func TestAnswerTeamScoped(t *testing.T) {
	l, cfg := fixture(t, "short")
	if a := Answer(context.Background(), l, cfg, outbox.Recall{Search: "zanzibar", Agents: []string{"mallory"}}, time.UTC); !strings.Contains(a.Error, "unknown agent") || a.Output != "" {
		t.Fatalf("an agent of no team: %+v", a)
	}
	if a := Answer(context.Background(), l, cfg, outbox.Recall{Thread: "th-other-team"}, time.UTC); a.Error == "" || a.Output != "" {
		t.Fatalf("a thread of no agent of the team: %+v", a)
	}
}

func TestAnswerBounded(t *testing.T) {
	l, cfg := fixture(t, strings.Repeat("zanzibar é ", outbox.MaxAnswerOutput/4))
	a := Answer(context.Background(), l, cfg, outbox.Recall{Thread: "th-bob-1"}, time.UTC)
	if a.Error != "" {
		t.Fatal(a.Error)
	}
	if len(a.Output) > outbox.MaxAnswerOutput || len(a.Notes) == 0 || !strings.Contains(a.Notes[len(a.Notes)-1], "cut") {
		t.Fatalf("answer of %d bytes, notes %q", len(a.Output), a.Notes)
	}
	// Written and read back whole.
	if err := outbox.WriteAnswer(l.Dir, "bob", "20300501T120000.000000000Z-0123abcd", a, t0); err != nil {
		t.Fatal(err)
	}
}

func TestBound(t *testing.T) {
	for _, tt := range []struct {
		s    string
		max  int
		want string
		cut  bool
	}{
		{"abc", 3, "abc", false},
		{"abcd", 3, "abc", true},
		{"aé", 2, "a", true},
		{"é", 1, "", true},
	} {
		if got, cut := Bound(tt.s, tt.max); got != tt.want || cut != tt.cut {
			t.Errorf("Bound(%q, %d) = %q, %v; want %q, %v", tt.s, tt.max, got, cut, tt.want, tt.cut)
		}
	}
}

func TestBucket(t *testing.T) {
	var b Bucket
	for i := range BucketSize {
		if w := b.Take(t0); w != 0 {
			t.Fatalf("take %d of a full bucket: wait %s", i, w)
		}
	}
	if w := b.Take(t0); w != BucketRefill {
		t.Fatalf("an empty bucket: wait %s, want %s", w, BucketRefill)
	}
	if w := b.Take(t0.Add(BucketRefill / 2)); w != BucketRefill/2 {
		t.Fatalf("half refilled: wait %s, want %s", w, BucketRefill/2)
	}
	if w := b.Take(t0.Add(BucketRefill)); w != 0 {
		t.Fatalf("refilled: wait %s", w)
	}
	// A clock going back gives nothing.
	if w := b.Take(t0); w == 0 {
		t.Fatal("a clock going back refilled the bucket")
	}
}
