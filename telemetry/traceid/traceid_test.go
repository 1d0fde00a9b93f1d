package traceid

import (
	"regexp"
	"testing"
)

func TestIDs(t *testing.T) {
	const id = "20261121T125100.123456789Z-1f2e3d4c"
	again := id
	if Trace(id) != Trace(again) || Trace(id) == Trace(id+"x") {
		t.Fatal("the trace id is not a function of the message id alone")
	}
	seen := map[[8]byte]string{}
	for _, k := range []struct {
		kind string
		n    int
		key  string
	}{{Message, 0, ""}, {Turn, 1, ""}, {Turn, 2, ""}, {Queued, 1, ""}, {Landing, 0, "r1"}, {Landing, 0, "r2"}} {
		s := Span(id, k.kind, k.n, k.key)
		if prev, dup := seen[s]; dup {
			t.Fatalf("span %v has the id of %s", k, prev)
		}
		seen[s] = k.kind
	}
	tp := TurnParent(id, 2)
	if !regexp.MustCompile(`^00-[0-9a-f]{32}-[0-9a-f]{16}-01$`).MatchString(tp) {
		t.Fatalf("traceparent %q", tp)
	}
	if TurnParent(id, 2) == TurnParent(id, 1) {
		t.Fatal("two attempts share a turn span")
	}
}
