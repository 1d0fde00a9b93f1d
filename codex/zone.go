package codex

import (
	"encoding/binary"
	"os"
	"strings"
	"time"
)

// Zone returns the time zone that a codex run with environment env
// (KEY=VALUE entries; the last entry of a key wins, as for a child process)
// prints clock times in — its usage-limit reset times, read by
// ResetBy. Codex reads TZ the way glibc does:
//
//   - TZ unset: the system's zone, which is local (the caller's
//     time.Local, itself read without a TZ when env came from the
//     caller's environment);
//   - TZ empty, or only ":": UTC;
//   - a zone name ("Europe/Paris", "EST5EDT") or the path of a zone file,
//     with or without a leading ":": that zone, loaded with
//     time.LoadLocation from the system's zoneinfo;
//   - otherwise a POSIX TZ string ("UTC-3", "<+0530>-5:30",
//     "CET-1CEST,M3.5.0,M10.5.0/3"; offsets are west of Greenwich);
//   - anything else is invalid: UTC, as glibc and codex take it.
//
// It reads the zoneinfo files, nothing else.
func Zone(env []string, local *time.Location) *time.Location {
	tz, set := "", false
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == "TZ" {
			tz, set = v, true
		}
	}
	if !set {
		return local
	}
	name := strings.TrimPrefix(tz, ":")
	switch {
	case name == "":
		return time.UTC
	case strings.HasPrefix(name, "/"):
		if data, err := os.ReadFile(name); err == nil {
			if loc, err := time.LoadLocationFromTZData(tz, data); err == nil {
				return loc
			}
		}
	case name != "Local": // time.LoadLocation's word for time.Local, not a zone file
		if loc, err := time.LoadLocation(name); err == nil {
			return loc
		}
	}
	if loc, ok := posixZone(tz); ok {
		return loc
	}
	return time.UTC
}

// posixZone reads a POSIX TZ string ("std offset [dst [offset] [,rule]]")
// as a location, ok false when it is not one. The string is handed to the
// time package as the footer of an otherwise empty zoneinfo file (RFC 8536,
// version 2: "a POSIX-TZ-environment-variable-style string for use in
// handling instants after the last transition"), which is how the time
// package reads these rules itself.
func posixZone(tz string) (*time.Location, bool) {
	if !posixStdOffset(tz) || strings.ContainsAny(tz, "\n\x00") {
		return nil, false
	}
	// One local time type (UTC, one byte of names: an empty name), no
	// transitions, then the footer that governs every instant.
	header := func(version byte) []byte {
		h := make([]byte, 44)
		copy(h, "TZif")
		h[4] = version
		binary.BigEndian.PutUint32(h[36:], 1) // typecnt
		binary.BigEndian.PutUint32(h[40:], 1) // charcnt
		return h
	}
	types := []byte{0, 0, 0, 0, 0, 0, 0} // utoff 0, isdst 0, desigidx 0; then the empty name
	var data []byte
	data = append(data, header('2')...)
	data = append(data, types...)
	data = append(data, header('2')...)
	data = append(data, types...)
	data = append(data, '\n')
	data = append(data, tz...)
	data = append(data, '\n')
	loc, err := time.LoadLocationFromTZData(tz, data)
	if err != nil {
		return nil, false
	}
	// A footer the time package cannot read leaves the empty-named type:
	// every zone it reads has a name of three characters or more.
	if name, _ := time.Unix(0, 0).In(loc).Zone(); name == "" {
		return nil, false
	}
	return loc, true
}

// posixStdOffset reports whether tz opens like a POSIX TZ string: a
// standard-time name (three or more letters, or <...> of letters, digits,
// '+' and '-') and an offset ([+-]hh[:mm[:ss]]). The time package checks
// the rest.
func posixStdOffset(tz string) bool {
	i := 0
	if strings.HasPrefix(tz, "<") {
		end := strings.IndexByte(tz, '>')
		if end < 4 {
			return false
		}
		for _, c := range tz[1:end] {
			if !isAlnum(c) && c != '+' && c != '-' {
				return false
			}
		}
		i = end + 1
	} else {
		for i < len(tz) && isLetter(rune(tz[i])) {
			i++
		}
		if i < 3 {
			return false
		}
	}
	if i < len(tz) && (tz[i] == '+' || tz[i] == '-') {
		i++
	}
	return i < len(tz) && tz[i] >= '0' && tz[i] <= '9'
}

func isLetter(c rune) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isAlnum(c rune) bool { return isLetter(c) || c >= '0' && c <= '9' }
