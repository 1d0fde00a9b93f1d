package fanout

import (
	"fmt"
	"github.com/battyhq/batty/textclip"
	"regexp"
	"strings"
)

// SameErrorRows is how many rows a run finishes before it may stop early:
// when the first SameErrorRows rows it finished all failed with the same
// error (errorKey), the cause is very likely the job's and not the rows'
// (a wrong instruction, a broken setup), so no more rows start
// (Options.KeepGoing turns this off).
const SameErrorRows = 5

var (
	attemptsSuffix = regexp.MustCompile(` \(after [0-9]+ attempts\)$`)
	quoted         = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	digits         = regexp.MustCompile(`[0-9]+`)
)

// errorKey is a row's recorded error with what differs from row to row
// taken out (the attempt count, quoted text such as the start of a reply,
// numbers), so that rows failing for the same reason have the same key.
// It is a pure function.
func errorKey(msg string) string {
	k := attemptsSuffix.ReplaceAllString(strings.TrimSpace(msg), "")
	k = quoted.ReplaceAllString(k, `"…"`)
	k = digits.ReplaceAllString(k, "#")
	return oneLine(k, 300)
}

// stopEarly decides whether a run stops starting rows: keys are the error
// keys of the rows it finished, in the order they finished ("" for a row
// done), n the rows that decide (SameErrorRows) and left the rows still to
// start. It stops when the first n rows all failed with one key and rows
// are left to start. It is a pure function.
func stopEarly(keys []string, n, left int) bool {
	if n < 1 || len(keys) < n || left == 0 || keys[0] == "" {
		return false
	}
	for _, k := range keys[1:n] {
		if k != keys[0] {
			return false
		}
	}
	return true
}

// commonError returns the most common error among errs (by errorKey; the
// first such error as written) and how many of errs have it; on a tie the
// one that reached the count first wins. It is a pure function.
func commonError(errs []string) (string, int) {
	counts := map[string]int{}
	example := map[string]string{}
	var best string
	most := 0
	for _, e := range errs {
		k := errorKey(e)
		if _, ok := example[k]; !ok {
			example[k] = e
		}
		counts[k]++
		if counts[k] > most {
			best, most = k, counts[k]
		}
	}
	return example[best], most
}

// sameErrorStopping is the stop reason of an early stop.
func sameErrorStopping(n int, example string) string {
	return fmt.Sprintf("the first %d rows finished all failed with the same error: %s", n, oneLine(example, 200))
}

// oneLine is s on one line (runs of white space as one space), clipped to
// n bytes. It is a pure function.
func oneLine(s string, n int) string {
	return textclip.Bytes(strings.Join(strings.Fields(s), " "), n+len(textclip.Ellipsis), textclip.Ellipsis)
}

// checkSameError counts a finished row among the first ones of the run and
// stops the start of rows when they all failed with the same error
// (stopEarly), unless Options.KeepGoing.
func (e *engine) checkSameError(rec Record) {
	if e.o.KeepGoing || len(e.firstKeys) >= SameErrorRows {
		return
	}
	key := ""
	if rec.Status != StatusDone {
		key = errorKey(rec.Error)
		if e.firstError == "" {
			e.firstError = rec.Error
		}
	}
	e.firstKeys = append(e.firstKeys, key)
	if e.snap.Stopping == "" && stopEarly(e.firstKeys, SameErrorRows, e.left()) {
		e.halt(sameErrorStopping(SameErrorRows, e.firstError))
		e.snap.SameError = e.firstError
	}
}
