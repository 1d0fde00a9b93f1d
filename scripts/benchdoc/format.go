package main

import (
	"math"
	"sort"
	"strconv"
	"strings"
)

// unitIterations names b.N (the iteration count) in a column's units.
const unitIterations = "N"

// formatMetric renders value v of unit for a table cell: durations,
// sizes and rates in readable units, the custom units of b.ReportMetric by
// the suffix after their last "-" (ms, s, MB, %; "x-ideal" as a multiple),
// anything else as a plain number.
func formatMetric(unit string, v float64) string {
	switch unit {
	case "ns/op":
		return formatDuration(v)
	case "B/op", "bytes-read/op":
		return formatBytes(v)
	case "allocs/op":
		return formatNum(v) + " allocs"
	case "MB/s":
		return formatNum(v) + " MB/s"
	case "x-ideal":
		return formatNum(v) + "×"
	}
	if i := strings.LastIndexByte(unit, '-'); i >= 0 {
		switch suffix := unit[i+1:]; suffix {
		case "ms", "s", "MB", "%":
			return formatNum(v) + " " + suffix
		}
	}
	return formatNum(v)
}

// formatDuration renders nanoseconds as ns, µs, ms or s.
func formatDuration(ns float64) string {
	switch a := math.Abs(ns); {
	case a < 1e3:
		return formatNum(ns) + " ns"
	case a < 1e6:
		return formatNum(ns/1e3) + " µs"
	case a < 1e9:
		return formatNum(ns/1e6) + " ms"
	default:
		return formatNum(ns/1e9) + " s"
	}
}

// formatBytes renders a byte count as B, KiB or MiB.
func formatBytes(b float64) string {
	switch a := math.Abs(b); {
	case a < 1<<10:
		return formatNum(b) + " B"
	case a < 1<<20:
		return formatNum(b/(1<<10)) + " KiB"
	default:
		return formatNum(b/(1<<20)) + " MiB"
	}
}

// formatNum renders v with three significant digits at most (all the
// integer digits of a larger number), thousands separated by commas.
func formatNum(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	if a := math.Abs(v); a != 0 && a < 100 {
		digits := 2 - int(math.Floor(math.Log10(a)))
		p := math.Pow(10, float64(digits))
		v = math.Round(v*p) / p
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	s := strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// median returns the median of xs (the mean of the middle two for an
// even count); xs must not be empty. It does not modify xs.
func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
