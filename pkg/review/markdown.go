package review

import (
	"fmt"
	"regexp"
	"strings"

	"fleetgen.dev/fleetgen/internal/inert"
)

// markdown writes the pull request comment, at most MaxMarkdown characters:
// MarkdownMarker, a heading with the summary, a summary by kind of change
// (counts and first clusters), the warnings, the manager's changes, a
// section per group of clusters that share changes, and the files. What
// does not fit is counted in a closing note that points to the JSON output;
// the summary, written first and bounded, always fits.
func (r Report) markdown(b *strings.Builder) {
	b.WriteString(MarkdownMarker + "\n")
	fmt.Fprintf(b, "### fleetgen diff: %s\n", r.Summary())
	if r.Empty() && len(r.Manager.Warnings) == 0 {
		return
	}
	groups := groupClusters(r.Clusters)
	w := mdBudget{b: b}
	w.add(r.mdSummary())
	w.add(r.mdWarnings())
	w.add(r.mdManager())
	for i, g := range groups {
		if !w.add(g.markdown(maxMarkdownNames)) && !w.add(g.markdown(maxShortNames)) {
			n := 0
			for _, g := range groups[i:] {
				n += len(g.clusters)
			}
			w.note(fmt.Sprintf("%d more %s of clusters (%d %s) not shown", len(groups)-i, plural(len(groups)-i, "group", "groups"), n, plural(n, "cluster", "clusters")))
			break
		}
	}
	if !w.add(r.mdFiles()) {
		w.note("the list of files not shown")
	}
	if len(w.notes) > 0 {
		fmt.Fprintf(b, "\n%s: the comment would exceed %d characters; `fleetgen diff --output json` has the whole report.\n", strings.Join(w.notes, "; "), MaxMarkdown)
	}
}

// mdBudget adds sections while they fit MaxMarkdown with room for the
// closing note; once one does not, it adds none.
type mdBudget struct {
	b     *strings.Builder
	full  bool
	notes []string
}

// noteRoom is kept free for the closing note.
const noteRoom = 400

func (w *mdBudget) add(s string) bool {
	if w.full || w.b.Len()+len(s)+noteRoom > MaxMarkdown {
		w.full = true
		return s == ""
	}
	w.b.WriteString(s)
	return true
}

func (w *mdBudget) note(s string) { w.notes = append(w.notes, s) }

// mdSummary lists each kind of change with its count and first clusters,
// and under "changed" each family of fields (images, labels, …) likewise.
func (r Report) mdSummary() string {
	byKind := map[string][]string{}
	families := map[string][]string{}
	var order []string
	for _, c := range r.Clusters {
		k := kindWord(c.Change)
		byKind[k] = append(byKind[k], c.Name)
		if c.Change != Update {
			continue
		}
		seen := map[string]bool{}
		note := func(f string) {
			if seen[f] {
				return
			}
			seen[f] = true
			if families[f] == nil {
				order = append(order, f)
			}
			families[f] = append(families[f], c.Name)
		}
		for _, ch := range c.Changes {
			note(family(ch.Field))
		}
		if len(c.Objects) > 0 {
			note("objects")
		}
	}
	var b strings.Builder
	b.WriteString("\n")
	for _, k := range changeKinds {
		names := byKind[k]
		if len(names) == 0 {
			continue
		}
		fmt.Fprintf(&b, "- **%s**: %s\n", k, mdCount(names, maxSummaryNames))
		if k != Update {
			continue
		}
		for _, f := range order {
			fmt.Fprintf(&b, "  - %s: %s\n", f, mdCount(families[f], maxSummaryNames))
		}
	}
	return b.String()
}

// familyName is a field's first word when it is a plain word.
var familyName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]{0,40}`)

// family is the family of a field, for the summary: its first word
// (images, labels, registration, layers, clusterGroups, agent…), "other"
// when it has none.
func family(field string) string {
	f := familyName.FindString(field)
	if f == "" || (len(f) < len(field) && !strings.ContainsRune(".[", rune(field[len(f)]))) {
		return "other"
	}
	return f
}

// mdCount is "3 clusters: `a`, `b` and 1 more".
func mdCount(names []string, max int) string {
	return fmt.Sprintf("%d %s: %s", len(names), plural(len(names), "cluster", "clusters"), mdNames(names, max))
}

// mdNames lists names as code spans, at most max of them, each cut to
// maxValue bytes.
func mdNames(names []string, max int) string {
	var b strings.Builder
	for i, n := range names {
		if i == max {
			fmt.Fprintf(&b, " and %d more", len(names)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(mdValue(n))
	}
	return b.String()
}

// mdWarnings is the warnings as one GitHub alert: each distinct warning once,
// with its clusters.
func (r Report) mdWarnings() string {
	ws := groupWarnings(r)
	if len(ws) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n> [!WARNING]\n")
	for i, w := range ws {
		if i == maxWarnings {
			fmt.Fprintf(&b, "> - and %d more warnings\n", len(ws)-i)
			break
		}
		b.WriteString("> - " + mdValue(w.message))
		if len(w.clusters) > 0 {
			b.WriteString(" on " + mdNames(w.clusters, maxShortNames))
		} else {
			b.WriteString(" (manager)")
		}
		b.WriteString("\n")
	}
	return b.String()
}

func (r Report) mdManager() string {
	if len(r.Manager.Changes) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n#### manager\n\n")
	for i, ch := range r.Manager.Changes {
		if i == maxItems {
			fmt.Fprintf(&b, "- and %d more\n", len(r.Manager.Changes)-i)
			break
		}
		b.WriteString("- " + ch.markdown() + "\n")
	}
	return b.String()
}

// markdown is a group's section, naming at most names clusters.
func (g group) markdown(names int) string {
	var b strings.Builder
	if len(g.clusters) <= maxShortNames {
		fmt.Fprintf(&b, "\n#### %s: %s\n\n", kindWord(g.change), mdNames(g.clusters, maxShortNames))
	} else {
		fmt.Fprintf(&b, "\n#### %s: %d clusters\n\n", kindWord(g.change), len(g.clusters))
		b.WriteString("Clusters: " + mdNames(g.clusters, names) + "\n\n")
	}
	for i, it := range g.items {
		if i == maxItems {
			fmt.Fprintf(&b, "- and %d more\n", len(g.items)-i)
			break
		}
		b.WriteString("- " + it.markdown() + "\n")
	}
	return b.String()
}

func (it item) markdown() string {
	switch {
	case it.change != nil:
		return it.change.markdown()
	case it.object != nil:
		o := it.object
		var b strings.Builder
		b.WriteString(o.via(mdValue) + ": " + kindWord(o.Change) + " " + mdValue(o.Kind) + " " + objectName(o, mdValue) + " (" + mdValue(o.APIVersion) + ")")
		more := o.MoreChanges
		for i, ch := range o.Changes {
			if i == maxMarkdownFields {
				more += len(o.Changes) - i
				break
			}
			b.WriteString("\n  - " + ch.markdown())
		}
		if more > 0 {
			fmt.Fprintf(&b, "\n  - and %d more %s", more, plural(more, "field", "fields"))
		}
		return b.String()
	case it.moreObjects != 0:
		return fmt.Sprintf("and %d more %s", it.moreObjects, plural(it.moreObjects, "object", "objects"))
	default:
		return "warning: " + mdValue(it.warning)
	}
}

// markdown is a change as a list item's text: `field`: `from` → `to`,
// added `to`, removed `from`; a marker in italics; tags beside digests.
func (c Change) markdown() string {
	f := mdValue(c.Field) + ": "
	if s, ok := imageChange(c, inert.Code, " → "); ok {
		return f + s
	}
	from, to := mdSide(c.From, c.FromMarker), mdSide(c.To, c.ToMarker)
	switch {
	case c.From == "" && !c.FromMarker:
		return f + "added " + to
	case c.To == "" && !c.ToMarker:
		return f + "removed " + from
	default:
		return f + from + " → " + to
	}
}

// mdSide is a value in a code span, cut to maxValue bytes, or a marker in
// italics (in a code span too unless it is plain words: markers are
// fleetgen's words, but a Change is data).
func mdSide(s string, isMarker bool) string {
	if isMarker && plainWords(s) {
		return "_" + mdWords(s) + "_"
	}
	return mdValue(s)
}

// mdValue is s in a code span, cut to maxValue bytes with the cut said after
// the span.
func mdValue(s string) string {
	head, more := inert.Cut(s, maxValue)
	if more == 0 {
		return inert.Code(s)
	}
	return inert.Code(head) + fmt.Sprintf("… (%d more bytes)", more)
}

// plainWords matches a marker that Markdown and text write as it is.
var plainWords = regexp.MustCompile(`^[A-Za-z0-9(][A-Za-z0-9 ()._-]{0,80}$`).MatchString

// mdWords writes plain words (a marker) as Markdown text, every ASCII
// punctuation character backslash-escaped, so that they read as written.
func mdWords(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if c > ' ' && c < 0x7f && !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}

// mdFiles lists the files that differ in a collapsed block, at most
// maxFiles of them.
func (r Report) mdFiles() string {
	total := len(r.Files.Added) + len(r.Files.Removed) + len(r.Files.Changed)
	if total == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n<details><summary>Files (%d)</summary>\n\n", total)
	n := 0
	for _, f := range []struct {
		sign  string
		paths []string
	}{{"added", r.Files.Added}, {"removed", r.Files.Removed}, {"changed", r.Files.Changed}} {
		for _, p := range f.paths {
			if n == maxFiles {
				fmt.Fprintf(&b, "- and %d more\n", total-n)
				b.WriteString("\n</details>\n")
				return b.String()
			}
			n++
			fmt.Fprintf(&b, "- %s %s\n", f.sign, mdValue(p))
		}
	}
	b.WriteString("\n</details>\n")
	return b.String()
}
