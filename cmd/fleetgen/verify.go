package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"fleetgen.dev/fleetgen/internal/inert"
	"fleetgen.dev/fleetgen/pkg/pipeline"
)

func newVerify(g *globals, stdout io.Writer) *cobra.Command {
	in := new(input)
	var (
		o      pipeline.VerifyOptions
		at     string
		format string
	)
	cmd := &cobra.Command{
		Use:   "verify [PATH]",
		Short: "Check the signatures of every image a spec.verify policy covers, copying nothing",
		Long: `Verify checks, in place, the signature of every image a spec.verify policy
covers, as 'cosign verify' or 'notation verify' would, offline (no Rekor, TUF,
OCSP or CRL request):

  --at source  (default) at each image's source registry (or its
               spec.sourceMirrors mirror), the tag resolved to its digest:
               what 'fleetgen mirror' checks before it copies;
  --at mirror  at spec.registry, the signature fleet.lock.yaml names for each
               image: what 'fleetgen publish' checks before it pushes.

It prints one line per covered image (ok, or the reason it was refused) and
exits 0 when every one verifies, 1 when one does not (or its registry fails).
It writes nothing.`,
		Example: example(
			"fleetgen verify",
			"fleetgen verify --at mirror",
			"fleetgen verify -o json | jq -r '.[] | select(.reason) | .image'",
		),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(cmd, format, formatText, formatJSON); err != nil {
				return err
			}
			switch pipeline.VerifyAt(at) {
			case pipeline.AtSource, pipeline.AtMirror:
				o.At = pipeline.VerifyAt(at)
			default:
				return usagef("invalid --at %q: want source or mirror", at)
			}
			cfg, err := g.configFor(cmd, in, args)
			if err != nil {
				return err
			}
			vs, err := pipeline.Verify(cmd.Context(), cfg, o)
			if vs != nil || err == nil {
				if werr := writeVerdicts(stdout, vs, format); werr != nil {
					return wrap(werr)
				}
			}
			return wrap(err)
		},
	}
	in.add(g, cmd, 0)
	cmd.Flags().StringVar(&at, "at", string(pipeline.AtSource), "where the signatures are read: source (what mirror checks) or mirror (what publish checks)")
	cmd.Flags().IntVar(&o.Jobs, "jobs", 0, "images checked at once (0: default)")
	cmd.Flags().StringVarP(&format, "output", "o", formatText, "text (a line per image) or json (an array of {image, at, policy, signature, reason, detail})")
	_ = cmd.RegisterFlagCompletionFunc("at", completeValues(string(pipeline.AtSource), string(pipeline.AtMirror)))
	_ = cmd.RegisterFlagCompletionFunc("output", completeValues(formatText, formatJSON))
	return cmd
}

// writeVerdicts prints signature verdicts: format "json" an array (never
// null), "text" a table of status, image, policy and signature or reason.
// Images, places and details come from layers, the lock and registries:
// inert.
func writeVerdicts(w io.Writer, vs []pipeline.Verdict, format string) error {
	if format == formatJSON {
		if vs == nil {
			vs = []pipeline.Verdict{}
		}
		b, err := inert.JSON(vs, "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	var b strings.Builder
	if len(vs) == 0 {
		b.WriteString("no image is covered by a spec.verify policy\n")
	}
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, v := range vs {
		if v.Reason == "" {
			fmt.Fprintf(tw, "ok\t%s\t%s\tsignature %s\n", inert.Text(v.Image), v.Policy, inert.Text(v.Signature))
			continue
		}
		fmt.Fprintf(tw, "REFUSED\t%s\t%s\t%s: %s\n", inert.Text(v.Image), v.Policy, inert.Text(v.Reason), inert.Prose(v.Detail))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}
