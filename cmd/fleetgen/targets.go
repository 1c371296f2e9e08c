package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"fleetgen.dev/fleetgen/pkg/pipeline"
)

func newTargets(g *globals, stdout io.Writer) *cobra.Command {
	in := new(input)
	var format string
	cmd := &cobra.Command{
		Use:   "targets [PATH]",
		Short: "Explain which layers and deliveries reach each cluster",
		Long: `Targets explains delivery: for every cluster of fleet.yaml, in input order,
each layer selected for it and each delivery (Fleet GitRepo) that reaches it,
with the selector or the target that selected it, matched exactly as Fleet's
controller matches (within a target every criterion must hold, a target with
no criterion selects nothing, the first target that matches wins, only
clusters registered with Fleet: modes agent, manager and capi); then every
delivery target that reaches no cluster, and why. It reads fleet.yaml only
and writes nothing.`,
		Example: example(
			"fleetgen targets",
			"fleetgen targets --output json | jq -r '.clusters[] | select(.deliveries == []) | .name'",
			"fleetgen targets --output json | jq '.unmatched'",
		),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(cmd, format, formatText, formatJSON); err != nil {
				return err
			}
			cfg, err := g.configFor(cmd, in, args)
			if err != nil {
				return err
			}
			r, err := pipeline.Targets(cmd.Context(), cfg)
			if err != nil {
				return wrap(err)
			}
			return wrap(writeTargets(stdout, r, format))
		},
	}
	in.add(g, cmd, 0)
	addFormat(cmd, &format, "text (a table) or json ({clusters, unmatched})", formatText, formatJSON)
	aliasShortFormat(cmd, &format)
	return cmd
}

// writeTargets prints r: format "json" is the object of SPEC §2, one line;
// "text" a table, a row per layer and delivery that reaches a cluster with
// the selector or target (and its criteria) that selected it, then the
// targets that reach no cluster and why. Every name printed is one
// validate checked (DNS labels, label keys and values), so nothing in it is
// more than text.
func writeTargets(w io.Writer, r *pipeline.Reach, format string) error {
	if format == formatJSON {
		return json.NewEncoder(w).Encode(r)
	}
	deliveries := 0 // that reach any cluster
	for _, c := range r.Clusters {
		deliveries += len(c.Deliveries)
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tMODE\tREACHED BY\tSELECTED BY")
	for _, c := range r.Clusters {
		name, mode := c.Name, c.Mode
		row := func(what, why string) {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, mode, what, why)
			name, mode = "", ""
		}
		for i, l := range c.Layers {
			row("layer "+l, c.LayerWhy[i])
		}
		for _, d := range c.Deliveries {
			row("delivery "+d.Name, "target "+d.Target+": "+d.Why)
		}
		if !c.Fleet && deliveries > 0 {
			row("(no delivery)", "mode "+c.Mode+" is not registered with Fleet")
		}
		if name != "" {
			row("(nothing)", "")
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Unmatched) > 0 {
		b.WriteString("\nTARGETS THAT REACH NO CLUSTER\n")
		for _, u := range r.Unmatched {
			fmt.Fprintf(&b, "delivery %s, target %s: %s\n", u.Delivery, u.Target, u.Why)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
