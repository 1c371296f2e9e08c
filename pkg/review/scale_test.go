package review_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"fleetgen.dev/fleetgen/pkg/pipeline"
	"fleetgen.dev/fleetgen/pkg/review"
	"fleetgen.dev/fleetgen/test/synthetic"
	"fleetgen.dev/fleetgen/test/testenv"
)

// TestImageBumpAt400 renders a synthetic fleet of 400 clusters, bumps kured
// from 1.12.0 to 1.12.1 (the layer file and the lock, as `fleetgen mirror`
// writes it) and reviews the change: the text and Markdown reports say the
// bump once, with tags beside digests, and list the clusters; the comment
// stays under MaxMarkdown; JSON stays per cluster.
func TestImageBumpAt400(t *testing.T) {
	t.Parallel()
	const n = 400
	dir := t.TempDir()
	if err := synthetic.Write(dir, n); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	cfg := pipeline.Config{File: filepath.Join(dir, "fleet.yaml"), AllowPlaintextSecrets: true,
		LookupEnv: func(string) (string, bool) { return "", false }}
	if err := pipeline.Render(context.Background(), cfg, pipeline.RenderOptions{OutDir: out}); err != nil {
		t.Fatal(err)
	}
	for _, env := range []string{"prod", "staging", "dev"} {
		testenv.ReplaceIn(t, filepath.Join(dir, "infrastructure", env, "deployment.yaml"), "kured:1.12.0", "kured:1.12.1")
	}
	testenv.ReplaceIn(t, filepath.Join(dir, "fleet.lock.yaml"),
		"kured:1.12.0", "kured:1.12.1",
		"sha256:"+strings.Repeat("1", 64), "sha256:"+strings.Repeat("c", 64))
	rep, _, err := pipeline.Diff(context.Background(), cfg, pipeline.RenderOptions{OutDir: out})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Clusters) != n {
		t.Fatalf("%d clusters changed, want %d", len(rep.Clusters), n)
	}
	const line = "images[ghcr.io/kubereboot/kured]: ? → 1.12.1, sha256:111111111111… → cccccccccccc…"
	var text, md, gh, js bytes.Buffer
	for _, w := range []struct {
		b      *bytes.Buffer
		format string
	}{{&text, review.FormatText}, {&md, review.FormatMarkdown}, {&gh, review.FormatGitHub}, {&js, review.FormatJSON}} {
		if err := rep.Write(w.b, w.format, ""); err != nil {
			t.Fatal(err)
		}
	}
	if c := strings.Count(text.String(), "images[ghcr.io/kubereboot/kured]"); c != 1 || !strings.Contains(text.String(), "\n  "+line+"\n") {
		t.Errorf("text says the bump %d times, want once as %q:\n%s", c, line, text.String())
	}
	if !strings.Contains(text.String(), "\nchanged: c00000, c00001, ") || !strings.Contains(text.String(), " … and 300 more (400 clusters)\n") {
		t.Errorf("text lacks the cluster list:\n%.600s", text.String())
	}
	mds := md.String()
	if c := strings.Count(mds, "`images[ghcr.io/kubereboot/kured]`"); c != 1 {
		t.Errorf("markdown says the bump %d times, want once", c)
	}
	if !strings.Contains(mds, "? → `1.12.1`, `sha256:111111111111`… → `cccccccccccc`…") {
		t.Errorf("markdown lacks tags beside digests:\n%s", mds)
	}
	for i := range n {
		if !strings.Contains(mds, fmt.Sprintf("`c%05d`", i)) {
			t.Errorf("markdown does not name c%05d", i)
			break
		}
	}
	if md.Len() > review.MaxMarkdown || strings.Contains(mds, "not shown") {
		t.Errorf("markdown is %d characters (max %d) or cut", md.Len(), review.MaxMarkdown)
	}
	if c := strings.Count(js.String(), `"field": "images[ghcr.io/kubereboot/kured]"`); c != n {
		t.Errorf("json has the bump %d times, want once per cluster (%d)", c, n)
	}
	t.Logf("image bump on %d clusters: text %d bytes, markdown %d characters (limit %d), github %d bytes, json %d bytes",
		n, text.Len(), md.Len(), review.MaxMarkdown, gh.Len(), js.Len())
}

// TestManyDistinctChanges: 5,000 clusters that each change differently, each
// with a warning, still make a comment under MaxMarkdown that starts with
// the summary by kind and ends with a note that points to the JSON output.
func TestManyDistinctChanges(t *testing.T) {
	t.Parallel()
	const n = 5000
	r := review.Report{Files: review.Files{Changed: []string{"x"}}}
	for i := range n {
		name := fmt.Sprintf("edge-%04d", i)
		r.Clusters = append(r.Clusters, review.Cluster{Name: name, Change: review.Update,
			Changes:  []review.Change{{Field: "labels.zone", From: "a", To: fmt.Sprintf("z%d", i)}},
			Warnings: []string{fmt.Sprintf("%s: clientID changed: reinstall fleet-agent with agents/%s/values.yaml", name, name)}})
	}
	for _, format := range []string{review.FormatMarkdown, review.FormatGitHub, review.FormatText} {
		var b bytes.Buffer
		if err := r.Write(&b, format, ""); err != nil {
			t.Fatal(err)
		}
		s := b.String()
		switch format {
		case review.FormatMarkdown:
			if b.Len() > review.MaxMarkdown {
				t.Errorf("markdown: %d characters, want at most %d", b.Len(), review.MaxMarkdown)
			}
			if !strings.Contains(s, "- **changed**: 5000 clusters: `edge-0000`, ") || !strings.Contains(s, "  - labels: 5000 clusters: ") {
				t.Errorf("markdown lacks the summary by kind:\n%.1000s", s)
			}
			if !strings.Contains(s, "more groups of clusters") || !strings.HasSuffix(s, "`fleetgen diff --output json` has the whole report.\n") {
				t.Errorf("markdown lacks the closing note:\n%s", s[len(s)-500:])
			}
			if !strings.Contains(s, "> - and 4980 more warnings\n") {
				t.Error("markdown does not bound the warnings")
			}
		case review.FormatGitHub:
			if c := strings.Count(s, "\n"); c > 2*10+3 {
				t.Errorf("github: %d annotations, want at most 10 warnings and 10 notices and their counts", c)
			}
		}
		t.Logf("%d distinct changes and warnings: %s %d bytes", n, format, b.Len())
	}
}
