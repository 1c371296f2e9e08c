package review

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// MarkdownMarker starts every Markdown report, so that a CI job finds its
// own pull request comment and edits it rather than adding one per push.
const MarkdownMarker = "<!-- fleetgen diff -->"

// Summary is the report in one line, e.g. "1 cluster added, 2 changed; 5
// files differ", or "no changes".
func (r Report) Summary() string {
	if r.Empty() {
		return "no changes"
	}
	n := map[string]int{}
	for _, c := range r.Clusters {
		n[c.Change]++
	}
	var parts []string
	for _, k := range []string{Added, Removed, Update} {
		if n[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s %s", n[k], plural(n[k], "cluster", "clusters"), k))
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

// WriteText writes the report for a terminal: the summary line, then each
// cluster with its changes and warnings, then the manager's changes.
func (r Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "fleetgen diff: %s\n", r.Summary())
	for _, c := range r.Clusters {
		fmt.Fprintf(&b, "\n%s: %s\n", c.Name, c.Change)
		for _, ch := range c.Changes {
			fmt.Fprintf(&b, "  %s\n", ch.text())
		}
		for _, wn := range c.Warnings {
			fmt.Fprintf(&b, "  warning: %s\n", wn)
		}
	}
	if len(r.Manager.Changes)+len(r.Manager.Warnings) > 0 {
		b.WriteString("\nmanager: changed\n")
		for _, ch := range r.Manager.Changes {
			fmt.Fprintf(&b, "  %s\n", ch.text())
		}
		for _, wn := range r.Manager.Warnings {
			fmt.Fprintf(&b, "  warning: %s\n", wn)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (c Change) text() string {
	switch {
	case c.From == "":
		return fmt.Sprintf("%s: + %s", c.Field, c.To)
	case c.To == "":
		return fmt.Sprintf("%s: - %s", c.Field, c.From)
	default:
		return fmt.Sprintf("%s: %s -> %s", c.Field, c.From, c.To)
	}
}

// WriteMarkdown writes the report as one pull request comment: a heading
// with the summary, the warnings, then a section per cluster with a table of
// its changes. It starts with MarkdownMarker.
func (r Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	b.WriteString(MarkdownMarker + "\n")
	fmt.Fprintf(&b, "### fleetgen diff: %s\n", mdEscape(r.Summary()))
	if ws := r.Warnings(); len(ws) > 0 {
		b.WriteString("\n> [!WARNING]\n")
		for _, wn := range ws {
			fmt.Fprintf(&b, "> - %s\n", mdEscape(wn))
		}
	}
	table := func(b *strings.Builder, changes []Change) {
		if len(changes) == 0 {
			return
		}
		b.WriteString("\n| field | from | to |\n| --- | --- | --- |\n")
		for _, ch := range changes {
			fmt.Fprintf(b, "| `%s` | %s | %s |\n", mdCode(ch.Field), mdCell(ch.From), mdCell(ch.To))
		}
	}
	// Sections go in while they fit a pull request comment; the rest is
	// counted (the json output has everything).
	var sections []string
	for _, c := range r.Clusters {
		var sb strings.Builder
		fmt.Fprintf(&sb, "\n#### `%s`: %s\n", mdCode(c.Name), c.Change)
		table(&sb, c.Changes)
		sections = append(sections, sb.String())
	}
	if len(r.Manager.Changes) > 0 {
		var sb strings.Builder
		sb.WriteString("\n#### manager\n")
		table(&sb, r.Manager.Changes)
		sections = append(sections, sb.String())
	}
	var files strings.Builder
	if !r.Empty() {
		files.WriteString("\n<details><summary>Files</summary>\n\n")
		for _, f := range []struct {
			sign  string
			paths []string
		}{{"added", r.Files.Added}, {"removed", r.Files.Removed}, {"changed", r.Files.Changed}} {
			for _, p := range f.paths {
				fmt.Fprintf(&files, "- %s `%s`\n", f.sign, mdCode(p))
			}
		}
		files.WriteString("\n</details>\n")
	}
	const reserve = 200 // the note on what was left out
	for i, sec := range sections {
		if b.Len()+len(sec)+reserve > MaxMarkdown {
			fmt.Fprintf(&b, "\n… %d more %s not shown: the comment would exceed %d characters (`fleetgen diff --output json` has the whole report).\n",
				len(sections)-i, plural(len(sections)-i, "section", "sections"), MaxMarkdown)
			_, err := io.WriteString(w, b.String())
			return err
		}
		b.WriteString(sec)
	}
	if b.Len()+files.Len() <= MaxMarkdown {
		b.WriteString(files.String())
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// MaxMarkdown bounds WriteMarkdown's output below GitHub's limit for a
// comment (65,536 characters).
const MaxMarkdown = 60000

func mdCell(s string) string {
	if s == "" {
		return ""
	}
	return "`" + mdCode(s) + "`"
}

// mdCode makes s safe inside a code span of a table cell.
func mdCode(s string) string {
	return strings.NewReplacer("`", "'", "|", "\\|", "\n", " ", "\r", " ").Replace(s)
}

// mdEscape keeps s from opening HTML or breaking a line in Markdown text.
func mdEscape(s string) string {
	return strings.NewReplacer("<", "&lt;", ">", "&gt;", "\n", " ", "\r", " ").Replace(s)
}

// WriteJSON writes the report as one JSON object (SPEC §7), indented.
func (r Report) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteGitHub writes GitHub Actions workflow commands: a ::warning for each
// warning and a ::notice for each added, removed or changed cluster (and the
// manager), so that they show on the pull request.
func (r Report) WriteGitHub(w io.Writer) error {
	var b strings.Builder
	for _, wn := range r.Warnings() {
		fmt.Fprintf(&b, "::warning title=fleetgen diff::%s\n", escapeData(wn))
	}
	for _, c := range r.Clusters {
		fields := make([]string, 0, len(c.Changes))
		for _, ch := range c.Changes {
			fields = append(fields, ch.Field)
		}
		fmt.Fprintf(&b, "::notice title=fleetgen diff::%s\n", escapeData(fmt.Sprintf("%s: %s (%s)", c.Name, c.Change, strings.Join(fields, ", "))))
	}
	if len(r.Manager.Changes) > 0 {
		fields := make([]string, 0, len(r.Manager.Changes))
		for _, ch := range r.Manager.Changes {
			fields = append(fields, ch.Field)
		}
		fmt.Fprintf(&b, "::notice title=fleetgen diff::%s\n", escapeData("manager: changed ("+strings.Join(fields, ", ")+")"))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// escapeData escapes a workflow command's message as the Actions toolkit
// does (@actions/core command.ts).
func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
