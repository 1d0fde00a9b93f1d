package eventlog

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/battyhq/batty/project"
)

type status string

// An observer in the daemon's process sees each field in the shape a reader
// of the log sees: a time as its RFC 3339 string, a number as a float64, a
// named string type as a string. One reader cannot get the other shape.
func TestObserverSeesTheShapeOfTheLog(t *testing.T) {
	lay := project.Layout{Dir: filepath.Join(t.TempDir(), project.DirName)}
	if err := lay.MkdirAll(); err != nil {
		t.Fatal(err)
	}
	l, err := Open(lay, func(err error) { t.Errorf("event log: %v", err) })
	if err != nil {
		t.Fatal(err)
	}
	var seen []Event
	l.SetObserver(func(e Event) { seen = append(seen, e) })
	at := time.Now().Add(time.Hour).Round(0)
	l.Append(Event{Type: EvQuotaBlocked, Agent: "a", Data: map[string]any{
		"resume_at": at, "attempt": 2, "status": status("completed"), "agents": []string{"a", "b"}}})
	l.Close()
	b, err := os.ReadFile(lay.EventsLog())
	if err != nil {
		t.Fatal(err)
	}
	read, err := Decode([]byte(strings.TrimSpace(string(b))))
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || !reflect.DeepEqual(seen[0], read) {
		t.Fatalf("observer saw %#v\nthe log holds %#v", seen, read)
	}
	got, ok := seen[0].At("resume_at")
	if !ok || !got.Equal(at) {
		t.Fatalf("At(resume_at) = %v, %v; want %v", got, ok, at)
	}
	if n, ok := seen[0].Num("attempt"); !ok || n != 2 {
		t.Fatalf("Num(attempt) = %v, %v", n, ok)
	}
	if seen[0].Data["status"] != "completed" {
		t.Fatalf("status %#v", seen[0].Data["status"])
	}
	if _, ok := seen[0].At("attempt"); ok {
		t.Fatal("a number read as a time")
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"type":"reply","data":{"to":"a","resume_at":"2030-01-02T03:04:05Z"}}`))
	f.Add([]byte(`{"data":{"resume_at":5}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := Decode(line)
		if err != nil {
			return
		}
		e.At("resume_at")
		e.Num("attempt")
	})
}
