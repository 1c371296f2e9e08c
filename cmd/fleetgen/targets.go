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

func newTargets(g *globals, stdout io.Writer) *cobra.Command {
	in := new(input)
	var o struct {
		format   string
		clusters []string
	}
	cmd := &cobra.Command{
		Use:   "targets [PATH]",
		Short: "Explain which layers and deliveries reach each cluster",
		Long: `Targets explains delivery: for every cluster of fleet.yaml, in input order,
each layer selected for it and each delivery (Fleet GitRepo) that reaches it,
with the selector or the target that selected it, matched exactly as Fleet's
controller matches (within a target every criterion must hold, a target with
no criterion selects nothing, the first target that matches wins, only
clusters registered with Fleet: modes agent, manager and capi); then every
delivery target and every layer selector that reaches no cluster, and why
(with the label values that do exist). --cluster limits the clusters listed.

It explains a fleet that validate refuses too (a delivery that selects no
cluster is what targets is for), then exits 2 with validate's problems. It
writes nothing.`,
		Example: example(
			"fleetgen targets",
			"fleetgen targets --cluster edge-1",
			"fleetgen targets --output json | jq -r '.clusters[] | select(.deliveries == []) | .name'",
			"fleetgen targets --output json | jq '.unmatched, .unmatchedLayers'",
		),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(cmd, o.format, formatText, formatJSON); err != nil {
				return err
			}
			cfg, err := g.configFor(cmd, in, args)
			if err != nil {
				return err
			}
			r, err := pipeline.Targets(cmd.Context(), cfg, pipeline.TargetsOptions{Clusters: o.clusters})
			if r != nil {
				if werr := writeTargets(stdout, r, o.format); werr != nil {
					return wrap(werr)
				}
			}
			return wrap(err)
		},
	}
	in.add(g, cmd, 0)
	addFormat(cmd, &o.format, "text (a table) or json ({clusters, unmatched, unmatchedLayers})", formatText, formatJSON)
	aliasShortFormat(cmd, &o.format)
	addClusters(cmd, &o.clusters, "list only this cluster (repeatable)")
	return cmd
}

// addClusters adds --cluster NAME (repeatable, SPEC §2).
func addClusters(cmd *cobra.Command, clusters *[]string, usage string) {
	cmd.Flags().StringArrayVar(clusters, "cluster", nil, usage)
}

// writeTargets prints r: format "json" is the object of SPEC §2, one line;
// "text" a table, a row per layer and delivery that reaches a cluster with
// the selector or target (and its criteria) that selected it, then the
// targets and layer selectors that reach no cluster and why. The names come
// from fleet.yaml, which may not be valid (targets explains a fleet validate
// refuses): every one is written inert.
func writeTargets(w io.Writer, r *pipeline.Reach, format string) error {
	if format == formatJSON {
		b, err := inert.JSON(r, "")
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	deliveries := 0 // that reach any cluster
	for _, c := range r.Clusters {
		deliveries += len(c.Deliveries)
	}
	t := inert.Text
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tMODE\tREACHED BY\tSELECTED BY")
	for _, c := range r.Clusters {
		name, mode := t(c.Name), t(c.Mode)
		row := func(what, why string) {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, mode, what, why)
			name, mode = "", ""
		}
		for i, l := range c.Layers {
			row("layer "+t(l), t(c.LayerWhy[i]))
		}
		for _, d := range c.Deliveries {
			row("delivery "+t(d.Name), "target "+t(d.Target)+": "+t(d.Why))
		}
		if !c.Fleet && deliveries > 0 {
			row("(no delivery)", "mode "+t(c.Mode)+" is not registered with Fleet")
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
			fmt.Fprintf(&b, "delivery %s, target %s: %s\n", t(u.Delivery), t(u.Target), t(u.Why))
		}
	}
	if len(r.UnmatchedLayers) > 0 {
		b.WriteString("\nLAYERS THAT SELECT NO CLUSTER\n")
		for _, u := range r.UnmatchedLayers {
			fmt.Fprintf(&b, "layer %s: %s\n", t(u.Layer), t(u.Why))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
