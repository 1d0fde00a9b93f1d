package landing

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

var epoch = time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)

func sampleRequests() []Request {
	return []Request{
		{ID: "20300506T070809Z-0a1b2c3d", Agent: "eng-1", Branch: "batty/eng-1", RequestedAt: epoch, RequestedBy: "human",
			State: Landed, BaseBefore: tipA, Merged: tipM, LandedCommit: tipM, FinishedAt: epoch.Add(time.Minute), Attempts: 1},
		{ID: "r2", Agent: "eng-2", Branch: "batty/eng-2", RequestedAt: epoch, RequestedBy: "manager", State: Failed,
			Error: "merging conflicts", Conflicts: []string{"a.go", "dir/b é.go"}, FinishedAt: epoch, Attempts: 2},
		{ID: "r3", Agent: "eng-3", Branch: "batty/eng-3", RequestedAt: epoch, State: Failed, Error: "verify failed (exit status 3)",
			OutputTail: "FAIL\n", FinishedAt: epoch},
		{ID: "r4", Agent: "eng-4", Branch: "batty/eng-4", RequestedAt: epoch, State: Waiting, Error: "dirty", RetryAt: epoch.Add(time.Hour)},
		{ID: "r5", Agent: "eng-5", Branch: "batty/eng-5", RequestedAt: epoch, State: Landing, BaseBefore: tipA, Merged: tipM},
		{ID: "r6", Agent: "eng-6", Branch: "batty/eng-6", RequestedAt: epoch, State: Queued},
		{ID: "r7", Agent: "eng-7", Branch: "batty/eng-7", RequestedAt: epoch, State: Nothing, Error: "nothing to land", FinishedAt: epoch},
		{ID: "r8", Agent: "eng-8", Branch: "batty/eng-8", RequestedAt: epoch, RequestedBy: "eng-8", State: Review, Review: true,
			BaseBefore: tipA, Merged: tipM, Tip: tipB},
		{ID: "r9", Agent: "eng-9", Branch: "batty/eng-9", RequestedAt: epoch, State: Failed, Review: true, Tip: tipB,
			Rejection: "split it in two", Error: "rejected in review: split it in two", FinishedAt: epoch},
		{ID: "r10", Agent: "eng-10", Branch: "batty/eng-10", RequestedAt: epoch, State: Queued, Review: true, Tip: tipB, Approved: tipB},
		{ID: "r11", Agent: "eng-11", Branch: "batty/eng-11", RequestedAt: epoch, RequestedBy: "human", State: Review,
			BaseBefore: tipA, Merged: tipM, Tip: tipB, Protected: []string{".github/workflows/x.yml", "sub/.envrc"}, ProtectedTotal: 3},
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	b, err := Encode(sampleRequests())
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	b2, err := Encode(got)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, b2) {
		t.Fatalf("round trip changed the file:\n%s\n%s", b, b2)
	}
	if got[1].Conflicts[1] != "dir/b é.go" || !got[3].RetryAt.Equal(epoch.Add(time.Hour)) {
		t.Fatalf("decoded %+v", got)
	}
	if rs, err := Decode(nil); err != nil || len(rs) != 0 {
		t.Fatalf("empty file: %v %v", rs, err)
	}
}

func TestDecodeRefuses(t *testing.T) {
	good := `{"id":"r1","agent":"a","branch":"batty/a","state":"queued"}`
	if _, err := Decode([]byte(`{"requests":[` + good + `]}`)); err != nil {
		t.Fatalf("good request refused: %v", err)
	}
	for name, req := range map[string]string{
		"branch not the agent's": `{"id":"r1","agent":"a","branch":"main","state":"queued"}`,
		"branch an option":       `{"id":"r1","agent":"a","branch":"--upload-pack=x","state":"queued"}`,
		"agent not a name":       `{"id":"r1","agent":"-a","branch":"batty/-a","state":"queued"}`,
		"unknown state":          `{"id":"r1","agent":"a","branch":"batty/a","state":"merged"}`,
		"no id":                  `{"agent":"a","branch":"batty/a","state":"queued"}`,
		"id with a slash":        `{"id":"../x","agent":"a","branch":"batty/a","state":"queued"}`,
		"merged an option":       `{"id":"r1","agent":"a","branch":"batty/a","state":"landing","merged":"--exec=x"}`,
		"base not hex":           `{"id":"r1","agent":"a","branch":"batty/a","state":"landing","base_before":"HEAD"}`,
		"landed without commit":  `{"id":"r1","agent":"a","branch":"batty/a","state":"landed"}`,
		"negative attempts":      `{"id":"r1","agent":"a","branch":"batty/a","state":"queued","attempts":-1}`,
		"empty conflict":         `{"id":"r1","agent":"a","branch":"batty/a","state":"failed","conflicts":[""]}`,
		"tail too long":          `{"id":"r1","agent":"a","branch":"batty/a","state":"failed","output_tail":"` + strings.Repeat("x", MaxOutputTail+1) + `"}`,
		"duplicate id":           good + "," + good,
		"review without a tip":   `{"id":"r1","agent":"a","branch":"batty/a","state":"review","review":true,"merged":"` + tipM + `","base_before":"` + tipA + `"}`,
		"review not asked":       `{"id":"r1","agent":"a","branch":"batty/a","state":"review","tip":"` + tipB + `","merged":"` + tipM + `","base_before":"` + tipA + `"}`,
		"protected, none listed": `{"id":"r1","agent":"a","branch":"batty/a","state":"queued","protected_total":2}`,
		"protected, miscounted":  `{"id":"r1","agent":"a","branch":"batty/a","state":"queued","protected":[".envrc",".env"],"protected_total":1}`,
		"protected path empty":   `{"id":"r1","agent":"a","branch":"batty/a","state":"queued","protected":[""],"protected_total":1}`,
		"protected, too many":    `{"id":"r1","agent":"a","branch":"batty/a","state":"queued","protected":["` + strings.Repeat(`a","`, MaxProtected) + `a"],"protected_total":50}`,
		"approved an option":     `{"id":"r1","agent":"a","branch":"batty/a","state":"queued","approved":"--exec=x"}`,
		"tip an option":          `{"id":"r1","agent":"a","branch":"batty/a","state":"queued","tip":"--exec=x"}`,
		"rejection too long":     `{"id":"r1","agent":"a","branch":"batty/a","state":"failed","rejection":"` + strings.Repeat("x", MaxReasonLen+1) + `"}`,
	} {
		if _, err := Decode([]byte(`{"requests":[` + req + `]}`)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	var many []string
	for i := range MaxFinished + 1 {
		many = append(many, fmt.Sprintf(`{"id":"r%d","agent":"a","branch":"batty/a","state":"nothing"}`, i))
	}
	if _, err := Decode([]byte(`{"requests":[` + strings.Join(many, ",") + `]}`)); err == nil {
		t.Error("more finished requests than kept: accepted")
	}
	if _, err := Decode([]byte(`{"requests":[`)); err == nil {
		t.Error("a cut file: accepted")
	}
}

func TestTrimFinished(t *testing.T) {
	at := func(m int) time.Time { return epoch.Add(time.Duration(m) * time.Minute) }
	rs := []Request{
		{ID: "r0", State: Landed, FinishedAt: at(10)}, // queued first, finished last
		{ID: "r1", State: Queued},
		{ID: "r2", State: Failed, FinishedAt: at(2)},
		{ID: "r3", State: Waiting},
		{ID: "r4", State: Nothing, FinishedAt: at(4)},
		{ID: "r5", State: Landing},
	}
	got := trimFinished(rs, 2)
	var ids []string
	for _, r := range got {
		ids = append(ids, r.ID)
	}
	if strings.Join(ids, " ") != "r0 r1 r3 r4 r5" {
		t.Fatalf("trimFinished kept %v, want the one that finished first (r2) gone", ids)
	}
	if len(rs) != 6 || rs[2].ID != "r2" {
		t.Fatal("trimFinished modified its argument")
	}
	if got := trimFinished(rs, 3); len(got) != 6 {
		t.Fatalf("nothing to trim, kept %d", len(got))
	}
}

func FuzzDecode(f *testing.F) {
	b, err := Encode(sampleRequests())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"requests":[{"id":"r1","agent":"a","branch":"batty/a","state":"landing","merged":"` + tipM + `"}]}`))
	f.Add([]byte(`{"requests":[{"id":"r1","agent":"a","branch":"batty/a","state":"landed","landed_commit":"` + tipM + `","finished_at":"0000-01-01T00:00:00Z"}]}`))
	f.Add([]byte(`{"requests":null}`))
	f.Add([]byte(`{"requests":[{"id":"r1","agent":"a","branch":"batty/a","state":"waiting","retry_at":"9999-12-31T23:59:59-23:59"}]}`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := Decode(data)
		if err != nil {
			return
		}
		for _, r := range got {
			if err := r.Validate(); err != nil {
				t.Fatalf("accepted an invalid request: %v", err)
			}
		}
		enc, err := Encode(got)
		if err != nil {
			t.Fatalf("accepted requests do not encode: %v", err)
		}
		again, err := Decode(enc)
		if err != nil {
			t.Fatalf("encoded requests do not decode: %v\n%s", err, enc)
		}
		enc2, err := Encode(again)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("round trip changed the requests: %v\n%s\n%s", err, enc, enc2)
		}
	})
}
