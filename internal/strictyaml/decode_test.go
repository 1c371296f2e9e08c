package strictyaml

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type doc struct {
	Name  string `json:"name"`
	Items []item `json:"items,omitempty"`
}

type item struct {
	ID   string `json:"id"`
	Note string `json:"note,omitempty"`
}

// TestDecodeDialects: one document, two readings. A document people write
// gets errors that quote its keys and values, with the closest field name; an
// opaque one gets errors that name only places and what is wanted, and
// requires every field without omitempty.
func TestDecodeDialects(t *testing.T) {
	t.Parallel()
	const marker = "MARKERq7Zt0xLk"
	in := "name: [" + marker + "]\nitems:\n- {id: 12, nme: x}\n- {note: x, note: y}\n" + marker + ": 1\n"
	for _, tc := range []struct {
		doc  Doc
		want []string
	}{{
		Doc{File: "f.yaml", MaxSize: 1 << 20, MaxItems: 1000},
		[]string{
			"f.yaml:1:7: name: got a list: want a string",
			`f.yaml:3:12: items[0].nme: unknown field "nme" (did you mean "note"?): want one of id, note`,
			`f.yaml:4:13: items[1].note: duplicate key "note" (first at line 4): want each key once`,
			`f.yaml:5:1: ` + marker + `: unknown field "` + marker + `": want one of name, items`,
		},
	}, {
		Doc{File: "f.yaml", MaxSize: 1 << 20, MaxItems: 1000, Opaque: true, Want: "want f.yaml as written"},
		[]string{
			"f.yaml:1:7: name: want a non-empty string",
			"f.yaml:3:8: items[0].id: want a non-empty string",
			"f.yaml:3:12: items[0]: unknown field: want id or note",
			"f.yaml:4:13: items[1]: duplicate field: want each of id or note once",
			"f.yaml:4:3: items[1].id: missing: want id set",
			"f.yaml:5:1: unknown field: want name or items",
		},
	}} {
		var d doc
		_, errs, ok := Decode([]byte(in), &d, tc.doc)
		if !ok {
			t.Fatalf("Decode refused the document: %v", errs)
		}
		var got []string
		for _, e := range errs {
			got = append(got, e.Error())
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("opaque %v (-want +got):\n%s", tc.doc.Opaque, diff)
		}
		if tc.doc.Opaque && strings.Contains(errs.Error(), marker) {
			t.Errorf("an opaque document's error quotes it:\n%v", errs)
		}
	}
}

// TestDecodeRefusesWhole: an opaque document's whole-document errors say
// what is wrong in its own words, never the parser's.
func TestDecodeRefusesWhole(t *testing.T) {
	t.Parallel()
	opaque := Doc{File: "f.yaml", MaxSize: 64, MaxItems: 8, Opaque: true, Want: "want f.yaml as written"}
	for in, want := range map[string]string{
		strings.Repeat("a", 65):    "f.yaml: larger than 64 bytes: want f.yaml as written",
		"a: [1,2,3,4,5,6,7,8,9]\n": "f.yaml: more than 8 YAML items: want f.yaml as written",
		"a: \"\\q\"\n":             "f.yaml:1:1: invalid YAML: want f.yaml as written",
		"a: &x 1\nb: *x\n":         "f.yaml:2: a YAML alias: want f.yaml as written",
		"- 1\n":                    "f.yaml:1: not a mapping: want f.yaml as written",
		"# only\n":                 "f.yaml: empty file: want f.yaml as written",
	} {
		var d doc
		_, errs, ok := Decode([]byte(in), &d, opaque)
		if ok || len(errs) != 1 || errs[0].Error() != want {
			t.Errorf("Decode(%q) = %v, %v; want %q", in, ok, errs, want)
		}
	}
}
