package testenv

import (
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
