package codex

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// SameDaySlack is how far in the past a same-day reset time ("try again at
// 1:14 PM.") may lie and still be taken as today: codex prints the minute,
// truncated, and the message may be read a little after it was written. A
// time further in the past means that time tomorrow.
const SameDaySlack = 5 * time.Minute

// Clock time, optionally preceded by a date: "1:14 PM", "Nov 22nd, 2026
// 12:21 AM", "November 22, 2026 12:21 AM", "13:14".
var retryAtRE = regexp.MustCompile(`(?i)\btry\s+again\s+at\s+` +
	`(?:([a-z]{3,9})\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4}),?\s+(?:at\s+)?)?` +
	`(\d{1,2}):(\d{2})(?::(\d{2}))?\s*([ap]\.?\s?m\b\.?)?`)

// Relative form: "try again in 5 minutes", "try again in 2 hours 3
// minutes", "try again in ~1 day, 4 hours and 2 minutes", "try again in 3h 5m".
var retryInRE = regexp.MustCompile(`(?i)\btry\s+again\s+in\s+~?\s*((?:\d+\s*(?:days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)\b[\s,]*(?:and\s+)?)+)`)

var durationPartRE = regexp.MustCompile(`(?i)(\d+)\s*([a-z]+)`)

var months = map[string]time.Month{
	"jan": time.January, "january": time.January,
	"feb": time.February, "february": time.February,
	"mar": time.March, "march": time.March,
	"apr": time.April, "april": time.April,
	"may": time.May,
	"jun": time.June, "june": time.June,
	"jul": time.July, "july": time.July,
	"aug": time.August, "august": time.August,
	"sep": time.September, "sept": time.September, "september": time.September,
	"oct": time.October, "october": time.October,
	"nov": time.November, "november": time.November,
	"dec": time.December, "december": time.December,
}

// ResetBy extracts the quota reset time from a usage-limit message and
// returns, in UTC, the instant by which the limit has surely reset. Codex
// prints the reset in the local zone of the codex process, which the
// caller passes as loc (normally time.Local; nil means time.Local):
//
//   - "... try again at 1:14 PM." (or "Try again at ..."): that clock time
//     on the date of now in loc, or on the next day when it lies more than
//     SameDaySlack before now;
//   - "... try again at Nov 22nd, 2026 12:21 AM.": that date and time in
//     loc (full month names and a day without ordinal suffix are accepted,
//     and so is a 24-hour clock without AM/PM);
//   - "... try again in 2 hours 3 minutes.": now plus the duration (days,
//     hours, minutes and seconds, spelled out or abbreviated);
//
// each plus its precision. Codex prints the
// minute, rounded down — a window ending at 22:56:25 reads "try again at
// 10:56 PM" — so a printed 10:56 PM means 22:57:00; a time with seconds
// gains one second, and "try again in 2 hours 3 minutes" gains one minute
// (the smallest unit it names). ok is false for "try again later." and
// for messages without a recognisable time. It is a pure function.
func ResetBy(message string, now time.Time, loc *time.Location) (at time.Time, ok bool) {
	at, prec, ok := parseRetry(message, now, loc)
	if !ok {
		return time.Time{}, false
	}
	return at.Add(prec), true
}

// parseRetry returns the time a usage-limit message prints (see ResetBy),
// in UTC, and the precision it was printed with.
func parseRetry(message string, now time.Time, loc *time.Location) (time.Time, time.Duration, bool) {
	if loc == nil {
		loc = time.Local
	}
	if m := retryAtRE.FindStringSubmatch(message); m != nil {
		at, ok := parseClock(m, now, loc)
		prec := time.Minute
		if m[6] != "" {
			prec = time.Second
		}
		return at, prec, ok
	}
	if m := retryInRE.FindStringSubmatch(message); m != nil {
		d, prec, ok := parseDuration(m[1])
		if !ok {
			return time.Time{}, 0, false
		}
		return now.Add(d).UTC(), prec, true
	}
	return time.Time{}, 0, false
}

// parseClock interprets a retryAtRE match.
func parseClock(m []string, now time.Time, loc *time.Location) (time.Time, bool) {
	monthName, dayStr, yearStr := m[1], m[2], m[3]
	hour, _ := strconv.Atoi(m[4])
	minute, _ := strconv.Atoi(m[5])
	second := 0
	if m[6] != "" {
		second, _ = strconv.Atoi(m[6])
	}
	meridiem := strings.ToLower(strings.NewReplacer(".", "", " ", "").Replace(m[7]))
	if minute > 59 || second > 59 {
		return time.Time{}, false
	}
	switch meridiem {
	case "am", "pm":
		if hour < 1 || hour > 12 {
			return time.Time{}, false
		}
		hour %= 12
		if meridiem == "pm" {
			hour += 12
		}
	default:
		if hour > 23 {
			return time.Time{}, false
		}
	}
	if monthName != "" {
		month, ok := months[strings.ToLower(monthName)]
		if !ok {
			return time.Time{}, false
		}
		day, _ := strconv.Atoi(dayStr)
		year, _ := strconv.Atoi(yearStr)
		t := time.Date(year, month, day, hour, minute, second, 0, loc)
		if t.Day() != day || t.Month() != month {
			return time.Time{}, false // e.g. Feb 30th
		}
		return t.UTC(), true
	}
	local := now.In(loc)
	y, mo, d := local.Date()
	t := time.Date(y, mo, d, hour, minute, second, 0, loc)
	if t.Before(now.Add(-SameDaySlack)) {
		t = time.Date(y, mo, d+1, hour, minute, second, 0, loc)
	}
	return t.UTC(), true
}

// parseDuration sums "2 hours 3 minutes"-style parts; prec is the
// smallest unit named.
func parseDuration(s string) (total, prec time.Duration, ok bool) {
	parts := durationPartRE.FindAllStringSubmatch(s, -1)
	if len(parts) == 0 {
		return 0, 0, false
	}
	for _, p := range parts {
		n, err := strconv.ParseInt(p[1], 10, 64)
		if err != nil || n > 1e6 {
			return 0, 0, false
		}
		var unit time.Duration
		switch u := strings.ToLower(p[2]); {
		case u == "d" || strings.HasPrefix(u, "day"):
			unit = 24 * time.Hour
		case u == "h" || strings.HasPrefix(u, "h"):
			unit = time.Hour
		case u == "m" || strings.HasPrefix(u, "min"):
			unit = time.Minute
		case u == "s" || strings.HasPrefix(u, "sec"):
			unit = time.Second
		default:
			return 0, 0, false
		}
		total += time.Duration(n) * unit
		if prec == 0 || unit < prec {
			prec = unit
		}
	}
	return total, prec, true
}
