package lock

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"fleetgen.dev/fleetgen/pkg/problem"
	"github.com/google/go-cmp/cmp"
)

// marker stands for content of a lock (or of a file a lock symlink points
// at) that no message may quote.
const marker = "MARKERq7Zt0xLk"

const (
	digest  = "sha256:d55432289a2f69dad7e00346d00e8d4df4d0053a44dffb3f8cf463f6e3fb4b04"
	head    = "apiVersion: fleetgen.dev/v1alpha1\nkind: Lock\n"
	goodImg = "- {source: docker.io/library/busybox:1.36, target: r.example/library/busybox:1.36, digest: " + digest + "}\n"
)

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in   string
		want []string // one entry per error, in order
	}{
		"yaml syntax":       {in: head + "images: [" + marker + "\n", want: []string{"fleet.lock.yaml:3:9: invalid YAML: want the lock fleetgen writes"}},
		"bad token":         {in: head + "images:\n  - source: \"\\" + marker + "\"\n", want: []string{"fleet.lock.yaml:4:5: invalid YAML"}},
		"tab":               {in: head + "images:\n\t- " + marker + "\n", want: []string{"invalid YAML"}},
		"second document":   {in: head + "---\n" + marker + "\n", want: []string{"fleet.lock.yaml:3: a second YAML document"}},
		"alias":             {in: head + "images: &" + marker + " []\nclients: *" + marker + "\n", want: []string{"fleet.lock.yaml:4: a YAML alias"}},
		"not a mapping":     {in: "- " + marker + "\n", want: []string{"fleet.lock.yaml:1: not a mapping"}},
		"not utf-8":         {in: head + "images: [\xff" + marker + "]\n", want: []string{"fleet.lock.yaml:3: not UTF-8 text"}},
		"nul":               {in: head + "\x00" + marker, want: []string{"not UTF-8 text"}},
		"unknown field":     {in: head + marker + ": 1\n", want: []string{"fleet.lock.yaml:3:1: unknown field: want apiVersion, kind, images, charts, clients or shards"}},
		"duplicate field":   {in: head + "kind: Lock\n", want: []string{"fleet.lock.yaml:3:1: duplicate field"}},
		"wrong apiVersion":  {in: "apiVersion: " + marker + "\nkind: Lock\n", want: []string{"fleet.lock.yaml:1:13: apiVersion: want fleetgen.dev/v1alpha1"}},
		"wrong kind":        {in: "apiVersion: fleetgen.dev/v1alpha1\nkind: " + marker + "\n", want: []string{"fleet.lock.yaml:2:7: kind: want Lock"}},
		"no header":         {in: "images: []\n", want: []string{"apiVersion: missing", "kind: missing"}},
		"images not a list": {in: head + "images: {" + marker + ": 1}\n", want: []string{"fleet.lock.yaml:3:9: images: want a list"}},
		"image not a map":   {in: head + "images: [" + marker + "]\n", want: []string{"images[0]: want a mapping with source, target, digest, referrers or verified"}},
		"image unknown key": {in: head + "images:\n" + goodImg + "- {source: a, target: b, digest: " + digest + ", " + marker + ": x}\n", want: []string{"fleet.lock.yaml:5:107: images[1]: unknown field: want source, target, digest, referrers or verified"}},
		"image missing":     {in: head + "images:\n- {source: a}\n", want: []string{"images[0].target: missing", "images[0].digest: missing"}},
		"bad digest":        {in: head + "images:\n- {source: a, target: b, digest: sha256:" + marker + "}\n", want: []string{"fleet.lock.yaml:4:34: images[0].digest: malformed digest: want sha256: and 64 lower-case hex digits"}},
		"number":            {in: head + "images:\n- {source: 12, target: b, digest: " + digest + "}\n", want: []string{"images[0].source: want a non-empty string"}},
		"empty string":      {in: head + "clients:\n- {cluster: '', clientID: x}\n", want: []string{"clients[0].cluster: want a non-empty string"}},
		"list as string":    {in: head + "clients:\n- {cluster: [" + marker + "], clientID: x}\n", want: []string{"clients[0].cluster: want a non-empty string"}},
		"merge key":         {in: head + "clients:\n- {<<: {cluster: a}, clientID: x}\n", want: []string{"4:3: clients[0].cluster: missing", "4:4: clients[0]: a key that is not a string"}},
		"duplicate source":  {in: head + "images:\n" + goodImg + goodImg, want: []string{"fleet.lock.yaml:5:3: images[1].source: duplicate source (also images[0])"}},
		"duplicate cluster": {in: head + "clients:\n- {cluster: a, clientID: x}\n- {cluster: a, clientID: y}\n", want: []string{"clients[1].cluster: duplicate cluster (also clients[0])"}},
		"many problems":     {in: "apiVersion: x\nkind: y\nimages: 1\nclients: 2\n", want: []string{"apiVersion: want", "kind: want", "images: want a list", "clients: want a list"}},
		"too many items":    {in: head + "images: [" + strings.Repeat("a,", MaxItems) + "]\n", want: []string{fmt.Sprintf("more than %d YAML items", MaxItems)}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			l, err := Parse([]byte(tc.in))
			var es problem.Errors
			if !errors.As(err, &es) {
				t.Fatalf("Parse = %v, %v; want problem.Errors", l, err)
			}
			if len(es) != len(tc.want) {
				t.Errorf("got %d errors, want %d:\n%v", len(es), len(tc.want), err)
			}
			for i, w := range tc.want {
				if i < len(es) && !strings.Contains(es[i].Error(), w) {
					t.Errorf("error %d = %q, want it to contain %q", i, es[i].Error(), w)
				}
			}
			if strings.Contains(err.Error(), marker) || strings.Contains(err.Error(), "\n"+marker) {
				t.Errorf("an error quotes the lock's content:\n%v", err)
			}
			if !problem.IsInvalid(err) {
				t.Error("not an input error")
			}
		})
	}
}

// TestParseCodes: the lock's problems carry the codes fleet.yaml's of the
// same kind carry (docs/cli.md).
func TestParseCodes(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"# " + marker + "\n":                                    problem.CodeEmpty,
		head + "images: [" + marker + "\n":                      problem.CodeYAMLSyntax,
		head + "---\n" + marker + "\n":                          problem.CodeMultiDoc,
		head + "\x00":                                           problem.CodeNotText,
		head + marker + ": 1\n":                                 problem.CodeUnknownField,
		head + "kind: Lock\n":                                   problem.CodeDuplicateKey,
		head + "images: 1\n":                                    problem.CodeWrongType,
		head + "images:\n- {source: a}\n":                       problem.CodeRequired,
		"apiVersion: x\nkind: Lock\n":                           problem.CodeUnsupported,
		head + "images:\n" + goodImg + goodImg:                  problem.CodeDuplicate,
		head + "images:\n- {source: a, target: b, digest: x}\n": problem.CodeInvalid,
	} {
		_, err := Parse([]byte(in))
		var es problem.Errors
		if !errors.As(err, &es) || len(es) == 0 || es[0].ErrorCode() != want {
			t.Errorf("Parse(%q) = %v, want a first error with code %s", in, err, want)
		}
	}
}

// TestParseExamples: every example lock parses and marshals back to its own
// bytes.
func TestParseExamples(t *testing.T) {
	t.Parallel()
	for _, p := range exampleLocks(t) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		l, err := Parse(data)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if got := l.Marshal(); !bytes.Equal(got, data) {
			t.Errorf("%s: Marshal(Parse) differs:\n%s", p, cmp.Diff(string(data), string(got)))
		}
	}
}

func exampleLocks(t testing.TB) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "..", "examples", "*", FileName))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no example locks: %v", err)
	}
	return paths
}

// readWithin runs Read and fails the test rather than hanging it when Read
// blocks (a FIFO opened for reading waits for a writer).
func readWithin(t *testing.T, path string) (*Lock, []byte, error) {
	t.Helper()
	type result struct {
		l   *Lock
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		l, b, err := Read(path)
		done <- result{l, b, err}
	}()
	select {
	case r := <-done:
		return r.l, r.b, r.err
	case <-time.After(10 * time.Second):
		t.Fatal("Read still blocked after 10s")
		return nil, nil, nil
	}
}

// TestReadAttacks: a lock from a pull request cannot hang fleetgen, exhaust
// its memory or make it read a file outside the fleet's folder.
func TestReadAttacks(t *testing.T) {
	t.Parallel()
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte(head+"images: ["+marker+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		plant func(t *testing.T, path string)
		want  string
	}{
		"fifo": {
			plant: func(t *testing.T, p string) {
				if err := syscall.Mkfifo(p, 0o644); err != nil {
					t.Fatal(err)
				}
			},
			want: "not a regular file (a folder, FIFO or device)",
		},
		"symlink to /dev/zero": {plant: func(t *testing.T, p string) { symlink(t, "/dev/zero", p) }, want: "a symlink that leads out of the folder of fleet.yaml"},
		"symlink out":          {plant: func(t *testing.T, p string) { symlink(t, outside, p) }, want: "a symlink that leads out of the folder of fleet.yaml"},
		"relative symlink out": {plant: func(t *testing.T, p string) { symlink(t, "../"+filepath.Base(filepath.Dir(outside))+"/secret", p) }, want: "a symlink that leads out"},
		"folder": {
			plant: func(t *testing.T, p string) {
				if err := os.Mkdir(p, 0o755); err != nil {
					t.Fatal(err)
				}
			},
			want: "not a regular file",
		},
		"oversized": {
			plant: func(t *testing.T, p string) {
				// Sparse: a 1 GiB lock must be refused without reading it.
				fh, err := os.Create(p)
				if err != nil {
					t.Fatal(err)
				}
				defer fh.Close()
				if err := fh.Truncate(1 << 30); err != nil {
					t.Fatal(err)
				}
			},
			want: fmt.Sprintf("larger than %d bytes", MaxSize),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), FileName)
			tc.plant(t, path)
			start := time.Now()
			l, _, err := readWithin(t, path)
			if !problem.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path+": ") {
				t.Fatalf("Read = %v, %v; want an input error naming %s: %s", l, err, path, tc.want)
			}
			if strings.Contains(err.Error(), marker) {
				t.Errorf("the error quotes what the symlink points at:\n%v", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("Read took %v", d)
			}
		})
	}
}

func TestReadInside(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, b, err := Read(filepath.Join(dir, FileName)); err != nil || b != nil {
		t.Fatalf("missing lock: %v, %q; want an empty lock", err, b)
	}
	data := []byte(head + "images:\n" + goodImg)
	if err := os.WriteFile(filepath.Join(dir, "real.yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	symlink(t, "real.yaml", filepath.Join(dir, FileName))
	l, b, err := Read(filepath.Join(dir, FileName))
	if err != nil || !bytes.Equal(b, data) || len(l.Images) != 1 {
		t.Fatalf("lock symlinked inside its folder: %v, %v", l, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte(head+"kind: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = Read(filepath.Join(dir, "bad.yaml"))
	if err == nil || !strings.HasPrefix(err.Error(), filepath.Join(dir, "bad.yaml")+":3:1: ") {
		t.Errorf("parse error %v: want it to start with the path, line and column", err)
	}
}

func symlink(t *testing.T, target, name string) {
	t.Helper()
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
}

// word finds runs of letters and digits (with a letter) of 5 or more: words
// of content that an error might quote.
var word = regexp.MustCompile(`[A-Za-z0-9]*[A-Za-z][A-Za-z0-9]*`)

// quotes returns a word of msg, 5 letters or more, that is in the input but
// not in the package's source: the message's own words are in its source, so
// such a word can only have come from the input.
func quotes(t *testing.T, msg string, input []byte, source []byte) string {
	t.Helper()
	for _, w := range word.FindAllString(msg, -1) {
		if len(w) >= 5 && bytes.Contains(input, []byte(w)) && !bytes.Contains(source, []byte(w)) {
			return w
		}
	}
	return ""
}

// FuzzParse: Parse never panics, anything it accepts marshals and parses back
// to itself, and no error quotes the input.
func FuzzParse(f *testing.F) {
	for _, p := range exampleLocks(f) {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(head + "images: [" + marker + "\n"))
	f.Add([]byte(head + "clients:\n- {cluster: a, clientID: x}\n- {cluster: a, clientID: y}\n"))
	var source []byte
	for _, name := range []string{"parse.go", "lock.go", "../../internal/strictyaml/decode.go", "../../internal/strictyaml/document.go"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		source = append(source, b...)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := Parse(data)
		if err != nil {
			var es problem.Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("Parse error %T %v: want problem.Errors", err, err)
			}
			if w := quotes(t, err.Error(), data, source); w != "" {
				t.Fatalf("error quotes the input (%q):\n%v", w, err)
			}
			return
		}
		again, err := Parse(l.Marshal())
		if err != nil {
			t.Fatalf("Parse(Marshal(l)): %v", err)
		}
		if d := cmp.Diff(l, again); d != "" {
			t.Fatalf("round trip differs:\n%s", d)
		}
	})
}

func TestParseCharts(t *testing.T) {
	t.Parallel()
	d := "sha256:" + strings.Repeat("a", 64)
	good := "apiVersion: fleetgen.dev/v1alpha1\nkind: Lock\ncharts:\n" +
		"- {repository: https://charts.example/stable, chart: web, version: 1.2.3, archive: " + d + ", target: m.example/stable/web:1.2.3, digest: " + d + "}\n"
	l, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	c, ok := l.Chart("https://charts.example/stable/", "web", "1.2.3")
	if !ok || c.Pinned() != "m.example/stable/web@"+d {
		t.Fatalf("Chart = %+v, %v", c, ok)
	}
	if _, ok := l.Chart("https://charts.example/stable", "web", "1.2.4"); ok {
		t.Fatal("Chart found another version")
	}
	for name, tc := range map[string]struct{ doc, want string }{
		"duplicate": {good + "- {repository: https://charts.example/stable, chart: web, version: 1.2.3, archive: " + d + ", target: x, digest: " + d + "}\n", "duplicate chart"},
		"digest":    {strings.Replace(good, "digest: "+d, "digest: sha256:1", 1), "charts[0].digest: malformed digest"},
		"repo":      {strings.Replace(good, "https://charts.example/stable", "file:///etc", 1), "charts[0].repository: malformed repository"},
		"missing":   {strings.Replace(good, ", archive: "+d, "", 1), "charts[0]"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse = %v, want %q", err, tc.want)
			}
		})
	}
}
