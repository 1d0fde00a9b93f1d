package protocol

import (
	"bytes"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

func TestRoundTrip(t *testing.T) {
	type tc struct {
		name string
		m    Message
	}
	var cases []tc
	for _, zero := range allMessages {
		name := reflect.TypeOf(zero).Name()
		cases = append(cases,
			tc{name + "/zero", zero},
			tc{name + "/filled", filled(zero, 1)},
			tc{name + "/filled2", filled(zero, 2)},
		)
	}
	cases = append(cases,
		tc{"SendMessage/unicode and binary", SendMessage{ID: "m-1", From: "ärger 🦇", Body: "line\n\x00\xff\ttab", Attempt: 3}},
		tc{"SendMessage/large body", SendMessage{ID: "big", From: "human", Body: strings.Repeat("ab", 100_000)}},
		tc{"Ping/max nonce", Ping{Nonce: math.MaxUint64}},
		tc{"Shutdown/negative", Shutdown{Timeout: -time.Second}},
		tc{"TurnFinished/unknown context", TurnFinished{MessageID: "x", Status: TurnFailed, Failure: FailExit, ContextPct: -1, ExitCode: -1}},
		tc{"TurnFinished/NaN", TurnFinished{MessageID: "x", ContextPct: math.NaN()}},
		tc{"TurnFinished/-0", TurnFinished{MessageID: "x", ContextPct: math.Copysign(0, -1)}},
		tc{"ContextPressure/inf", ContextPressure{Pct: math.Inf(1), UsedTokens: math.MaxInt64, WindowTokens: math.MinInt64}},
		tc{"TranscriptLines/empty not nil", TranscriptLines{Lines: []string{}}},
		tc{"TranscriptLines/empty lines", TranscriptLines{Lines: []string{"", "", ""}}},
		tc{"QuotaBlocked/zero time", QuotaBlocked{MessageID: "q", RetryAt: time.Time{}}},
		tc{"QuotaBlocked/utc", QuotaBlocked{RetryAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)}},
		tc{"QuotaBlocked/before 1970", QuotaBlocked{RetryAt: time.Date(1969, 7, 20, 20, 17, 40, 0, time.UTC)}},
		tc{"QuotaBlocked/far future", QuotaBlocked{RetryAt: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)}},
		tc{"QuotaBlocked/local", QuotaBlocked{MessageID: "q", RetryAt: time.Unix(1700000000, 123456789)}},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := mustEncode(t, c.m)
			got, err := Decode(body)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !sameMessage(got, c.m) {
				t.Fatalf("round trip changed the message:\n got %#v\nwant %#v", got, c.m)
			}
			// A pointer encodes like the value it points to.
			p := reflect.New(reflect.TypeOf(c.m))
			p.Elem().Set(reflect.ValueOf(c.m))
			if pb := mustEncode(t, p.Interface().(Message)); !bytes.Equal(pb, body) {
				t.Errorf("Encode(&m) = %x, want %x", pb, body)
			}
		})
	}
}

// The filled values really have every field set, so the round trip above
// covers every field of every message.
func TestFilledSetsEveryField(t *testing.T) {
	for _, zero := range allMessages {
		m := filled(zero, 1)
		if zs := zeroFields(reflect.ValueOf(m), reflect.TypeOf(m).Name()); len(zs) > 0 {
			t.Errorf("filled left zero fields: %v", zs)
		}
		if sameMessage(m, filled(zero, 2)) && reflect.TypeOf(m).NumField() > 0 {
			t.Errorf("%T: filled gives the same value for two seeds", m)
		}
	}
}

// TestKindsCoverEveryMessageType reads the package source: every Kind
// constant has a decoder and exactly one message type, every type with a
// Kind method is in allMessages, and the decoder of a kind yields that type.
func TestKindsCoverEveryMessageType(t *testing.T) {
	consts, types := kindsInSource(t)
	if len(consts) == 0 || len(types) == 0 {
		t.Fatal("found no Kind constants or message types in the source")
	}

	byKind := map[Kind]reflect.Type{}
	listed := map[string]bool{}
	for _, m := range allMessages {
		typ := reflect.TypeOf(m)
		listed[typ.Name()] = true
		if prev, dup := byKind[m.Kind()]; dup {
			t.Errorf("%s and %s both have Kind %q", prev.Name(), typ.Name(), m.Kind())
		}
		byKind[m.Kind()] = typ
	}
	for name := range types {
		if !listed[name] {
			t.Errorf("message type %s is missing from allMessages", name)
		}
	}
	if len(allMessages) != len(types) {
		t.Errorf("allMessages has %d entries, the source %d message types", len(allMessages), len(types))
	}

	declared := map[Kind]bool{}
	for name, k := range consts {
		declared[k] = true
		if _, ok := decoders[k]; !ok {
			t.Errorf("%s (%q) has no decoder", name, k)
		}
		typ, ok := byKind[k]
		if !ok {
			t.Errorf("%s (%q) is the Kind of no message type", name, k)
			continue
		}
		m, err := Decode(mustEncode(t, reflect.Zero(typ).Interface().(Message)))
		if err != nil {
			t.Errorf("decode %s: %v", k, err)
		} else if reflect.TypeOf(m) != typ {
			t.Errorf("decoder of %q yields %T, want %s", k, m, typ)
		}
	}
	for k := range decoders {
		if !declared[k] {
			t.Errorf("decoder for %q, which is no Kind constant", k)
		}
	}
	for k, typ := range byKind {
		if !declared[k] {
			t.Errorf("%s.Kind() = %q, which is no Kind constant", typ.Name(), k)
		}
	}
}

// kindsInSource returns the Kind constants (name → value) and the names of
// the types with a Kind method declared in the package's non-test files.
func kindsInSource(t *testing.T) (map[string]Kind, map[string]bool) {
	t.Helper()
	fset := token.NewFileSet()
	files, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]Kind{}
	types := map[string]bool{}
	for _, e := range files {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.GenDecl:
				if d.Tok != token.CONST {
					continue
				}
				for _, spec := range d.Specs {
					vs := spec.(*ast.ValueSpec)
					if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Kind" {
						continue
					}
					for i, n := range vs.Names {
						lit, ok := vs.Values[i].(*ast.BasicLit)
						if !ok {
							t.Fatalf("%s: Kind constant %s is not a literal", name, n.Name)
						}
						v, err := strconv.Unquote(lit.Value)
						if err != nil {
							t.Fatal(err)
						}
						consts[n.Name] = Kind(v)
					}
				}
			case *ast.FuncDecl:
				if d.Name.Name != "Kind" || d.Recv == nil {
					continue
				}
				rt := d.Recv.List[0].Type
				if s, ok := rt.(*ast.StarExpr); ok {
					rt = s.X
				}
				types[rt.(*ast.Ident).Name] = true
			}
		}
	}
	return consts, types
}

func TestDecodeErrors(t *testing.T) {
	ping := mustEncode(t, Ping{Nonce: 1})
	envelope := func(elems ...any) []byte {
		b, err := msgpack.Marshal(elems)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	nested := func(depth int) []byte {
		b := []byte{0x92, 0xa4, 'p', 'i', 'n', 'g', 0x81, 0xa1, 'x'}
		b = append(b, bytes.Repeat([]byte{0x91}, depth)...)
		return append(b, 0xc0)
	}
	cases := []struct {
		name string
		body []byte
		is   error
		msg  string
	}{
		{"empty", nil, nil, "truncated"},
		{"not an array", []byte{0xa4, 'p', 'i', 'n', 'g'}, nil, "decode message header"},
		{"one element", envelope("ping"), nil, "envelope has 1 elements"},
		{"three elements", envelope("ping", map[string]any{}, 1), nil, "envelope has 3 elements"},
		{"nil envelope", []byte{0xc0}, nil, "envelope has -1 elements"},
		{"kind not a string", envelope(7, map[string]any{}), nil, "decode message kind"},
		{"unknown kind", envelope("launch_missiles", map[string]any{}), ErrUnknownKind, `"launch_missiles"`},
		{"wrong field type", envelope("ping", map[string]any{"nonce": "seven"}), nil, "decode ping"},
		{"trailing bytes", append(bytes.Clone(ping), 0xc0), nil, "1 trailing bytes"},
		{"truncated", ping[:len(ping)-1], nil, "truncated"},
		{"reserved code", []byte{0x92, 0xa4, 'p', 'i', 'n', 'g', 0xc1}, nil, "invalid msgpack code 0xc1"},
		{"array longer than the body", []byte{0xdd, 0xff, 0xff, 0xff, 0xff}, nil, "truncated"},
		{"string longer than the body", []byte{0x92, 0xdb, 0xff, 0xff, 0xff, 0xff}, nil, "truncated"},
		{"nested too deep", nested(maxNesting), nil, "nested more than"},
		// A frame-sized nesting would overflow the stack in the msgpack
		// decoder, which skips unknown fields recursively.
		{"nested 16 MiB deep", nested(DefaultMaxFrameSize - 16), nil, "nested more than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := Decode(c.body)
			if err == nil {
				t.Fatalf("Decode = %#v, want an error", m)
			}
			if m != nil {
				t.Errorf("Decode returned %#v with the error", m)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error %q does not wrap %v", err, c.is)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q does not mention %q", err, c.msg)
			}
		})
	}
}

func TestDecodeTolerates(t *testing.T) {
	// Nesting up to the limit is fine, and so are fields this version does
	// not know (they are skipped) and a nil message (all fields zero).
	deep := []byte{0x92, 0xa4, 'p', 'o', 'n', 'g', 0x82, 0xa5, 'n', 'o', 'n', 'c', 'e', 0x07, 0xa1, 'x'}
	deep = append(deep, bytes.Repeat([]byte{0x91}, maxNesting-2)...)
	deep = append(deep, 0xc0)
	unknown, err := msgpack.Marshal([]any{"pong", map[string]any{"nonce": 7, "later": []any{1, "x", map[string]any{"y": 2.5}}}})
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{
		"nested to the limit": deep,
		"unknown fields":      unknown,
		"nil message":         {0x92, 0xa4, 'p', 'o', 'n', 'g', 0xc0},
	} {
		m, err := Decode(body)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if p, ok := m.(Pong); !ok || (name != "nil message" && p.Nonce != 7) {
			t.Errorf("%s: Decode = %#v", name, m)
		}
	}
}

func TestEncodeNil(t *testing.T) {
	if b, err := Encode(nil); err == nil {
		t.Fatalf("Encode(nil) = %x, want an error", b)
	}
}

// checkNesting agrees with the msgpack decoder on where a value ends.
func TestCheckNestingSkipsEveryFormat(t *testing.T) {
	values := []any{
		nil, true, false, 0, 1, -1, -33, 127, 128, 255, 256, 65535, 65536, -129, -32769,
		math.MaxInt64, math.MinInt64, uint64(math.MaxUint64), float32(1.5), 2.5,
		"", "short", strings.Repeat("s", 40), strings.Repeat("m", 300), strings.Repeat("l", 70000),
		[]byte{}, []byte{1, 2}, bytes.Repeat([]byte{3}, 300), bytes.Repeat([]byte{4}, 70000),
		[]any{}, []any{1, "a"}, make([]any, 20),
		map[string]any{}, map[string]any{"a": 1}, map[int]int{1: 2, 3: 4, 5: 6, 7: 8, 9: 10, 11: 12, 13: 14, 15: 16, 17: 18, 19: 20, 21: 22, 23: 24, 25: 26, 27: 28, 29: 30, 31: 32, 33: 34},
		time.Unix(1, 0), time.Unix(1<<33, 5), time.Unix(1<<40, 7), time.Time{},
	}
	var bodies [][]byte
	for _, v := range values {
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatalf("marshal %T: %v", v, err)
		}
		bodies = append(bodies, b)
	}
	for _, n := range []int{1, 2, 4, 8, 16, 3, 300, 70000} {
		bodies = append(bodies, rawExt(n))
	}
	// 32-bit container lengths: 70000 nils, or 70000 pairs of them.
	nils := bytes.Repeat([]byte{0xc0}, 140000)
	bodies = append(bodies,
		append([]byte{0xdd, 0, 1, 0x11, 0x70}, nils[:70000]...),
		append([]byte{0xdf, 0, 1, 0x11, 0x70}, nils...),
	)
	for _, b := range bodies {
		if err := checkNesting(b); err != nil {
			t.Errorf("checkNesting(%.20x…): %v", b, err)
		}
		if err := checkNesting(b[:len(b)-1]); err == nil {
			t.Errorf("checkNesting accepts %.20x… cut short by one byte", b)
		}
		// The value ends where msgpack says it does: what follows is not
		// looked at.
		if err := checkNesting(append(bytes.Clone(b), 0xc1)); err != nil {
			t.Errorf("checkNesting(%.20x… + junk): %v", b, err)
		}
		if err := msgpack.NewDecoder(bytes.NewReader(b)).Skip(); err != nil {
			t.Errorf("msgpack cannot skip %.20x…: %v", b, err)
		}
	}
}

// rawExt returns an encoded ext value with n data bytes, in the smallest
// format that holds it (fixext or ext 8/16/32).
func rawExt(n int) msgpack.RawMessage {
	var b []byte
	switch n {
	case 1:
		b = []byte{0xd4}
	case 2:
		b = []byte{0xd5}
	case 4:
		b = []byte{0xd6}
	case 8:
		b = []byte{0xd7}
	case 16:
		b = []byte{0xd8}
	default:
		switch {
		case n < 256:
			b = []byte{0xc7, byte(n)}
		case n < 65536:
			b = []byte{0xc8, byte(n >> 8), byte(n)}
		default:
			b = []byte{0xc9, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
		}
	}
	b = append(b, 5) // ext type
	return append(b, bytes.Repeat([]byte{0xee}, n)...)
}

// FuzzDecode: Decode never panics, and whatever decodes re-encodes to a body
// that decodes to the same message.
func FuzzDecode(f *testing.F) {
	for _, zero := range allMessages {
		f.Add(mustEncode(f, zero))
		f.Add(mustEncode(f, filled(zero, 1)))
	}
	f.Add([]byte{})
	f.Add([]byte{0x92, 0xa4, 'p', 'i', 'n', 'g', 0xc1})
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := Decode(body)
		if err != nil {
			if m != nil {
				t.Fatalf("Decode returned %#v with error %v", m, err)
			}
			return
		}
		if m == nil {
			t.Fatal("Decode returned neither a message nor an error")
		}
		if reflect.TypeOf(m).Kind() == reflect.Pointer {
			t.Fatalf("Decode returned a pointer %T", m)
		}
		again, err := Encode(m)
		if err != nil {
			t.Fatalf("re-encode %#v: %v", m, err)
		}
		m2, err := Decode(again)
		if err != nil {
			t.Fatalf("decode re-encoded %#v: %v", m, err)
		}
		if !sameMessage(m, m2) {
			t.Fatalf("re-encoding changed the message:\nfirst  %#v\nsecond %#v", m, m2)
		}
	})
}
