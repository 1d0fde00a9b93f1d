package team

import "testing"

func TestSendBox(t *testing.T) {
	cfg, err := Parse("", []byte("name: t\nroles:\n  - name: lead\n    talks_to: [eng]\n  - name: eng\n    instances: 2\n    talks_to: [eng]\n  - name: solo\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		from, to, box, target string
		allowed, err          bool
	}{
		{Human, "eng", "@eng", "eng-1", true, false},
		{Human, "eng-2", "eng-2", "eng-2", true, false},
		{"lead", "eng", "@eng", "eng-1", true, false},
		{"eng-1", "eng", "@eng", "eng-2", true, false}, // a role: its first instance but the sender
		{"eng-1", "lead", "lead", "lead", false, false},
		{"solo", Human, Human, "", true, false},
		{"solo", "solo", "solo", "solo", false, false},
		{"lead", "nobody", "", "", false, true},
	} {
		box, target, allowed, err := cfg.SendBox(c.from, c.to)
		if box != c.box || target != c.target || allowed != c.allowed || (err != nil) != c.err {
			t.Errorf("SendBox(%s, %s) = %q, %q, %v, %v", c.from, c.to, box, target, allowed, err)
		}
	}
}
