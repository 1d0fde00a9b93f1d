package fanout

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestReadTable(t *testing.T) {
	cases := []struct {
		name, in string
		cols     []string
		rows     int
		err      string
	}{
		{"plain", "a,b\n1,2\n3,4\n", []string{"a", "b"}, 2, ""},
		{"bom", "\ufeffname,age\nx,1\n", []string{"name", "age"}, 1, ""},
		{"quoted newline", "a,b\n\"x\ny\",2\n", []string{"a", "b"}, 1, ""},
		{"header only", "a\n", []string{"a"}, 0, ""},
		{"empty", "", nil, 0, "header line"},
		{"bom only", "\ufeff", nil, 0, "header line"},
		{"second bom", "\ufeff\ufeffname\nx\n", nil, 0, "second byte order mark"},
		{"quoted bom as a name", "\"\ufeff\"\nx\n", nil, 0, "second byte order mark"},
		{"duplicate", "a,b,a\n1,2,3\n", nil, 0, `column "a" appears twice`},
		{"empty name", "a,,c\n1,2,3\n", nil, 0, "column 2 has no name"},
		{"blank name", "a, \n1,2\n", nil, 0, "column 2 has no name"},
		{"ragged short", "a,b\n1,2\n3\n", nil, 0, "line 3: 1 fields, the header has 2"},
		{"ragged long", "a,b\n1,2,3\n", nil, 0, "line 2: 3 fields"},
		{"ragged after multiline", "a,b\n\"x\ny\",2\n1\n", nil, 0, "line 4: 1 fields"},
		{"bad quote", "a,b\n\"x,2\n", nil, 0, "line"},
		{"latin-1 value", "a,b\n1,caf\xe9\n", nil, 0, `line 2, column "b": not UTF-8 text`},
		{"latin-1 value on a later line", "a,b\n\"x\ny\",2\n1,\"\xe9\"\n", nil, 0, `line 4, column "b": not UTF-8`},
		{"latin-1 header", "a,caf\xe9\n1,2\n", nil, 0, `line 1, column "caf?": not UTF-8 text`},
		{"nul and quotes", "a,b\n\"\x00\",\"say \"\"hi\"\"\"\n", []string{"a", "b"}, 1, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tb, err := ReadTable(strings.NewReader(c.in))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(tb.Columns, "|") != strings.Join(c.cols, "|") || len(tb.Rows) != c.rows {
				t.Errorf("got %q with %d rows, want %q with %d", tb.Columns, len(tb.Rows), c.cols, c.rows)
			}
		})
	}
}

func TestParseTemplate(t *testing.T) {
	cols := []string{"name", "age", "a b"}
	row := []string{"Ann", "42", "sp"}
	cases := []struct{ in, want, err string }{
		{"hello {name}", "hello Ann", ""},
		{"{name} is {age}; {a b}", "Ann is 42; sp", ""},
		{"literal {{name}} and }}", "literal {name} and }", ""},
		{`as {{"who": "{name}"}}`, `as {"who": "Ann"}`, ""},
		{"no placeholders", "no placeholders", ""},
		{"", "", ""},
		{"{nmae}", "", "placeholder {nmae} names no column of the CSV file; its columns: name, age, a b"},
		{"{}", "", "placeholder {} names no column"},
		{"open { here", "", "'{' at byte 6 is not closed"},
		{"lone } here", "", "lone '}' at byte 6"},
		{"{name", "", "not closed"},
	}
	for _, c := range cases {
		tm, err := ParseTemplate(c.in, cols)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if got := tm.Render(row); got != c.want {
			t.Errorf("%q: rendered %q, want %q", c.in, got, c.want)
		}
	}
}

func TestParseReply(t *testing.T) {
	cases := []struct{ in, want, err string }{
		{`{"a": 1}`, `{"a":1}`, ""},
		{"  {\"a\": [1, 2]}\n", `{"a":[1,2]}`, ""},
		{"```json\n{\"a\": 1}\n```", `{"a":1}`, ""},
		{"```\n{\"a\": 1}\n```\n", `{"a":1}`, ""},
		{`{"big": 12345678901234567890}`, `{"big":12345678901234567890}`, ""},
		{"", "", "empty"},
		{"ECHO: hi", "", `starts with "ECHO: hi"`},
		{`[1, 2]`, "", "not a JSON object"},
		{`"str"`, "", "not a JSON object"},
		{`{"a": 1} trailing`, "", "text follows the object"},
		{`{"a": 1}{"b": 2}`, "", "text follows the object"},
		{`{"a": }`, "", "not a JSON object"},
		{"```json\n{\"a\": 1}", "", "does not close"},
		{"```json\n{\"a\": 1}\n```\n```json\n{}\n```", "", "not one JSON object"},
	}
	for _, c := range cases {
		got, err := ParseReply(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: got %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func FuzzReadTable(f *testing.F) {
	for _, s := range []string{"a,b\n1,2\n", "\ufeffa\n\"x\ny\"\n", "a,a\n", "a,b\n1\n", "\"", ""} {
		f.Add(s)
	}
	// Values a journal or an output file could not hold as they are
	// (invalid UTF-8 becomes U+FFFD in JSON; a lone CR).
	for _, s := range []string{"a\nx\xff\n", "a,b\n\"\xc3\",\"\r\"\n", "a,b\n\"x\r\ny\",\"\x00\"\"\"\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tb, err := ReadTable(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, r := range tb.Rows {
			if len(r) != len(tb.Columns) {
				t.Fatalf("row %q has %d fields, header %d", r, len(r), len(tb.Columns))
			}
		}
		// Every row it accepts is recognised again after a journal and an
		// output file recorded it, so that a rerun never runs it twice.
		recs := map[int]Record{}
		journal := []byte(`{"batty_fanout":1,"columns":` + mustJSON(t, tb.Columns) + "}\n")
		for i, r := range tb.Rows {
			recs[i] = Record{Row: i, Values: r, Status: StatusDone, Result: "{}"}
			journal = append(append(journal, mustJSON(t, recs[i])...), '\n')
		}
		fromJournal, err := DecodeJournal(journal, tb.Columns)
		if err != nil {
			t.Fatalf("journal: %v", err)
		}
		out, err := EncodeOutput(tb, recs)
		if err != nil {
			t.Fatal(err)
		}
		fromOut, err := DecodeOutput(out, tb.Columns)
		if err != nil {
			t.Fatalf("output: %v", err)
		}
		for what, got := range map[string][]Record{"journal": fromJournal, "output": fromOut} {
			if len(got) != len(tb.Rows) {
				t.Fatalf("%s gives %d rows back, want %d", what, len(got), len(tb.Rows))
			}
			for i, r := range got {
				if r.Row != i || !slices.Equal(r.Values, tb.Rows[i]) {
					t.Fatalf("%s gives row %d back as %d %q, want %q", what, i+1, r.Row+1, r.Values, tb.Rows[i])
				}
			}
		}
	})
}

func FuzzParseTemplate(f *testing.F) {
	for _, s := range []string{"{a}", "{{a}}", "}", "{", "{b}{a}}}", "x{a}y{{"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tm, err := ParseTemplate(s, []string{"a", "b"})
		if err != nil {
			return
		}
		tm.Render([]string{"1", "2"})
	})
}

func FuzzParseReply(f *testing.F) {
	for _, s := range []string{`{"a":1}`, "```json\n{}\n```", "```", "{", "[]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ParseReply(s)
	})
}

func FuzzDecodeOutput(f *testing.F) {
	tb := &Table{Columns: []string{"a"}, Rows: [][]string{{"1"}, {"2"}}}
	good, _ := EncodeOutput(tb, map[int]Record{0: {Row: 0, Values: []string{"1"}, Status: StatusDone, Result: "{}", Tokens: 3, Duration: 1.5}})
	f.Add(good)
	f.Add([]byte("a,status,result,error,thread_id,tokens,duration_s\n1,odd,,,,x,y\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := DecodeOutput(b, tb.Columns)
		if err != nil {
			return
		}
		for _, r := range recs {
			if len(r.Values) != 1 || checkStatus(r.Status) != nil {
				t.Fatalf("decoded a bad record %+v", r)
			}
		}
	})
}

func FuzzDecodeJournal(f *testing.F) {
	f.Add([]byte(`{"batty_fanout":1,"columns":["a"]}` + "\n" + `{"row":0,"values":["1"],"status":"done","tokens":1,"duration_s":1}` + "\n"))
	f.Add([]byte(`{"batty_fanout":1,"columns":["a"]}` + "\n" + `{"row":-1`))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := DecodeJournal(b, []string{"a"})
		if err != nil {
			return
		}
		for _, r := range recs {
			if r.Row < 0 || len(r.Values) != 1 || checkStatus(r.Status) != nil {
				t.Fatalf("decoded a bad record %+v", r)
			}
		}
	})
}

// DecodeJournal is decodeJournal reading data.
func DecodeJournal(data []byte, columns []string) ([]Record, error) {
	return decodeJournal(bytes.NewReader(data), columns)
}
