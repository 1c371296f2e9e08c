package review

import (
	"fmt"
	"io"
	"strings"

	"fleetgen.dev/fleetgen/internal/inert"
)

// Every string a Report holds may come from a pull request or from DIR (a
// cluster name is a folder name there, a field holds label keys and layer
// names, values are whatever the trees say), so the writers put each one
// through internal/inert: text quotes it with inert.Quote (printable ASCII,
// bare only when it is a plain token), GitHub's workflow commands with
// inert.Command, Markdown in inert.Code spans, JSON with inert.JSON. Only
// fleetgen's own words (the summary, kinds of change, markers) are written as
// they are, and no line starts with a quoted string.

// MarkdownMarker starts every Markdown report, so that a CI job finds its
// own pull request comment and edits it rather than adding one per push.
const MarkdownMarker = "<!-- fleetgen diff -->"

// MaxMarkdown bounds WriteMarkdown's output below GitHub's limit for a
// comment (65,536 characters).
const MaxMarkdown = 60000

// Bounds of the text, Markdown and GitHub reports (JSON has everything).
const (
	// maxValue is how many bytes of a value a report shows.
	maxValue = 256
	// maxTextNames and maxMarkdownNames are how many clusters a group of
	// the text report and a Markdown section names; a Markdown heading and
	// an annotation name maxShortNames.
	maxTextNames     = 100
	maxMarkdownNames = 500
	maxShortNames    = 10
	// maxItems is how many changes, objects and warnings a group shows.
	maxItems = 200
	// maxNoticeFields is how many fields of an object an annotation shows;
	// maxMarkdownFields how many a Markdown section lists.
	maxNoticeFields   = 3
	maxMarkdownFields = 20
	// maxAnnotations is how many ::warning and how many ::notice commands
	// the GitHub report writes (the runner shows 10 of each per step).
	maxAnnotations = 10
	// maxSummaryNames is how many clusters each line of the Markdown
	// summary names; maxWarnings how many distinct warnings it lists;
	// maxFiles how many files.
	maxSummaryNames = 5
	maxWarnings     = 20
	maxFiles        = 100
)

// Formats of Write.
const (
	FormatText     = "text"
	FormatMarkdown = "markdown"
	FormatJSON     = "json"
	FormatGitHub   = "github"
)

// Write writes r in format (FormatText, FormatMarkdown, FormatJSON or
// FormatGitHub); for text and github the unified file diff follows as a
// quoted block (inert.Block: escaped, and under ::stop-commands:: so that a
// GitHub runner runs nothing it holds). Text writes nothing when there is no
// change at all.
func (r Report) Write(w io.Writer, format, fileDiff string) error {
	var b strings.Builder
	switch format {
	case FormatMarkdown:
		r.markdown(&b)
	case FormatJSON:
		out, err := inert.JSON(r, "  ")
		if err != nil {
			return err
		}
		b.Write(out)
	case FormatGitHub:
		r.github(&b)
		b.WriteString(inert.Block(fileDiff))
	case FormatText:
		if fileDiff == "" && r.Empty() {
			break
		}
		r.text(&b)
		if fileDiff != "" {
			b.WriteString("\n")
			b.WriteString(inert.Block(fileDiff))
		}
	default:
		return fmt.Errorf("report format %q: want text, markdown, json or github", format)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteText writes the report for a terminal (Write's text, without a file
// diff).
func (r Report) WriteText(w io.Writer) error { return r.writeFormat(w, FormatText) }

// WriteMarkdown writes the report as one pull request comment (at most
// MaxMarkdown characters, starting with MarkdownMarker).
func (r Report) WriteMarkdown(w io.Writer) error { return r.writeFormat(w, FormatMarkdown) }

// WriteJSON writes the report as one JSON object (SPEC §7), indented, ASCII.
func (r Report) WriteJSON(w io.Writer) error { return r.writeFormat(w, FormatJSON) }

// WriteGitHub writes GitHub Actions workflow commands: a ::warning per
// warning and a ::notice per group of clusters with the same change.
func (r Report) WriteGitHub(w io.Writer) error { return r.writeFormat(w, FormatGitHub) }

func (r Report) writeFormat(w io.Writer, format string) error {
	if format == FormatText && r.Empty() {
		var b strings.Builder
		r.text(&b)
		_, err := io.WriteString(w, b.String())
		return err
	}
	return r.Write(w, format, "")
}

// Summary is the report in one line, e.g. "1 cluster added, 2 clusters
// changed; 5 files differ", or "no changes". It holds counts only.
func (r Report) Summary() string {
	if r.Empty() {
		return "no changes"
	}
	n := map[string]int{}
	for _, c := range r.Clusters {
		n[c.Change]++
	}
	var parts []string
	for _, k := range changeKinds {
		if n[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s %s", n[k], plural(n[k], "cluster", "clusters"), kindWord(k)))
		}
	}
	if len(r.Manager.Changes) > 0 {
		parts = append(parts, fmt.Sprintf("manager: %d %s", len(r.Manager.Changes), plural(len(r.Manager.Changes), "change", "changes")))
	}
	files := len(r.Files.Added) + len(r.Files.Removed) + len(r.Files.Changed)
	s := strings.Join(parts, ", ")
	if s != "" {
		s += "; "
	}
	return s + fmt.Sprintf("%d %s differ", files, plural(files, "file", "files"))
}

// changeKinds orders the kinds of cluster change in every report.
var changeKinds = []string{Added, Removed, Update}

// kindWord is a kind of change as a report writes it: one of fleetgen's
// words, whatever a hand-built Report holds.
func kindWord(k string) string {
	switch k {
	case Added, Removed, Update:
		return k
	}
	return "changed"
}

// text writes the text report: the summary line, then a block per group of
// clusters that share changes (kind: clusters, then a line per change,
// object and warning), then the manager.
func (r Report) text(b *strings.Builder) {
	fmt.Fprintf(b, "fleetgen diff: %s\n", r.Summary())
	for _, g := range groupClusters(r.Clusters) {
		fmt.Fprintf(b, "\n%s: %s\n", kindWord(g.change), textNames(g.clusters, maxTextNames))
		for i, it := range g.items {
			if i == maxItems {
				fmt.Fprintf(b, "  … %d more (fleetgen diff --output json has them)\n", len(g.items)-i)
				break
			}
			b.WriteString("  " + it.text() + "\n")
		}
	}
	if len(r.Manager.Changes)+len(r.Manager.Warnings) > 0 {
		b.WriteString("\nmanager: changed\n")
		for _, ch := range r.Manager.Changes {
			b.WriteString("  " + ch.text() + "\n")
		}
		for _, wn := range r.Manager.Warnings {
			b.WriteString("  warning: " + inert.Prose(wn) + "\n")
		}
	}
}

// textNames lists clusters for the text report: each quoted, at most max,
// with their count when more than one.
func textNames(names []string, max int) string {
	var b strings.Builder
	for i, n := range names {
		if i == max {
			fmt.Fprintf(&b, " … and %d more", len(names)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(inert.Quote(n))
	}
	if len(names) > 1 {
		fmt.Fprintf(&b, " (%d clusters)", len(names))
	}
	return b.String()
}

// text is one change for the text report: field: + to, field: - from, or
// field: from → to; an image's tags and digests side by side.
func (c Change) text() string {
	f := inert.Quote(c.Field) + ": "
	if s, ok := imageChange(c, func(s string) string { return s }, " → "); ok {
		return f + s
	}
	from, to := textSide(c.From, c.FromMarker), textSide(c.To, c.ToMarker)
	switch {
	case c.From == "" && !c.FromMarker:
		return f + "+ " + to
	case c.To == "" && !c.ToMarker:
		return f + "- " + from
	default:
		return f + from + " → " + to
	}
}

// textSide is a value quoted and cut to maxValue, or a marker as it is
// (quoted too unless it is plain words: markers are fleetgen's words, but a
// Change is data).
func textSide(s string, isMarker bool) string {
	if isMarker && plainWords(s) {
		return s
	}
	head, more := inert.Cut(s, maxValue)
	if more == 0 {
		return inert.Quote(s)
	}
	return inert.Quote(head) + fmt.Sprintf("… (%d more bytes)", more)
}

func (it item) text() string {
	switch {
	case it.change != nil:
		return it.change.text()
	case it.object != nil:
		o := it.object
		var b strings.Builder
		b.WriteString(o.textLine())
		for _, ch := range o.Changes {
			b.WriteString("\n    " + ch.text())
		}
		if o.MoreChanges > 0 {
			fmt.Fprintf(&b, "\n    … %d more %s", o.MoreChanges, plural(o.MoreChanges, "field", "fields"))
		}
		return b.String()
	case it.moreObjects != 0:
		return fmt.Sprintf("… %d more %s", it.moreObjects, plural(it.moreObjects, "object", "objects"))
	default:
		return "warning: " + inert.Prose(it.warning)
	}
}

// textLine is the object's line in text: layer, sign, apiVersion, kind,
// namespace/name.
func (o *Object) textLine() string {
	return o.via(inert.Quote) + ": " + objectSign(o.Change) + " " + inert.Quote(o.APIVersion) + " " + inert.Quote(o.Kind) + " " + objectName(o, inert.Quote)
}

// via names where the cluster receives the object from: "layer <name>" or
// "delivery <name>", the name written with quote.
func (o *Object) via(quote func(string) string) string {
	if o.Delivery != "" {
		return "delivery " + quote(o.Delivery)
	}
	return "layer " + quote(o.Layer)
}

func objectSign(change string) string {
	switch change {
	case Added:
		return "+"
	case Removed:
		return "-"
	}
	return "~"
}

func objectName(o *Object, quote func(string) string) string {
	if o.Namespace == "" {
		return quote(o.Name)
	}
	return quote(o.Namespace) + "/" + quote(o.Name)
}

// github writes the workflow commands: a ::warning per distinct warning
// (with the clusters that have it), a ::notice per group of clusters, one for
// the manager; at most maxAnnotations of each, then one that counts the rest.
func (r Report) github(b *strings.Builder) {
	title := []inert.Prop{{Key: "title", Value: "fleetgen diff"}}
	ws := groupWarnings(r)
	for i, w := range ws {
		if i == maxAnnotations {
			b.WriteString(inert.Command("warning", title, fmt.Sprintf("%d more warnings: fleetgen diff --output json has them", len(ws)-i)))
			break
		}
		msg := inert.Prose(w.message)
		if len(w.clusters) > 0 {
			msg += " (" + textNames(w.clusters, maxShortNames) + ")"
		}
		b.WriteString(inert.Command("warning", title, msg))
	}
	gs := groupClusters(r.Clusters)
	for i, g := range gs {
		if i == maxAnnotations {
			b.WriteString(inert.Command("notice", title, fmt.Sprintf("%d more groups of changed clusters: fleetgen diff --output json has them", len(gs)-i)))
			break
		}
		b.WriteString(inert.Command("notice", title, kindWord(g.change)+": "+textNames(g.clusters, maxShortNames)+": "+g.fields()))
	}
	if len(r.Manager.Changes) > 0 {
		fields := make([]string, 0, len(r.Manager.Changes))
		for _, ch := range r.Manager.Changes {
			fields = append(fields, inert.Quote(ch.Field))
		}
		b.WriteString(inert.Command("notice", title, "manager: changed: "+joinShort(fields)))
	}
}

// fields names what a group changes, for an annotation.
func (g group) fields() string {
	var out []string
	seen := map[string]bool{}
	for _, it := range g.items {
		var f string
		switch {
		case it.change != nil:
			f = inert.Quote(it.change.Field)
		case it.object != nil && len(it.object.Changes) > 0:
			f = it.object.textLine() + ": " + changesText(it.object.Changes, it.object.MoreChanges, maxNoticeFields)
		case it.object != nil:
			f = it.object.via(inert.Quote) + " objects"
		case it.moreObjects != 0:
			f = "objects"
		default:
			f = "warnings"
		}
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return joinShort(out)
}

func joinShort(s []string) string {
	if len(s) > maxShortNames {
		return strings.Join(s[:maxShortNames], ", ") + fmt.Sprintf(" and %d more", len(s)-maxShortNames)
	}
	return strings.Join(s, ", ")
}

// plural is one or many by n.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
