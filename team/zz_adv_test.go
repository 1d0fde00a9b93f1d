package team

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestZZAdv(t *testing.T) {
	dir := newTeamDir(t)
	laughs := "a: &a [x,x,x,x,x,x,x,x,x,x]\n"
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		laughs += n + ": &" + n + " [" + strings.Repeat("*"+prev+",", 9) + "*" + prev + "]\n"
		prev = n
	}
	merge := "m0: &m0 {model: x}\n"
	prev = "m0"
	for i := 1; i < 12; i++ {
		n := "m" + string(rune('a'+i))
		merge += n + ": &" + n + " {<<: [" + strings.Repeat("*"+prev+",", 9) + "*" + prev + "]}\n"
		prev = n
	}
	inputs := map[string]string{
		"laughs":  "name: t\nx: {" + laughs + "}\nroles: *i\n",
		"laughs2": "name: t\nx: {" + laughs + "}\nroles: [{name: a, codex: {args: *i}, talks_to: *i}]\n",
		"merge":   "name: t\nx: {" + merge + "}\nroles: [{name: a, codex: {<<: *" + prev + "}}]\n",
		"deep":    strings.Repeat("[", 20000) + strings.Repeat("]", 20000),
		"deepmap": strings.Repeat("{a: ", 9000) + strings.Repeat("}", 9000),
		"manyroles": "name: t\nroles:\n" + strings.Repeat("  - name: a\n    instances: 100\n    talks_to: [zz, yy, xx]\n", 3000),
	}
	for name, in := range inputs {
		st := time.Now()
		_, err := Parse(filepath.Join(dir, "team.yaml"), []byte(in))
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		t.Logf("%s: %v, %d bytes err, first: %.200s", name, time.Since(st), len(msg), msg)
	}
}
