package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"fleetgen.dev/fleetgen/pkg/problem"
)

// warning is one line of validate's --output json for a warning: a problem
// with "severity": "warning" (errors have no severity key).
type warning struct {
	record
	Severity string `json:"severity"`
}

// writeWarnings prints what validate accepts but is likely a mistake, in
// format: text on stderr ("warning: file:line:col: field: message"), json
// and github on stdout (a JSON line with severity warning; a ::warning
// workflow command). Warnings never change the exit code.
func writeWarnings(stdout, stderr io.Writer, format string, ws problem.Errors) {
	var b strings.Builder
	for _, w := range ws {
		p := record{File: w.File, Line: w.Line, Column: w.Column, Field: w.Path, Code: w.ErrorCode(), Message: w.Msg}
		switch format {
		case formatJSON:
			line, err := json.Marshal(warning{record: p, Severity: "warning"})
			if err != nil {
				continue
			}
			b.Write(line)
			b.WriteByte('\n')
		case formatGitHub:
			b.WriteString(strings.Replace(githubError(p), "::error ", "::warning ", 1))
		default:
			fmt.Fprintf(&b, "warning: %s\n", w.Error())
		}
	}
	out := stderr
	if format == formatJSON || format == formatGitHub {
		out = stdout
	}
	_, _ = io.WriteString(out, b.String())
}
