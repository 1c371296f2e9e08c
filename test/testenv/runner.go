package testenv

import (
	"fmt"
	"strings"
	"unicode"
)

// WorkflowCommand is one command a GitHub Actions runner would run from a
// step's output.
type WorkflowCommand struct {
	Line int    // 1-based
	Name string // as written (the runner compares names without case)
	Data string // the message, not unescaped
}

// WorkflowCommands returns the commands a GitHub Actions runner would run
// from out, a step's stdout or stderr, modelled on actions/runner
// (src/Runner.Common/ActionCommand.cs, Runner.Worker/ActionCommandManager.cs):
// the runner reads lines split at LF, CR or CRLF; a line is a command when,
// after leading white space, it starts with "::name …::data" (V2), or when it
// holds "##[name …]data" anywhere (the legacy form, tried when V2 fails).
// Every name counts, registered or not, so the model errs on the side of
// finding a command. "::stop-commands::TOKEN" pauses processing until a line
// whose command is TOKEN (either form, any case); the pair is returned, the
// lines between are not.
func WorkflowCommands(out string) []WorkflowCommand {
	var cmds []WorkflowCommand
	stop := ""
	lines := strings.FieldsFunc(strings.ReplaceAll(out, "\r\n", "\n"), func(r rune) bool { return r == '\n' || r == '\r' })
	for i, line := range lines {
		name, data, ok := parseV2(line)
		if !ok {
			name, data, ok = parseV1(line)
		}
		if !ok {
			continue
		}
		c := WorkflowCommand{Line: i + 1, Name: name, Data: data}
		switch {
		case stop != "":
			if strings.EqualFold(name, stop) {
				cmds = append(cmds, c)
				stop = ""
			}
		case strings.EqualFold(name, "stop-commands"):
			cmds = append(cmds, c)
			stop = data
		default:
			cmds = append(cmds, c)
		}
	}
	return cmds
}

func parseV2(line string) (name, data string, ok bool) {
	s := strings.TrimLeftFunc(line, unicode.IsSpace)
	if !strings.HasPrefix(s, "::") {
		return "", "", false
	}
	end := strings.Index(s[2:], "::")
	if end < 0 {
		return "", "", false
	}
	info := s[2 : 2+end]
	name, _, _ = strings.Cut(info, " ")
	if name == "" {
		return "", "", false
	}
	return name, s[2+end+2:], true
}

func parseV1(line string) (name, data string, ok bool) {
	i := strings.Index(line, "##[")
	if i < 0 {
		return "", "", false
	}
	rb := strings.IndexByte(line[i:], ']')
	if rb < 0 {
		return "", "", false
	}
	info := line[i+3 : i+rb]
	name, _, _ = strings.Cut(info, " ")
	if name == "" {
		return "", "", false
	}
	return name, line[i+rb+1:], true
}

// ReportProblems returns what breaks the guarantees of a report (SPEC §7)
// in out, a stdout or stderr fleetgen printed in format (text, github,
// markdown or json): a workflow command a runner would run other than
// fleetgen's own (a ::stop-commands:: pair that is resumed, and in github
// format ::warning, ::notice and ::error); a control character other than
// LF (ESC, CR…) or a non-ASCII rune other than fleetgen's … and → (so
// nothing bidirectional or invisible); a line after the first that starts
// with "fleetgen diff:"; in markdown, more than 60,000 characters, or a '<'
// (but fleetgen's own tags), '@' or "](" outside code spans.
func ReportProblems(format, out string) []string {
	var probs []string
	cmds := WorkflowCommands(out)
	for i, c := range cmds {
		name := strings.ToLower(c.Name)
		switch {
		case name == "stop-commands":
			if i+1 >= len(cmds) || !strings.EqualFold(cmds[i+1].Name, c.Data) {
				probs = append(probs, "::stop-commands:: is never resumed")
			}
		case i > 0 && strings.EqualFold(cmds[i-1].Name, "stop-commands") && strings.EqualFold(name, cmds[i-1].Data):
		case format == "github" && (name == "warning" || name == "notice" || name == "error"):
		default:
			probs = append(probs, fmt.Sprintf("line %d runs workflow command %q (%.80q)", c.Line, c.Name, c.Data))
		}
	}
	for _, r := range out {
		if (r < 0x20 && r != '\n') || r == 0x7f || (r >= 0x80 && r != '…' && r != '→') {
			probs = append(probs, fmt.Sprintf("holds %U raw", r))
			break
		}
	}
	for i, line := range strings.Split(out, "\n") {
		if i > 0 && strings.HasPrefix(line, "fleetgen diff:") {
			probs = append(probs, fmt.Sprintf("line %d forges the summary: %q", i+1, line))
		}
	}
	if format == "markdown" {
		if len(out) > 60000 {
			probs = append(probs, fmt.Sprintf("%d characters, want at most 60,000", len(out)))
		}
		rest := OutsideCode(out)
		for _, tag := range []string{"<!-- fleetgen diff -->", "<details>", "</details>", "<summary>", "</summary>"} {
			rest = strings.ReplaceAll(rest, tag, "")
		}
		for _, s := range []string{"<", "@", "]("} {
			if strings.Contains(rest, s) {
				probs = append(probs, fmt.Sprintf("%q outside code spans", s))
			}
		}
	}
	return probs
}

// OutsideCode returns md without its code spans (CommonMark: a run of n
// backticks up to the next run of exactly n), which is where Markdown
// renders links, images, HTML and mentions.
func OutsideCode(md string) string {
	var b strings.Builder
	for i := 0; i < len(md); {
		if md[i] != '`' {
			b.WriteByte(md[i])
			i++
			continue
		}
		n := run(md[i:], '`')
		end := -1
		for j := i + n; j < len(md); {
			if md[j] != '`' {
				j++
				continue
			}
			m := run(md[j:], '`')
			if m == n {
				end = j + m
				break
			}
			j += m
		}
		if end < 0 {
			b.WriteString(md[i : i+n])
			i += n
			continue
		}
		i = end
	}
	return b.String()
}

func run(s string, c byte) int {
	n := 0
	for n < len(s) && s[n] == c {
		n++
	}
	return n
}
