package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"fleetgen.dev/fleetgen/internal/inert"
)

// One convention for every command (docs/cli.md, "Flags"):
//
//   - -o/--output-dir DIR is the output folder (render, diff, publish, build);
//   - --output FORMAT is the format of what the command reports (validate,
//     images, targets, diff, render --check, explain, version);
//   - --error-format FORMAT is how input problems print, on every command
//     that reads fleet.yaml (on validate, whose report is the problems, it
//     is --output).
//
// The spellings of the release before, -o FORMAT and --dir DIR, are hidden
// aliases for one release: they still work and warn on stderr.

// deprecatedAnnotation marks a hidden alias flag; its value is the warning,
// with %s for what was given.
const deprecatedAnnotation = "fleetgen/deprecated"

// addOutputDir declares -o/--output-dir, the output folder (checkOutFlag
// requires it), and the hidden alias --dir.
func addOutputDir(cmd *cobra.Command, out *string) {
	cmd.Flags().StringVarP(out, "output-dir", "o", "", "output folder of the rendered tree (required)")
	_ = cmd.MarkFlagDirname("output-dir")
	alias(cmd, out, "dir", "", "--dir %s: --dir is now -o/--output-dir (the output folder, as in every command); --dir goes in the next release")
}

// addFormat declares --output, the format of the command's report, with
// its values for completion.
func addFormat(cmd *cobra.Command, format *string, usage string, valid ...string) {
	cmd.Flags().StringVar(format, "output", valid[0], usage)
	_ = cmd.RegisterFlagCompletionFunc("output", completeValues(valid...))
}

// aliasShortFormat keeps -o FORMAT, the report format's spelling of the
// release before on a command without an output folder, for one release.
func aliasShortFormat(cmd *cobra.Command, format *string) {
	alias(cmd, format, "o-format", "o", "-o %s: -o is the output folder (-o/--output-dir) in every command; write --output for the format (-o for the format goes in the next release)")
}

// alias declares name (and shorthand) as a hidden flag that sets p, as the
// flag it stands for does; warnDeprecated prints msg when it is used.
func alias(cmd *cobra.Command, p *string, name, shorthand, msg string) {
	cmd.Flags().StringVarP(p, name, shorthand, *p, "")
	f := cmd.Flags().Lookup(name)
	f.Hidden = true
	f.Annotations = map[string][]string{deprecatedAnnotation: {msg}}
}

// warnDeprecated prints a warning on stderr for each hidden alias cmd was
// given: stdout holds the report and stays as it was.
func warnDeprecated(cmd *cobra.Command, stderr io.Writer) {
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if msg, ok := f.Annotations[deprecatedAnnotation]; ok {
			fmt.Fprintf(stderr, "warning: %s: %s\n", cmd.CommandPath(), fmt.Sprintf(msg[0], inert.Text(f.Value.String())))
		}
	})
}

// checkFormat refuses a --output value not in valid.
func checkFormat(cmd *cobra.Command, format string, valid ...string) error {
	for _, v := range valid {
		if v == format {
			return nil
		}
	}
	hint := ""
	if strings.ContainsAny(format, "/.") && cmd.Flags().Lookup("output-dir") != nil {
		hint = " (the output folder is -o/--output-dir)"
	}
	return usagef("%s: --output %q: want %s%s", cmd.CommandPath(), format, strings.Join(valid, ", "), hint)
}
