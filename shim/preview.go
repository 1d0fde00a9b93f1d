package shim

import (
	"strconv"
	"strings"

	"github.com/battyhq/batty/textclip"
)

// Size of the preview of an incoming message in the transcript.
const (
	previewLines = 3   // lines of the body shown
	previewRunes = 200 // characters per line shown
)

// messagePreview returns the first previewLines non-blank lines of body,
// each without surrounding white space and clipped to previewRunes
// characters, followed by "… N more lines" when lines were left out. It is
// what the transcript shows under a turn's header (ptylog cleans it). It is
// a pure function.
func messagePreview(body string) []string {
	var out []string
	rest := 0
	for ln := range strings.SplitSeq(strings.TrimSpace(body), "\n") {
		ln = strings.TrimSpace(ln)
		if ln == "" && len(out) == 0 {
			continue
		}
		if len(out) == previewLines {
			rest++
			continue
		}
		out = append(out, textclip.Runes(ln, previewRunes, textclip.Ellipsis))
	}
	switch {
	case rest == 1:
		out = append(out, "… 1 more line")
	case rest > 1:
		out = append(out, "… "+strconv.Itoa(rest)+" more lines")
	}
	return out
}
