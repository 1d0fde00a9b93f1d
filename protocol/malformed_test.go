package protocol

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// nilRetryAt is the frame body that took the whole daemon down, 47 bytes
// with its length prefix: ["quota_blocked", {"message_id": "m-123",
// "retry_at": nil}]. The msgpack library (v5.4.1) panics decoding nil into a
// time.Time field.
var nilRetryAt = []byte("\x92\xadquota_blocked\x82\xaamessage_id\xa5m-123\xa8retry_at\xc0")

func TestDecodeNilIntoTimeIsAnErrorNotAPanic(t *testing.T) {
	for name, body := range map[string][]byte{
		"quota_blocked.retry_at": nilRetryAt,
		"network_wait.since":     []byte("\x92\xacnetwork_wait\x81\xa5since\xc0"),
	} {
		t.Run(name, func(t *testing.T) {
			m, err := Decode(body)
			if err == nil || m != nil {
				t.Fatalf("Decode = %#v, %v; want an error", m, err)
			}
			kind := strings.Split(name, ".")[0]
			if !strings.Contains(err.Error(), "decode "+kind+": ") {
				t.Errorf("error %q does not name the kind %s", err, kind)
			}
		})
	}
}

// badValues are msgpack values of every family, to put where a field of
// another type is due.
var badValues = map[string]any{
	"nil": nil, "bool": true, "negative": -1, "large": uint64(1) << 63, "float": 1.5,
	"string": "x", "bin": []byte{1}, "array": []any{1, "x"}, "empty array": []any{},
	"map": map[string]any{"x": 1}, "empty map": map[string]any{},
	"time": time.Unix(1, 2), "ext": rawExt(3),
}

// fieldPaths lists the wire paths of every field of t, nested structs'
// fields included (time.Time counts as a leaf).
func fieldPaths(t reflect.Type, prefix []string) [][]string {
	var paths [][]string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		p := append(append([]string(nil), prefix...), name)
		paths = append(paths, p)
		if f.Type.Kind() == reflect.Struct && f.Type != timeType {
			paths = append(paths, fieldPaths(f.Type, p)...)
		}
	}
	return paths
}

// withValue returns the body of message kind with v at path, every other
// field absent.
func withValue(t *testing.T, kind Kind, path []string, v any) []byte {
	for i := len(path) - 1; i >= 0; i-- {
		v = map[string]any{path[i]: v}
	}
	b, err := msgpack.Marshal([]any{string(kind), v})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every field of every message, given a value of any msgpack family
// (nil included), decodes to a message or fails with an error naming the
// kind; it never panics, and whatever decodes re-encodes to the same
// message.
func TestDecodeAnyValueInAnyField(t *testing.T) {
	for _, zero := range allMessages {
		typ := reflect.TypeOf(zero)
		for _, path := range fieldPaths(typ, nil) {
			for vname, v := range badValues {
				name := fmt.Sprintf("%s.%s=%s", zero.Kind(), strings.Join(path, "."), vname)
				body := withValue(t, zero.Kind(), path, v)
				m, err := Decode(body)
				if err != nil {
					if m != nil {
						t.Errorf("%s: Decode returned %#v with error %v", name, m, err)
					}
					if !strings.Contains(err.Error(), "decode "+string(zero.Kind())+": ") {
						t.Errorf("%s: error %q does not name the kind", name, err)
					}
					continue
				}
				if reflect.TypeOf(m) != typ {
					t.Errorf("%s: Decode = %T, want %s", name, m, typ)
					continue
				}
				again, err := Decode(mustEncode(t, m))
				if err != nil || !sameMessage(m, again) {
					t.Errorf("%s: re-encoding %#v gave %#v, %v", name, m, again, err)
				}
			}
		}
	}
}
