package inbox

import (
	"errors"
	"strings"
	"testing"
)

func TestShortID(t *testing.T) {
	for _, tc := range []struct{ id, want string }{
		{"20261121T125100.123456789Z-1f2e3d4c", "1f2e3d4c"},
		{"20261121T125100.123456789Z-1f2e3d4c.reply", "1f2e3d4c.reply"},
		{"20261121T090000.000000000Z-schedule.nightly-build.3", "schedule.nightly-build.3"},
		{"m1", "m1"},
		{"odd-", "odd-"},
	} {
		if got := ShortID(tc.id); got != tc.want {
			t.Errorf("ShortID(%q) = %q, want %q", tc.id, got, tc.want)
		}
	}
}

func TestResolveID(t *testing.T) {
	ids := []string{
		"20261121T125100.123456789Z-1f2e3d4c",
		"20261121T125100.123456789Z-1f2e3d4c.reply",
		"20261121T125200.000000000Z-1f99aa00",
		"20261122T080000.000000000Z-77777777",
		"20261121T090000.000000000Z-schedule.nightly.3",
	}
	for _, tc := range []struct {
		abbrev, want string
		err          error
		errHas       string
	}{
		{abbrev: ids[0], want: ids[0]},
		{abbrev: "1f2e3d4c", want: ids[0]}, // its short form, though also a prefix of the reply's
		{abbrev: "1f2e3d4c.r", want: ids[1]},
		{abbrev: "1f2e", err: ErrAmbiguousID, errHas: `"1f2e": matches 2 messages: 1f2e3d4c, 1f2e3d4c.reply`},
		{abbrev: "1f", err: ErrAmbiguousID, errHas: "matches 3 messages"},
		{abbrev: "7", want: ids[3]},
		{abbrev: "20261122", want: ids[3]},
		{abbrev: "20261121T1252", want: ids[2]},
		{abbrev: "schedule.n", want: ids[4]},
		{abbrev: "zz", err: ErrNotFound, errHas: `no message matches "zz"`},
		{abbrev: "", err: ErrNotFound},
	} {
		got, err := ResolveID(ids, tc.abbrev)
		switch {
		case tc.err != nil:
			if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.errHas) {
				t.Errorf("ResolveID(%q) = %q, %v; want an error %v containing %q", tc.abbrev, got, err, tc.err, tc.errHas)
			}
		case err != nil || got != tc.want:
			t.Errorf("ResolveID(%q) = %q, %v; want %q", tc.abbrev, got, err, tc.want)
		}
	}
	// Many matches: the first few are listed.
	var many []string
	for _, c := range "abcdefgh" {
		many = append(many, "20261121T125100.123456789Z-a"+string(c))
	}
	if _, err := ResolveID(many, "a"); err == nil || !strings.Contains(err.Error(), "aa, ab, ac, ad, ae and 3 more") {
		t.Errorf("ResolveID(many) = %v", err)
	}
}

func FuzzResolveID(f *testing.F) {
	f.Add("20261121T125100.123456789Z-1f2e3d4c", "1f")
	f.Add("a-b-schedule.x", "schedule")
	f.Fuzz(func(t *testing.T, id, abbrev string) {
		got, err := ResolveID([]string{id, id + ".reply"}, abbrev)
		if err == nil && got != id && got != id+".reply" {
			t.Fatalf("ResolveID resolved %q to %q", abbrev, got)
		}
		_ = ShortID(id)
	})
}

// GeneratedIDTime knows NewID's ids and their time, and nothing else.
func TestGeneratedIDTime(t *testing.T) {
	id, at := NewID()
	if got, ok := GeneratedIDTime(id); !ok || !got.Equal(at) {
		t.Fatalf("GeneratedIDTime(%s) = %v, %v; want %v", id, got, ok, at)
	}
	for _, bad := range []string{id + ".reply", "20301302T030405.000000000Z-1f2e3d4c", "20300102T030405.000000000Z-schedule.n.1", "x", ""} {
		if _, ok := GeneratedIDTime(bad); ok {
			t.Errorf("GeneratedIDTime(%q) took it", bad)
		}
	}
}
