package scaffold

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"fleetgen.dev/fleetgen/test/testenv"
)

var update = flag.Bool("update", false, "rewrite golden files")

// testRecipient is the public half of examples/quickstart/age.agekey.
const testRecipient = "age1qpmdkse4kd0sr7dzclvg8ryty8h4uap43hp0dm78qa2fq5n8syysna60a8"

// TestGolden holds what init writes byte for byte, per case in
// testdata/golden/<case>/want/ (-update rewrites them); a missing or extra
// file fails. Files twice gives the same bytes.
func TestGolden(t *testing.T) {
	t.Parallel()
	for name, o := range map[string]Options{
		"placeholders": {AgeRecipients: []string{testRecipient}},
		"given": {Name: "contoso", Manager: "https://fleet.contoso.example:6443", Registry: "contoso.azurecr.io:5000",
			Source: "oci://contoso.azurecr.io/fleet/gitops", AgeRecipients: []string{testRecipient, "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			files, err := Files(o)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := Files(o)
			if d := cmp.Diff(files, again); d != "" {
				t.Errorf("Files twice differ:\n%s", d)
			}
			got := map[string]string{}
			for _, f := range files {
				got[f.Path] = string(f.Data)
			}
			want := filepath.Join("testdata", "golden", name, "want")
			if *update {
				if err := os.RemoveAll(want); err != nil {
					t.Fatal(err)
				}
				testenv.WriteTree(t, want, got)
			}
			if d := cmp.Diff(testenv.ReadTree(t, want), got); d != "" {
				t.Errorf("%s (-want +got; go test ./pkg/scaffold -update rewrites it):\n%s", want, d)
			}
		})
	}
}

func TestFilesNeedsARecipient(t *testing.T) {
	t.Parallel()
	if _, err := Files(Options{}); err == nil || !strings.Contains(err.Error(), "no age recipient") {
		t.Fatalf("Files without a recipient: %v", err)
	}
}

func TestName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"myfleet": "myfleet", "My_Fleet.v2": "my-fleet-v2", "---": "fleet", ".": "fleet",
		strings.Repeat("a", 70): strings.Repeat("a", 63),
	} {
		if got := Name(in); got != want {
			t.Errorf("Name(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestYAMLString(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"contoso.azurecr.io":             "contoso.azurecr.io",
		"https://fleet.example.com:6443": "https://fleet.example.com:6443",
		"true":                           `"true"`,
		"1.5":                            `"1.5"`,
		"a: b":                           `"a: b"`,
		"x #y":                           `"x #y"`,
		"line\nbreak":                    `"line\nbreak"`,
		"ssh://git@github.com/c/f.git":   "ssh://git@github.com/c/f.git",
	} {
		if got := yamlString(in); got != want {
			t.Errorf("yamlString(%q) = %s, want %s", in, got, want)
		}
	}
}
