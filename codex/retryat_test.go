package codex

import (
	"testing"
	"time"
	_ "time/tzdata" // DST cases must not depend on the host's zoneinfo
)

func TestParseRetryAt(t *testing.T) {
	utc := time.UTC
	plus11 := time.FixedZone("UTC+11", 11*3600)
	minus5 := time.FixedZone("UTC-5", -5*3600)
	newYork, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	at := func(y int, mo time.Month, d, h, mi int) time.Time { return time.Date(y, mo, d, h, mi, 0, 0, time.UTC) }
	now := at(2026, 11, 21, 12, 14)
	const plus = "You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again at "

	cases := []struct {
		name string
		msg  string
		now  time.Time
		loc  *time.Location
		want time.Time // zero: ok=false
	}{
		{"same day later", plus + "1:14 PM.", now, utc, at(2026, 11, 21, 13, 14)},
		{"capital T", "You’ve hit your usage limit. Try again at 1:15 PM.", now, utc, at(2026, 11, 21, 13, 15)},
		{"free plan", "You’ve hit your usage limit. Upgrade to Plus to continue using Codex (https://chatgpt.com/explore/plus), or try again at 1:15 PM.", now, utc, at(2026, 11, 21, 13, 15)},
		{"team plan", "You’ve hit your usage limit. To get more access now, send a request to your admin or try again at 1:15 PM.", now, utc, at(2026, 11, 21, 13, 15)},
		{"just passed, within slack", plus + "12:10 PM.", now, utc, at(2026, 11, 21, 12, 10)},
		{"passed, means tomorrow", plus + "11:14 AM.", now, utc, at(2026, 11, 22, 11, 14)},
		{"midnight", plus + "12:21 AM.", now, utc, at(2026, 11, 22, 0, 21)},
		{"noon", plus + "12:30 PM.", now, utc, at(2026, 11, 21, 12, 30)},
		{"24-hour clock", "try again at 13:14.", now, utc, at(2026, 11, 21, 13, 14)},
		{"lowercase meridiem", "try again at 1:14 pm.", now, utc, at(2026, 11, 21, 13, 14)},
		{"date of now in loc, not UTC", plus + "11:30 PM.", at(2026, 3, 1, 3, 0), minus5, at(2026, 3, 1, 4, 30)},
		{"late evening in UTC+11", plus + "11:50 PM.", at(2026, 11, 21, 12, 21), plus11, at(2026, 11, 21, 12, 50)},
		{"next-day-tz fixture", plus + "Nov 22nd, 2026 12:21 AM.", at(2026, 11, 21, 12, 21), plus11, at(2026, 11, 21, 13, 21)},
		{"dated ignores now", plus + "Nov 22nd, 2026 12:21 AM.", time.Time{}, utc, at(2026, 11, 22, 0, 21)},
		{"full month, no ordinal", "try again at November 22, 2026 12:21 AM.", now, utc, at(2026, 11, 22, 0, 21)},
		{"1st", "try again at Dec 1st, 2026 9:05 AM.", now, utc, at(2026, 12, 1, 9, 5)},
		{"3rd", "try again at Jan 3rd, 2027 11:59 PM.", now, utc, at(2027, 1, 3, 23, 59)},
		{"11th", "try again at Sep 11th, 2027 1:00 PM.", now, utc, at(2027, 9, 11, 13, 0)},
		{"21st in fixed zone", "try again at Mar 21st, 2027 2:00 AM.", now, minus5, at(2027, 3, 21, 7, 0)},
		{"DST fall back, New York", "try again at Nov 1st, 2026 3:00 AM.", now, newYork, at(2026, 11, 1, 8, 0)},
		{"DST spring forward, same day", "try again at 3:30 AM.", at(2026, 3, 8, 5, 0), newYork, at(2026, 3, 8, 7, 30)},
		{"relative minutes", "try again in 5 minutes.", now, utc, now.Add(5 * time.Minute)},
		{"relative hours and minutes", "You’ve hit your usage limit. Try again in 2 hours 3 minutes.", now, utc, now.Add(2*time.Hour + 3*time.Minute)},
		{"relative days list", "try again in ~1 day, 4 hours and 2 minutes.", now, utc, now.Add(28*time.Hour + 2*time.Minute)},
		{"relative abbreviated", "try again in 3h 5m", now, utc, now.Add(3*time.Hour + 5*time.Minute)},
		{"relative seconds", "Try again in 30 seconds.", now, utc, now.Add(30 * time.Second)},
		{"later", plus[:len(plus)-len("at ")] + "later.", now, utc, time.Time{}},
		{"Try again later", "You’ve hit your usage limit. Try again later.", now, utc, time.Time{}},
		{"no time", "Quota exceeded. Check your plan and billing details.", now, utc, time.Time{}},
		{"empty", "", now, utc, time.Time{}},
		{"Feb 30th", "try again at Feb 30th, 2027 1:00 AM.", now, utc, time.Time{}},
		{"unknown month", "try again at Foo 3rd, 2027 1:00 AM.", now, utc, time.Time{}},
		{"13 PM", "try again at 13:00 PM.", now, utc, time.Time{}},
		{"bad minute", "try again at 1:75 PM.", now, utc, time.Time{}},
		{"24:00", "try again at 24:00.", now, utc, time.Time{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := ParseRetryAt(c.msg, c.now, c.loc)
			if c.want.IsZero() {
				if ok {
					t.Fatalf("ParseRetryAt(%q) = %v, want ok=false", c.msg, got)
				}
				return
			}
			if !ok || !got.Equal(c.want) {
				t.Fatalf("ParseRetryAt(%q) = %v, %v; want %v", c.msg, got, ok, c.want)
			}
			if got.Location() != time.UTC {
				t.Errorf("location %v, want UTC", got.Location())
			}
		})
	}
}

func TestParseRetryAtNilLocation(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 14, 0, 0, time.UTC)
	msg := "try again at Nov 22nd, 2026 12:21 AM."
	a, ok1 := ParseRetryAt(msg, now, nil)
	b, ok2 := ParseRetryAt(msg, now, time.Local)
	if !ok1 || !ok2 || !a.Equal(b) {
		t.Errorf("nil location: %v %v, time.Local: %v %v", a, ok1, b, ok2)
	}
}

// Codex prints the minute, rounded down: ResetBy reads it as the end of
// that minute (a 40 s window ending at 22:56:25 prints "10:56 PM").
func TestResetByIsTheEndOfThePrintedPrecision(t *testing.T) {
	at := func(h, mi, s int) time.Time { return time.Date(2026, 11, 21, h, mi, s, 0, time.UTC) }
	now := at(22, 55, 45)
	cases := []struct {
		name string
		msg  string
		want time.Time // zero: ok=false
	}{
		{"minute rounded down", "You’ve hit your usage limit. Try again at 10:56 PM.", at(22, 57, 0)},
		{"dated minute", "try again at Nov 21st, 2026 10:56 PM.", at(22, 57, 0)},
		{"with seconds", "try again at 22:56:25.", at(22, 56, 26)},
		{"relative minutes", "try again in 5 minutes.", now.Add(6 * time.Minute)},
		{"relative hours and minutes", "try again in 2 hours 3 minutes.", now.Add(2*time.Hour + 4*time.Minute)},
		{"relative seconds", "try again in 30 seconds.", now.Add(31 * time.Second)},
		{"later", "You’ve hit your usage limit. Try again later.", time.Time{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := ResetBy(c.msg, now, time.UTC)
			if ok != !c.want.IsZero() || !got.Equal(c.want) {
				t.Fatalf("ResetBy(%q) = %s, %v; want %s", c.msg, got, ok, c.want)
			}
		})
	}
}
