package usage

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/battyhq/batty/atomicfile"
	"github.com/battyhq/batty/project"
)

// The ledger's files: <prefix>-NNNNNN.jsonl, a new one when the current
// one would grow past its size, the oldest removed past the count kept.
// A segment is never renamed, so a reader that lists them while the daemon
// writes misses nothing but a segment removed as the oldest.
const (
	turnsPrefix  = "turns"
	limitsPrefix = "limits"
	segmentExt   = ".jsonl"
)

// Bounds of the ledger: the turns files hold about 120,000 turns (a line
// is about 350 bytes), the limits files far more samples than a team
// makes in months (a window's sample is written when it changes).
const (
	TurnsSegmentMax   = 4 << 20
	TurnsSegmentKeep  = 10
	LimitsSegmentMax  = 1 << 20
	LimitsSegmentKeep = 4
)

// maxPending bounds the turns held in memory while the ledger cannot be
// written (a full disk): past it the oldest is dropped and reported.
const maxPending = 1024

// limitEvery is how often a window that did not change is sampled again.
const limitEvery = time.Hour

// Ledger appends to the project's usage ledger. Only the daemon writes it
// (under the project's lock). Safe for concurrent use.
//
// It holds <state>/usage open (opened without following a link, see
// project.Layout.OpenDir) and opens, creates and removes its files
// relative to it with O_NOFOLLOW.
type Ledger struct {
	mu      sync.Mutex
	dir     *atomicfile.Dir // owned; nil once closed
	turns   *segments
	limits  *segments
	seen    map[string]bool // the keys of the turns in the ledger
	pending []Turn          // turns whose append failed, written before the next one
	threads map[string]Turn // each agent's last turn appended
	last    map[string]LimitSample
	opened  []Turn     // the turns read at Open, until TakeOpened
	observe func(Turn) // SetObserver
}

// SetObserver has f told of every turn AppendTurn adds (once per key, as
// the ledger counts it), after the append, from the appending goroutine;
// nil: none. f must not block nor call the ledger.
func (l *Ledger) SetObserver(f func(Turn)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.observe = f
}

// Open opens the ledger of the project in l for appending, creating
// <state>/usage (0700) when needed. It reads the keys of the turns in the
// ledger, so that a turn appended again is not counted twice; lines it
// cannot read are left as they are (the reader skips and reports them).
func Open(l project.Layout) (*Ledger, error) {
	dir, err := l.OpenDir(project.UsageName, true)
	if err != nil {
		return nil, fmt.Errorf("open usage ledger: %w", err)
	}
	lg := &Ledger{dir: dir, seen: map[string]bool{}, last: map[string]LimitSample{}, threads: map[string]Turn{},
		turns:  &segments{dir: dir, prefix: turnsPrefix, max: TurnsSegmentMax, keep: TurnsSegmentKeep},
		limits: &segments{dir: dir, prefix: limitsPrefix, max: LimitsSegmentMax, keep: LimitsSegmentKeep}}
	rd, err := readDir(dir, time.Time{}, time.Time{})
	if err != nil {
		dir.Close()
		return nil, err
	}
	for _, t := range rd.Turns {
		lg.seen[t.Key] = true
		lg.threads[t.Agent] = t
	}
	lg.opened = rd.Turns
	for _, s := range rd.Limits {
		lg.last[s.Account+"\x00"+s.Window] = s
	}
	return lg, nil
}

// AppendTurn appends t (V and Key filled in) to the ledger and makes it
// durable (fsync) before it returns. It reports whether t was added: false
// when the ledger holds its key already. When the append fails, t is held
// in memory (at most maxPending turns) and written before the next turn;
// the error says so.
func (l *Ledger) AppendTurn(t Turn) (bool, error) {
	t.V, t.Key, t.At = Version, TurnKey(t.Agent, t.Message, t.Attempt), t.At.UTC()
	if err := t.validate(); err != nil {
		return false, fmt.Errorf("usage of turn %s: %w", t.Key, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dir == nil {
		return false, errors.New("usage ledger closed")
	}
	if l.seen[t.Key] || slices.ContainsFunc(l.pending, func(p Turn) bool { return p.Key == t.Key }) {
		return false, nil
	}
	l.pending = append(l.pending, t)
	l.threads[t.Agent] = t
	if l.observe != nil {
		defer l.observe(t)
	}
	var dropped error
	if n := len(l.pending) - maxPending; n > 0 {
		dropped = fmt.Errorf("%d turns dropped from the usage ledger (it could not be written)", n)
		l.pending = slices.Delete(l.pending, 0, n)
	}
	for len(l.pending) > 0 {
		p := l.pending[0]
		if err := l.turns.append(p); err != nil {
			return true, errors.Join(fmt.Errorf("usage of turn %s held in memory (%d waiting): %w", p.Key, len(l.pending), err), dropped)
		}
		l.seen[p.Key] = true
		l.pending = l.pending[1:]
	}
	return true, dropped
}

// TakeOpened returns the turns the ledger held when it was opened (as
// Read returns them, each key once) and forgets them: what the daemon
// counts at its start (the budgets' use) is read once, by Open. A second
// call returns nil.
func (l *Ledger) TakeOpened() []Turn {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.opened
	l.opened = nil
	return t
}

// LastThread is the thread of agent's last turn in the ledger (or held to
// be written) and that thread's running total after it, as Codex
// reported it; ok is false when the ledger has no turn of agent.
func (l *Ledger) LastThread(agent string) (thread string, total Tokens, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.threads[agent]
	return t.Thread, t.ThreadTokens, ok
}

// AppendLimits records an account's rate-limit windows as Codex reported
// them at samples' times: a window's sample is written when its used
// percent or reset time changed since the last one written, or an hour
// after it. It reports how many it wrote.
func (l *Ledger) AppendLimits(samples []LimitSample) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dir == nil {
		return 0, errors.New("usage ledger closed")
	}
	n := 0
	for _, s := range samples {
		s.V, s.At, s.ResetsAt = Version, s.At.UTC(), s.ResetsAt.UTC()
		if s.ResetsAt.Unix() <= 0 {
			s.ResetsAt = time.Time{}
		}
		if err := s.validate(); err != nil {
			return n, fmt.Errorf("rate-limit sample of %s: %w", s.Account, err)
		}
		k := s.Account + "\x00" + s.Window
		if prev, ok := l.last[k]; ok && !limitChanged(prev, s) {
			continue
		}
		if err := l.limits.append(s); err != nil {
			return n, err
		}
		l.last[k] = s
		n++
	}
	return n, nil
}

// limitChanged reports whether s is worth a line after prev, the last
// sample of its window written. It is a pure function.
func limitChanged(prev, s LimitSample) bool {
	return prev.UsedPct != s.UsedPct || !prev.ResetsAt.Equal(s.ResetsAt) || prev.WindowMinutes != s.WindowMinutes ||
		s.At.Sub(prev.At) >= limitEvery || s.At.Before(prev.At)
}

// Close closes the ledger's files; later appends fail. It is idempotent.
func (l *Ledger) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dir == nil {
		return nil
	}
	err := errors.Join(l.turns.close(), l.limits.close(), l.dir.Close())
	l.dir = nil
	return err
}

// segments is one family of the ledger's files, appended to in order.
type segments struct {
	dir    *atomicfile.Dir
	prefix string
	max    int64
	keep   int
	f      *os.File
	seq    int
	size   int64
}

// segmentName is the name of segment seq of the family prefix.
func segmentName(prefix string, seq int) string {
	return fmt.Sprintf("%s-%06d%s", prefix, seq, segmentExt)
}

// segmentSeq parses a segment's name: its sequence number, false when name
// is not one of prefix's. It is a pure function.
func segmentSeq(prefix, name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, prefix+"-")
	if !ok {
		return 0, false
	}
	digits, ok := strings.CutSuffix(rest, segmentExt)
	if !ok || len(digits) < 6 || strings.Trim(digits, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	return n, err == nil && n > 0
}

// list returns the sequence numbers of the family's segments, in order.
func list(dir *atomicfile.Dir, prefix string) ([]int, error) {
	names, err := dir.Names()
	if err != nil {
		return nil, err
	}
	var seqs []int
	for _, n := range names {
		if s, ok := segmentSeq(prefix, n); ok {
			seqs = append(seqs, s)
		}
	}
	slices.Sort(seqs)
	return seqs, nil
}

// append writes v as one line, in one write, and fsyncs it.
func (s *segments) append(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode usage entry: %w", err)
	}
	b = append(b, '\n')
	if len(b) > MaxLine {
		return fmt.Errorf("usage entry of %d bytes, over %d", len(b), MaxLine)
	}
	if s.f == nil {
		if err := s.open(); err != nil {
			return err
		}
	}
	if s.size > 0 && s.size+int64(len(b)) > s.max {
		if err := s.next(); err != nil {
			return err
		}
	}
	n, err := s.f.Write(b)
	s.size += int64(n)
	if err == nil {
		err = s.f.Sync()
	}
	if err != nil {
		// The file is reopened, and a cut line ended, before the next try.
		s.f.Close()
		s.f = nil
		return fmt.Errorf("append to %s: %w", s.f0(), err)
	}
	return nil
}

func (s *segments) f0() string { return s.dir.Path() + "/" + segmentName(s.prefix, max(s.seq, 1)) }

// open opens the newest segment for appending (the first when there is
// none). A segment whose last line was cut short (power lost mid-append)
// gets a newline first, so the next entry starts a line of its own.
func (s *segments) open() error {
	seqs, err := list(s.dir, s.prefix)
	if err != nil {
		return fmt.Errorf("usage ledger: %w", err)
	}
	s.seq = 1
	if len(seqs) > 0 {
		s.seq = seqs[len(seqs)-1]
	}
	created, err := s.openSeq(os.O_CREATE)
	if err != nil {
		return err
	}
	if created {
		return s.dir.Sync()
	}
	return nil
}

// openSeq opens segment s.seq with extra flags, ending a cut last line,
// and reports whether the file is new (empty).
func (s *segments) openSeq(flags int) (bool, error) {
	name := segmentName(s.prefix, s.seq)
	f, err := s.dir.OpenFile(name, flags|os.O_APPEND|os.O_RDWR, 0o600)
	if err != nil {
		return false, fmt.Errorf("open usage ledger %s: %w", name, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return false, fmt.Errorf("stat usage ledger %s: %w", name, err)
	}
	size := st.Size()
	if size > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, size-1); err != nil {
			f.Close()
			return false, fmt.Errorf("read the end of usage ledger %s: %w", name, err)
		}
		if last[0] != '\n' {
			if _, err := f.Write([]byte{'\n'}); err != nil {
				f.Close()
				return false, fmt.Errorf("end the cut last line of usage ledger %s: %w", name, err)
			}
			size++
		}
	}
	s.f, s.size = f, size
	return size == 0, nil
}

// next starts the next segment and removes the oldest past keep.
func (s *segments) next() error {
	if err := s.f.Close(); err != nil {
		s.f = nil
		return fmt.Errorf("close usage ledger: %w", err)
	}
	s.f = nil
	s.seq++
	if _, err := s.openSeq(os.O_CREATE | os.O_EXCL); err != nil {
		return err
	}
	seqs, err := list(s.dir, s.prefix)
	if err != nil {
		return fmt.Errorf("usage ledger: %w", err)
	}
	for len(seqs) > s.keep {
		if err := s.dir.Remove(segmentName(s.prefix, seqs[0])); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove the oldest usage segment: %w", err)
		}
		seqs = seqs[1:]
	}
	return s.dir.Sync()
}

func (s *segments) close() error {
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}
