package schedule

import (
	"reflect"
	"testing"
	"time"

	"github.com/battyhq/batty/team"
)

// FuzzDecode checks that the state file decoder never panics, and that
// what it accepts is valid and survives an encode/decode round trip.
func FuzzDecode(f *testing.F) {
	st := State{Name: "nightly", FirstSeen: epoch, State: Waiting}
	start(&st, epoch.Add(time.Hour))
	b, err := Encode(map[string]State{"nightly": st, "poll": {Name: "poll", FirstSeen: epoch, State: Failed, Runs: 3, RunsCompleted: 2, RunsFailed: 1, LastError: "boom"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"schedules":[{"name":"a","state":"running","runs":1,"run_id":"x"}]}`))
	f.Add([]byte(`{"schedules":[{"name":"a","state":"waiting"},{"name":"a","state":"waiting"}]}`))
	f.Add([]byte(`{"schedules":[{"name":"a","state":"stopped","first_seen":"0000-01-01T00:00:00Z"}]}`))
	f.Add([]byte(`{"schedules":[{"name":"a","state":"waiting","runs":9223372036854775807,"runs_completed":9223372036854775807}]}`))
	f.Add([]byte(`{"schedules":[{"name":"a","state":"waiting","runs":2147483647,"runs_completed":2147483647}]}`))
	f.Add([]byte(`{"schedules":null}`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := Decode(data)
		if err != nil {
			return
		}
		for name, s := range got {
			if s.Name != name {
				t.Fatalf("state %q under name %q", s.Name, name)
			}
			if err := s.Validate(); err != nil {
				t.Fatalf("accepted an invalid state: %v", err)
			}
		}
		// What the daemon makes of an accepted state (its run finished,
		// the next one started and finished when due) is a state it
		// accepts at its next start.
		for _, s := range got {
			spec := fuzzSpec()
			if s.State == Running {
				finish(spec, &s, Result{Recorded: true, Failed: true, Error: "x"}, epoch)
			}
			s.State = Waiting
			if plan(spec, &s, epoch) {
				start(&s, epoch)
				finish(spec, &s, Result{Recorded: true}, epoch)
			}
			if err := s.Validate(); err != nil {
				t.Fatalf("a run of an accepted state left an invalid one: %v", err)
			}
		}
		enc, err := Encode(got)
		if err != nil {
			t.Fatalf("Encode: %v", err)
		}
		again, err := Decode(enc)
		if err != nil {
			t.Fatalf("round trip: %v", err)
		}
		if len(again) != len(got) {
			t.Fatalf("round trip changed the states")
		}
		for name, s := range got {
			a := again[name]
			if a.Name != s.Name || a.State != s.State || a.RunID != s.RunID || a.Runs != s.Runs || !a.LastStarted.Equal(s.LastStarted) || !reflect.DeepEqual(a.LastError, s.LastError) {
				t.Fatalf("round trip: %+v became %+v", s, a)
			}
		}
	})
}

// fuzzSpec is a schedule to settle a decoded state with in FuzzDecode.
func fuzzSpec() team.Schedule {
	return team.Schedule{Name: "s", To: "a", Prompt: "p", Every: time.Hour, OnError: team.OnErrorContinue}
}
