package schedule

import (
	"reflect"
	"testing"
	"time"
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
