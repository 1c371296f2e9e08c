package main

import (
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"fleetgen.dev/fleetgen/internal/inert"
	"fleetgen.dev/fleetgen/pkg/pipeline"
	"fleetgen.dev/fleetgen/pkg/review"
)

// formatMarkdown is diff's pull request comment format.
const formatMarkdown = "markdown"

func newDiff(g *globals, stdout io.Writer) *cobra.Command {
	in := new(input)
	var o struct {
		out      string
		format   string
		clusters []string
	}
	cmd := &cobra.Command{
		Use:   "diff [PATH] -o DIR",
		Short: "Say what a change does to each cluster, compared with DIR",
		Long: `Diff renders in memory, as render --check does, and compares the result with
DIR: a previous render, or a checkout of the published tree (give the folder
at spec.source.path). Per cluster it reports added, removed or changed, and for
a changed one each field that moved: labels, registration (mode, clientID,
token TTL, kubeconfig or CA changed, never their values), layers and images
(old → new digest); groups and the Verrazzano admin ConfigMap under manager.
When DIR holds the layer folders (a checkout of the published tree), each
cluster also lists the objects it receives that the change adds, removes or
changes, and for a changed object each field that moved, as a JSON path with
old → new (spec.replicas: 3 → 5); a Secret shows only which keys changed.
It warns where a person must act: a changed clientID or mode, a removed
cluster, a changed kubeconfig. Unchanged clusters are left out; a client ID
that render would generate reads "(generated at render)". --cluster NAME
(repeatable) limits the report and the file diff to those clusters.

Outputs: text (the report, then the file diff with Secret contents elided),
markdown (one pull request comment, starting with "<!-- fleetgen diff -->"),
json and github (a ::warning per warning, a ::notice per changed cluster, then
the file diff). Diff writes nothing. Exit 0 when DIR is what render would
write, 3 when not.`,
		Example: example(
			"fleetgen diff -o out",
			"fleetgen diff -o published --output markdown > comment.md",
			"fleetgen diff -o out --output json | jq '.clusters[].name'",
			"fleetgen diff -o published --cluster edge-1",
		),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutFlag(cmd, o.out, false); err != nil {
				return err
			}
			if err := checkFormat(cmd, o.format, formatText, formatMarkdown, formatJSON, formatGitHub); err != nil {
				return err
			}
			cfg, err := g.configFor(cmd, in, args)
			if err != nil {
				return err
			}
			rep, diff, err := pipeline.Diff(cmd.Context(), cfg, pipeline.RenderOptions{OutDir: o.out, Clusters: o.clusters})
			if err != nil {
				return wrap(err)
			}
			return writeDiff(stdout, rep, diff, o.format)
		},
	}
	in.add(g, cmd, withPlaintext|withLocked|withRebalance)
	addOutputDir(cmd, &o.out)
	addFormat(cmd, &o.format, "report format: text, markdown, json or github", formatText, formatMarkdown, formatJSON, formatGitHub)
	addClusters(cmd, &o.clusters, "report only this cluster (repeatable); the manager's name adds its shared changes")
	return cmd
}

// writeDiff prints a diff's report in format, and for text and github the
// file diff after it (review.Report.Write); errChanged when anything
// differs.
func writeDiff(w io.Writer, rep review.Report, diff, format string) error {
	var b strings.Builder
	if err := rep.Write(&b, format, diff); err != nil {
		return wrap(err)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return wrap(err)
	}
	if diff != "" || !rep.Empty() {
		return errChanged
	}
	return nil
}

// errChanged is diff's exit 3: DIR is not what render would write.
var errChanged error = changedError{}

type changedError struct{}

func (changedError) Error() string {
	return "the render differs from DIR (the report is on stdout)"
}

// Is makes errChanged an errDrift (exit 3).
func (changedError) Is(target error) bool { return target == errDrift }

// outputFormats are values of -o that mean a format, not a folder.
var outputFormats = []string{"json", "yaml", "yml", "text", "txt", "markdown", "md", "github", "wide", "name"}

// checkOutFlag requires -o, and refuses -o VALUE that names a format (-o is the output
// folder here), and -o - where the command does not stream.
func checkOutFlag(cmd *cobra.Command, out string, stream bool) error {
	if out == "" {
		return usagef("%s: required flag -o DIR (the output folder) not set", cmd.CommandPath())
	}
	if slices.Contains(outputFormats, strings.ToLower(out)) {
		hint := "did you mean --output " + out + "?"
		if cmd.Flags().Lookup("output") == nil {
			hint = "this command prints no other format"
		}
		return usagef("%s: -o %s: -o is the output folder (-o/--output-dir), not a format (%s); give -o ./%s for a folder of that name", cmd.CommandPath(), out, hint, out)
	}
	if out == "-" && !stream {
		return usagef("%s: -o -: only render streams to stdout; give the output folder", cmd.CommandPath())
	}
	return nil
}

// writeImages prints `images`: text is one image per line, with why followed
// by a tab and who needs it; json the array of pipeline.Image. The strings
// come from fleet.yaml, the layers and the lock: written inert.
func writeImages(w io.Writer, imgs []pipeline.Image, format string, why bool) error {
	if format == formatJSON {
		b, err := inert.JSON(imgs, "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	var b strings.Builder
	for _, img := range imgs {
		b.WriteString(inert.Text(img.Ref))
		if why {
			b.WriteString("\t" + inert.Text(strings.Join(img.NeededBy, ", ")))
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
