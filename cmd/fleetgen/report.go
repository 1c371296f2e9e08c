package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"syscall"

	"fleetgen.dev/fleetgen/internal/inert"
	"fleetgen.dev/fleetgen/pkg/problem"
)

// Formats of --output (validate) and --error-format (every command that loads
// fleet.yaml).
const (
	formatText   = "text"   // error: … on stderr, for people
	formatJSON   = "json"   // one JSON object per problem and line on stdout
	formatGitHub = "github" // GitHub Actions workflow commands on stdout
)

// Codes of errors that are not a problem.FieldError, in json and github output.
const (
	codeInvalidInput = "invalid-input" // input error without a position (a missing file, a broken lock)
	codeRuntime      = "runtime-error" // registry, Git, file system
)

// record is one line of --output json. The keys are fixed: 0 and "" mean
// unknown.
type record struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Field   string `json:"field"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// problems lists err as records: every problem.FieldError it holds,
// or err itself as one record without a position.
func problems(err error) []record {
	var es problem.Errors
	var fe *problem.FieldError
	switch {
	case errors.As(err, &es):
	case errors.As(err, &fe):
		es = problem.Errors{fe}
	default:
		code := codeRuntime
		if problem.IsInvalid(err) {
			code = codeInvalidInput
		}
		return []record{{Code: code, Message: err.Error()}}
	}
	out := make([]record, len(es))
	for i, e := range es {
		out[i] = record{File: e.File, Line: e.Line, Column: e.Column, Field: e.Path, Code: e.ErrorCode(), Message: e.Msg}
	}
	return out
}

// writeProblems prints err's problems on w in format json or github. Their
// messages may quote the input: inert writes them (ASCII JSON, escaped
// workflow commands).
func writeProblems(w io.Writer, format string, err error) error {
	var b strings.Builder
	for _, p := range problems(err) {
		switch format {
		case formatJSON:
			line, err := inert.JSON(p, "")
			if err != nil {
				return err
			}
			b.Write(line)
		case formatGitHub:
			b.WriteString(githubError(p))
		}
	}
	_, werr := io.WriteString(w, b.String())
	return werr
}

// githubError formats p as a GitHub Actions workflow command, so that the
// problem shows up on the pull request's line:
// ::error file=F,line=L,col=C,title=CODE::FIELD: MESSAGE
func githubError(p record) string {
	var props []inert.Prop
	if p.File != "" {
		props = append(props, inert.Prop{Key: "file", Value: p.File})
		if p.Line > 0 {
			props = append(props, inert.Prop{Key: "line", Value: strconv.Itoa(p.Line)})
			if p.Column > 0 {
				props = append(props, inert.Prop{Key: "col", Value: strconv.Itoa(p.Column)})
			}
		}
	}
	props = append(props, inert.Prop{Key: "title", Value: p.Code})
	msg := p.Message
	if p.Field != "" {
		msg = p.Field + ": " + msg
	}
	return inert.Command("error", props, msg)
}

// report prints err and returns its exit code. This is the only place that
// turns errors into exit codes. Usage errors are always text (the format flag
// may be what is wrong); in json and github format every other error goes to
// stdout in that format, with a one-line count on stderr.
func report(stdout, stderr io.Writer, format, cmdPath string, err error) int {
	var re *runError
	code := exitFailure
	switch {
	case errors.Is(err, errDrift):
		// An answer, not a failure: diff's exit 3 is what a pull request
		// expects, and render --check printed the diff already.
		fmt.Fprintf(stderr, "%s: %s\n", cmdPath, err)
		return exitDrift
	case !errors.As(err, &re):
		// cobra's own errors (unknown command or flag, missing -o, bad value)
		// and ours (usageError).
		code = exitInvalid
		fmt.Fprintf(stderr, "error: %s\nRun '%s --help' for usage.\n", inert.ProseLines(err.Error()), cmdPath)
		return code
	case runtimeFailure(err):
		// Not the input's fault, even inside an input error.
	case problem.IsInvalid(err):
		code = exitInvalid
	}
	if format == formatJSON || format == formatGitHub {
		if werr := writeProblems(stdout, format, err); werr == nil {
			n := len(problems(err))
			fmt.Fprintf(stderr, "error: %d %s (on stdout as %s)\n", n, plural(n, "problem", "problems"), format)
			return code
		}
	}
	// Messages may quote the input: each problem is one escaped line, and
	// an error's own line breaks (a list it makes) are kept, every line
	// escaped (inert), so no line starts a workflow command.
	var es problem.Errors
	if errors.As(err, &es) && es.Error() == err.Error() && len(es) > 1 {
		fmt.Fprintf(stderr, "error: %d problems:\n", len(es))
		for _, e := range es {
			fmt.Fprintf(stderr, "  %s\n", inert.Prose(e.Error()))
		}
	} else {
		fmt.Fprintf(stderr, "error: %s\n", inert.ProseLines(err.Error()))
	}
	return code
}

// runtimeFailure reports whether err holds a failure of the machine rather
// than of the input: the command was cancelled (a signal), or the system
// failed an operation (I/O error, disk full, read-only file system, out of
// memory or descriptors). Such an error is exit 1 even when a step wrapped it
// as an input error.
func runtimeFailure(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	for _, e := range []syscall.Errno{syscall.EIO, syscall.ENOSPC, syscall.EROFS, syscall.ENOMEM, syscall.EMFILE, syscall.ENFILE, syscall.EDQUOT} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
