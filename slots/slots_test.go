package slots

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestGrants(t *testing.T) {
	q := func(hosts ...string) []Waiter {
		var out []Waiter
		for i, h := range hosts {
			out = append(out, Waiter{Who: string(rune('a' + i)), Host: h})
		}
		return out
	}
	for _, c := range []struct {
		name    string
		queue   []Waiter
		running int
		onHost  map[string]int
		l       Limits
		memLow  bool
		want    []int
	}{
		{"no cap grants all", q("", "", "h"), 0, nil, Limits{}, false, []int{0, 1, 2}},
		{"team cap in queue order", q("", "", "", ""), 1, map[string]int{"": 1}, Limits{Turns: 3}, false, []int{0, 1}},
		{"team full", q(""), 2, map[string]int{"": 2}, Limits{Turns: 2}, false, nil},
		{"full host passed over", q("h", "", "h"), 1, map[string]int{"h": 1}, Limits{Turns: 4, Hosts: map[string]int{"h": 1}}, false, []int{1}},
		{"host cap counts grants made now", q("h", "h", ""), 0, nil, Limits{Turns: 4, Hosts: map[string]int{"h": 1}}, false, []int{0, 2}},
		{"low memory holds this machine only", q("", "h", ""), 0, nil, Limits{Turns: 4}, true, []int{1}},
		{"team cap stops before later hosts", q("", "h"), 0, nil, Limits{Turns: 1}, false, []int{0}},
		{"empty queue", nil, 0, nil, Limits{Turns: 1}, false, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Grants(c.queue, c.running, c.onHost, c.l, c.memLow); !slices.Equal(got, c.want) {
				t.Fatalf("Grants = %v, want %v", got, c.want)
			}
		})
	}
}

func TestMemoryStep(t *testing.T) {
	for _, c := range []struct {
		name              string
		free              uint64
		ok                bool
		min               uint64
		wasLow            bool
		low, began, ended bool
	}{
		{"no minimum", 1, true, 0, false, false, false, false},
		{"no minimum ends an episode", 1, true, 0, true, false, false, true},
		{"enough", 200, true, 100, false, false, false, false},
		{"drops below: one alert", 99, true, 100, false, true, true, false},
		{"stays below: no second alert", 50, true, 100, true, true, false, false},
		{"recovers", 100, true, 100, true, false, false, true},
		{"unreadable keeps low", 0, false, 100, true, true, false, false},
		{"unreadable keeps ok", 0, false, 100, false, false, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			low, began, ended := MemoryStep(c.free, c.ok, c.min, c.wasLow)
			if low != c.low || began != c.began || ended != c.ended {
				t.Fatalf("MemoryStep = %v %v %v, want %v %v %v", low, began, ended, c.low, c.began, c.ended)
			}
		})
	}
}

func TestMemAvailable(t *testing.T) {
	for _, c := range []struct {
		in      string
		want    uint64
		wantErr string
	}{
		{"MemTotal:       16318128 kB\nMemAvailable:    9120448 kB\n", 9120448 * 1024, ""},
		{"MemTotal: 1 kB\n", 0, "no MemAvailable"},
		{"MemAvailable: lots kB\n", 0, "MemAvailable"},
	} {
		got, err := MemAvailable(strings.NewReader(c.in))
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("MemAvailable(%q) err = %v, want %q", c.in, err, c.wantErr)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Fatalf("MemAvailable(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
}

// recorder collects a pool's callbacks.
type recorder struct {
	mu    sync.Mutex
	woken []string
	eps   []Episode
}

func (r *recorder) wake(who string) { r.mu.Lock(); r.woken = append(r.woken, who); r.mu.Unlock() }
func (r *recorder) told(e Episode)  { r.mu.Lock(); r.eps = append(r.eps, e); r.mu.Unlock() }

func TestPoolFirstAskedFirstServed(t *testing.T) {
	var r recorder
	p := New(Limits{Turns: 2}, nil, r.wake, r.told)
	for _, who := range []string{"a", "b"} {
		if v := p.Acquire(who, ""); v != Granted {
			t.Fatalf("Acquire(%s) = %v, want Granted", who, v)
		}
	}
	for _, who := range []string{"c", "d", "e"} {
		if v := p.Acquire(who, ""); v != Waiting {
			t.Fatalf("Acquire(%s) = %v, want Waiting", who, v)
		}
	}
	// Asking again keeps the place in the queue.
	if v := p.Acquire("d", ""); v != Waiting {
		t.Fatalf("Acquire(d) again = %v", v)
	}
	if v := p.Acquire("a", ""); v != Granted {
		t.Fatalf("a holder asking again = %v", v)
	}
	p.Release("a")
	p.Release("a") // twice: nothing more is freed
	p.Release("b")
	if !slices.Equal(r.woken, []string{"c", "d"}) {
		t.Fatalf("woken %v, want [c d]", r.woken)
	}
	if p.Held() != 2 || !p.Waiting("e") || p.Waiting("c") {
		t.Fatalf("held %d, e waiting %v, c waiting %v", p.Held(), p.Waiting("e"), p.Waiting("c"))
	}
	// a asks again: behind e.
	if v := p.Acquire("a", ""); v != Waiting {
		t.Fatalf("Acquire(a) = %v", v)
	}
	p.Leave("c") // gone while holding: its slot goes to e
	p.Leave("a") // gone while waiting
	p.Release("d")
	if !slices.Equal(r.woken, []string{"c", "d", "e"}) || p.Held() != 1 || p.Waiting("a") {
		t.Fatalf("woken %v, held %d, a waiting %v", r.woken, p.Held(), p.Waiting("a"))
	}
}

func TestPoolHostCap(t *testing.T) {
	var r recorder
	p := New(Limits{Turns: 3, Hosts: map[string]int{"h": 1}}, nil, r.wake, r.told)
	if p.Acquire("h1", "h") != Granted || p.Acquire("h2", "h") != Waiting || p.Acquire("l1", "") != Granted {
		t.Fatal("the host's cap does not hold a turn here up")
	}
	p.Release("h1")
	if !slices.Equal(r.woken, []string{"h2"}) {
		t.Fatalf("woken %v", r.woken)
	}
}

func TestPoolLowMemoryOneEpisode(t *testing.T) {
	var r recorder
	free, fail := uint64(50), false
	mem := func() (uint64, error) {
		if fail {
			return 0, errors.New("no meminfo")
		}
		return free, nil
	}
	p := New(Limits{MinFree: 100}, mem, r.wake, r.told)
	if v := p.Acquire("a", ""); v != LowMemory {
		t.Fatalf("Acquire = %v, want LowMemory", v)
	}
	if v := p.Acquire("b", ""); v != LowMemory {
		t.Fatalf("Acquire = %v, want LowMemory", v)
	}
	if v := p.Acquire("r", "h"); v != Granted {
		t.Fatalf("a turn on another host = %v, want Granted", v)
	}
	fail = true
	if v := p.Acquire("a", ""); v != LowMemory {
		t.Fatalf("unreadable memory = %v, want LowMemory", v)
	}
	fail, free = false, 100
	if v := p.Acquire("b", ""); v != Granted {
		t.Fatalf("Acquire(b) after recovery = %v, want Granted", v)
	}
	if !slices.Equal(r.woken, []string{"a"}) {
		t.Fatalf("woken %v, want [a]", r.woken)
	}
	want := []Episode{{Low: true, Free: 50, Min: 100}, {Low: false, Free: 100, Min: 100}}
	if !slices.Equal(r.eps, want) {
		t.Fatalf("episodes %+v, want %+v", r.eps, want)
	}
}

func TestPoolDisabledAndNil(t *testing.T) {
	var p *Pool
	if p.Acquire("a", "") != Granted || p.Waiting("a") || p.Held() != 0 {
		t.Fatal("a nil pool caps")
	}
	p.Release("a")
	p.Leave("a")
	q := New(Limits{}, nil, nil, nil)
	for range 10 {
		if q.Acquire("a", "") != Granted {
			t.Fatal("a pool without limits caps")
		}
	}
}

// A waiter granted a slot after waiting is told how long it waited; one
// granted in its own Acquire is not.
func TestObserveWaits(t *testing.T) {
	var mu sync.Mutex
	waits := map[string]time.Duration{}
	p := New(Limits{Turns: 1}, nil, nil, nil)
	p.ObserveWaits(func(who string, d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		waits[who] = d
	})
	if p.Acquire("a", "") != Granted || p.Acquire("b", "") != Waiting {
		t.Fatal("verdicts")
	}
	p.Release("a")
	mu.Lock()
	defer mu.Unlock()
	if _, ok := waits["a"]; ok || len(waits) != 1 {
		t.Fatalf("waits %v", waits)
	}
	if d, ok := waits["b"]; !ok || d < 0 {
		t.Fatalf("b waited %v (%v)", d, ok)
	}
}
