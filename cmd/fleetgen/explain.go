package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"fleetgen.dev/fleetgen/pkg/pipeline"
)

func newExplain(stdout io.Writer) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "explain FIELD",
		Short: "Say what a fleet.yaml field means, its type, default, valid values and an example",
		Long: `Explain prints what one field of fleet.yaml means: its description, type,
default, valid values and an example in place, and for an object its fields,
as kubectl explain does for Kubernetes objects. It reads the same schema
'fleetgen schema' prints. FIELD is a field path as validate names it; list
indexes are optional (spec.clusters.name, spec.clusters[].name and
spec.clusters[0].name are one field). 'fleetgen explain spec' lists the
fields of spec; 'fleetgen explain fleet' those of the document. An unknown
field is exit 2, with the closest field.`,
		Example: example(
			"fleetgen explain spec.clusters.registration.mode",
			"fleetgen explain spec                          # the fields of spec",
			"fleetgen explain spec.verify --output json | jq -r .example",
		),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("%s: want one field path, e.g. spec.clusters.registration.mode (fleetgen explain fleet lists the top-level fields)", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(cmd, format, formatText, formatJSON); err != nil {
				return err
			}
			f, err := pipeline.Explain(args[0])
			if err != nil {
				return wrap(err)
			}
			if format == formatJSON {
				b, err := json.MarshalIndent(f, "", "  ")
				if err != nil {
					return wrap(err)
				}
				_, err = stdout.Write(append(b, '\n'))
				return wrap(err)
			}
			_, err = io.WriteString(stdout, explainText(f))
			return wrap(err)
		},
	}
	addFormat(cmd, &format, "text or json (the field as an object)", formatText, formatJSON)
	return cmd
}

// explainText is explain's report in the layout of kubectl explain. Every
// string in it is fleetgen's own (the schema), never the input's.
func explainText(f *pipeline.Field) string {
	var b strings.Builder
	name := f.Path
	if name == "" {
		name = "fleet.yaml"
	}
	fmt.Fprintf(&b, "FIELD: %s <%s>", name, f.Type)
	if f.Required {
		b.WriteString(" -required-")
	}
	b.WriteString("\n\nDESCRIPTION:\n")
	b.WriteString(wrapText(f.Description, "    ", 80))
	if f.HasDefault {
		d, _ := json.Marshal(f.Default)
		fmt.Fprintf(&b, "\nDEFAULT: %s\n", d)
	}
	if len(f.Enum) > 0 {
		fmt.Fprintf(&b, "\nVALID VALUES: %s\n", strings.Join(f.Enum, ", "))
	} else if f.Pattern != "" {
		fmt.Fprintf(&b, "\nVALID VALUES: matching %s\n", f.Pattern)
	}
	if f.Example != "" {
		b.WriteString("\nEXAMPLE:\n")
		for _, l := range strings.SplitAfter(strings.TrimSuffix(f.Example, "\n"), "\n") {
			b.WriteString("    " + l)
		}
		b.WriteString("\n")
	}
	if len(f.Fields) > 0 {
		b.WriteString("\nFIELDS:\n")
		for _, c := range f.Fields {
			fmt.Fprintf(&b, "  %s\t<%s>", c.Name, c.Type)
			if c.Required {
				b.WriteString(" -required-")
			}
			b.WriteString("\n")
			b.WriteString(wrapText(c.Description, "    ", 80))
			b.WriteString("\n")
		}
	}
	return b.String()
}

// wrapText breaks s into lines of at most width columns (a longer word
// stands alone), each starting with indent.
func wrapText(s, indent string, width int) string {
	var b strings.Builder
	line := indent
	for _, w := range strings.Fields(s) {
		if line != indent && len(line)+1+len(w) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if line != indent {
			line += " "
		}
		line += w
	}
	if line != indent {
		b.WriteString(line + "\n")
	}
	return b.String()
}
