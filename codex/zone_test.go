package codex

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestZone(t *testing.T) {
	// The process's own zone is a fixed one no TZ below names: a TZ in
	// codex's environment that differs from it must win.
	local := time.FixedZone("PROC", 7*3600+1800)
	zoneFile := filepath.Join(t.TempDir(), "zone")
	data, err := os.ReadFile("/usr/share/zoneinfo/Asia/Tokyo")
	if err != nil {
		t.Skipf("no zoneinfo files on this system: %v", err)
	}
	if err := os.WriteFile(zoneFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	winter := time.Date(2027, 1, 15, 12, 0, 0, 0, time.UTC)
	summer := time.Date(2027, 7, 15, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name           string
		env            []string
		winter, summer int // the zone's offsets east of UTC, in seconds
		local          bool
	}{
		{"unset: the local zone", []string{"HOME=/h"}, 0, 0, true},
		{"empty: UTC", []string{"TZ="}, 0, 0, false},
		{"only a colon: UTC", []string{"TZ=:"}, 0, 0, false},
		{"a zone name", []string{"TZ=Europe/Paris"}, 3600, 7200, false},
		{"a name with a colon", []string{"TZ=:Europe/Paris"}, 3600, 7200, false},
		{"the last entry wins", []string{"TZ=UTC", "PATH=/bin", "TZ=Europe/Paris"}, 3600, 7200, false},
		{"a zone file", []string{"TZ=" + zoneFile}, 9 * 3600, 9 * 3600, false},
		{"a zone file with a colon", []string{"TZ=:" + zoneFile}, 9 * 3600, 9 * 3600, false},
		{"POSIX, west of Greenwich", []string{"TZ=UTC+3"}, -3 * 3600, -3 * 3600, false},
		{"POSIX, quoted name", []string{"TZ=<+0530>-5:30"}, 5*3600 + 1800, 5*3600 + 1800, false},
		{"POSIX with DST rules", []string{"TZ=XST-1XDT,M3.5.0,M10.5.0/3"}, 3600, 7200, false},
		{"unknown name: UTC", []string{"TZ=Nowhere/Atlantis"}, 0, 0, false},
		{"Local is no zone: UTC", []string{"TZ=Local"}, 0, 0, false},
		{"missing file: UTC", []string{"TZ=/nonexistent/zone"}, 0, 0, false},
		{"dot-dot: UTC", []string{"TZ=../../etc/passwd"}, 0, 0, false},
		{"garbage: UTC", []string{"TZ=???"}, 0, 0, false},
		{"bad rule: UTC", []string{"TZ=ABC-1XDT,M13.9.9"}, 0, 0, false},
		{"no offset: UTC", []string{"TZ=ABC"}, 0, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			loc := Zone(c.env, local)
			if c.local {
				if loc != local {
					t.Fatalf("Zone = %v, want the local zone", loc)
				}
				return
			}
			if _, off := winter.In(loc).Zone(); off != c.winter {
				t.Errorf("winter offset %d, want %d", off, c.winter)
			}
			if _, off := summer.In(loc).Zone(); off != c.summer {
				t.Errorf("summer offset %d, want %d", off, c.summer)
			}
		})
	}
	// The same clock time reads differently in codex's zone.
	msg := "You’ve hit your usage limit. Try again at Jan 16th, 2027 9:00 AM."
	at, ok := ParseRetryAt(msg, winter, Zone([]string{"TZ=Europe/Paris"}, local))
	if want := time.Date(2027, 1, 16, 8, 0, 0, 0, time.UTC); !ok || !at.Equal(want) {
		t.Fatalf("ParseRetryAt in codex's zone = %v %v, want %v", at, ok, want)
	}
}

func FuzzZone(f *testing.F) {
	for _, s := range []string{"", ":", "Europe/Paris", "UTC+3", "<+0530>-5:30", "CET-1CEST,M3.5.0,M10.5.0/3", "<>", "<a", "ABC-1XDT,J60/25,300"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tz string) {
		loc := Zone([]string{"TZ=" + tz}, time.UTC)
		if loc == nil {
			t.Fatalf("Zone(%q) = nil", tz)
		}
		_, _ = time.Unix(1_795_263_250, 0).In(loc).Zone() // must not panic
	})
}
