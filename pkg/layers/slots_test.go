package layers

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// slotTemplates are object texts as kustomize prints them (and some it
// would not), each with whether the fast way takes it.
var slotTemplates = []struct {
	text  string
	slots bool
}{
	{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  a: ${v}\n  b: x-${v}-y\n  c: ${v}${w}\n  d: ${w}\n", true},
	{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  a: \"${v}\"\n  b: \"pre ${v} post\"\n  c: \"\\t${v}\\\\\"\n  d: \"${w}:${v}\"\n", true},
	{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  a: '${v}'\n  b: 'it''s ${v}'\n  c: '${w}''${v}'\n", true},
	{"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: a\n  labels: {app: x, region: \"${v}\"}\nspec:\n  template:\n    metadata:\n      labels: {app: x, region: \"${w}\"}\n    spec:\n      containers:\n      - name: c\n        env:\n        - {name: R, value: \"${v}\"}\n        - name: W\n          value: ${w}\n        args: [\"${v}\", b, \"${w}\", '${v}']\n        command:\n        - ${v}\n        - x${w}\n", true},
	{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  a: \"first line\n    ${v} second\"\n  b: first\n    ${v} second\n", true},
	{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  a: -${v}\n  b: ${v}:x\n  c: x#${v}\n  d: ${v}...\n  e: .${v}\n  f: ${v}-\n  g: ${v} x\n  h: x ${v}\n", true},
	{"apiVersion: v1\nkind: ${v}\nmetadata:\n  name: ${w}\n  namespace: ns-${v}\n", true},
	{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  ${v}: x\n", false},                      // a key
	{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a # ${v}\ndata:\n  a: ${v}\n", false},               // a comment
	{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  a: |\n    x=${v}\n", false},             // a block scalar
	{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  a: &x ${v}\n  b: *x\n", false},          // an alias
	{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  a: !!str ${v}\n", false},                // a tag
	{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  a: ${v:=x}\n", false},                   // an operator
	{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  a: \"\\\\${v}\\t\\u0041${w}\"\n", true}, // escapes beside
	{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: zqfg\ndata:\n  a: ${v}\n", false},                   // the probe's text
}

// slotValues are values that keep a scalar a string and values that do
// not, in every style.
var slotValues = []string{
	"", "prod", "eu-west-1", "c00001", "a/b", "_x", "/x", "y.x", "-x", "x-", "ab_1.2",
	"true", "True", "TRUE", "yes", "Yes", "y", "Y", "on", "ON", "off", "no", "n", "null", "NULL", "Null", "~",
	"1", "0", "00", "010", "08", "1.5", "-1", "+1", "-.5", ".5", "1e3", "0x1F", "0o17", "0b11", "1_000", "1:2", "12:30:00",
	".inf", "-.inf", ".nan", ".NaN", "2001-12-14", "2001-12-14t21:59:43.10-05:00",
	"-", "--", "---", "...", ".", "..", "-- x",
	"a b", "a: b", "a:b", "#x", "x #y", "x#y", "{a: b}", "[x]", "a,b", "\"q\"", "'q'", "q'", "q\"", "\\", "\\n",
	"a\nb", "\n", "\t", "ünï", "*x", "&x", "!x", "!!str", "%x", "@x", "`x", "|", ">", "?", "? x", "<<", "=", "zqfg0qz",
}

// checkSlots holds the fast way to the slow one for tp with v and w: when
// it takes them, the slow way gives the same object.
func checkSlots(t *testing.T, text string, s *slots, tp *template, vars map[string]string) bool {
	t.Helper()
	vals := make([]string, len(tp.refs))
	for i, r := range tp.refs {
		vals[i] = strings.ReplaceAll(vars[r], "\n", "")
	}
	d, ok := s.apply(vals)
	if !ok {
		return false
	}
	fast := d.value()
	slow, err := substituteChecked(tp, vars)
	if err != nil {
		t.Errorf("%q with %q: the fast way takes what the slow way refuses: %v", text, vars, err)
		return true
	}
	if d := cmp.Diff(slow, fast); d != "" {
		t.Errorf("%q with %q (-slow +fast):\n%s", text, vars, d)
	}
	return true
}

func TestSlotsMatchSlowWay(t *testing.T) {
	t.Parallel()
	for _, tc := range slotTemplates {
		tp := newTemplate(tc.text)
		orig, ok := fromYAML(tc.text)
		if !ok {
			t.Fatalf("%q does not decode", tc.text)
		}
		var s *slots
		if tp.plain {
			s = findSlots(tp, orig)
		}
		if got := s != nil; got != tc.slots {
			t.Errorf("%q: slots found %v, want %v", tc.text, got, tc.slots)
		}
		if s == nil {
			continue
		}
		taken := 0
		for _, v := range slotValues {
			for _, w := range []string{"prod", "1", "a b", "x-y", ""} {
				if checkSlots(t, tc.text, s, tp, map[string]string{"v": v, "w": w}) {
					taken++
				}
			}
		}
		// The common case must take the fast way, or it buys nothing.
		if !checkSlots(t, tc.text, s, tp, map[string]string{"v": "eu-west-1", "w": "c00001"}) {
			t.Errorf("%q: the fast way does not take eu-west-1 and c00001", tc.text)
		}
		t.Logf("%d of %d value pairs the fast way", taken, 5*len(slotValues))
	}
}

// FuzzSlots holds the fast way to the slow one for any two values.
//
//	go test -run '^$' -fuzz FuzzSlots ./pkg/layers
func FuzzSlots(f *testing.F) {
	for _, v := range slotValues {
		f.Add(v, "prod")
	}
	type prepared struct {
		text string
		tp   *template
		s    *slots
	}
	var ps []prepared
	for _, tc := range slotTemplates {
		tp := newTemplate(tc.text)
		orig, _ := fromYAML(tc.text)
		if s := findSlots(tp, orig); tp.plain && s != nil {
			ps = append(ps, prepared{tc.text, tp, s})
		}
	}
	f.Fuzz(func(t *testing.T, v, w string) {
		for _, p := range ps {
			checkSlots(t, p.text, p.s, p.tp, map[string]string{"v": v, "w": w})
		}
	})
}
