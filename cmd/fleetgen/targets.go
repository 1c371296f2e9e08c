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
	var format string
	cmd := &cobra.Command{
		Use:   "targets [PATH]",
		Short: "Explain which layers, deliveries, managers and Applications reach each cluster",
		Long: `Targets explains delivery: for every cluster of fleet.yaml, in input order,
each layer selected for it and each delivery (Fleet GitRepo) that reaches it,
with the selector or the target that selected it, matched exactly as Fleet's
controller matches (within a target every criterion must hold, a target with
no criterion selects nothing, the first target that matches wins, only
clusters registered with Fleet: modes agent, manager and capi); each manager
that registers it (Fleet or Verrazzano by its mode; Argo CD, KubeFleet,
Sveltos and OCM by their selectors); and the Argo CD Applications that each
ApplicationSet the Argo CD cluster receives would create on it, as Argo CD's
cluster and list generators make them (other generators are named, not
evaluated). Then every delivery target that reaches no cluster, and why, and
every ApplicationSet previewed. It reads fleet.yaml and the layers of the
cluster that runs Argo CD, and writes nothing.`,
		Example: example(
			"fleetgen targets",
			"fleetgen targets -o json | jq -r '.clusters[] | select(.deliveries == []) | .name'",
			"fleetgen targets -o json | jq '.unmatched'",
			"fleetgen targets -o json | jq -r '.clusters[] | .name as $c | .applications[] | \"\\($c) \\(.name)\"'",
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
	cmd.Flags().StringVarP(&format, "output", "o", formatText, "text (a table) or json ({clusters, unmatched, applicationSets})")
	_ = cmd.RegisterFlagCompletionFunc("output", completeValues(formatText, formatJSON))
	return cmd
}

// writeTargets prints r: format "json" is the object of SPEC §2, one line;
// "text" a table, a row per layer, delivery, manager and Application that
// reaches a cluster with the selector, target, mode or ApplicationSet that
// selected it, then the targets that reach no cluster and why, and the
// ApplicationSets previewed. Names of fleet.yaml are ones validate checked
// (DNS labels, label keys and values); what an ApplicationSet's template
// makes comes from a layer, and is quoted inert.
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
		for _, m := range c.Managers {
			row("manager "+m.Manager+" on "+m.Host, m.Why)
		}
		for _, a := range c.Applications {
			row("application "+inert.Quote(a.Name), "ApplicationSet "+inert.Quote(a.ApplicationSet))
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
	if len(r.EmptyManagers) > 0 {
		b.WriteString("\nMANAGERS THAT REGISTER NO CLUSTER\n")
		for _, m := range r.EmptyManagers {
			fmt.Fprintf(&b, "%s: %s\n", m.Manager, m.Why)
		}
	}
	for i, p := range r.ApplicationSets {
		if i == 0 {
			b.WriteString("\nAPPLICATIONSETS (on cluster " + p.Cluster + ")\n")
		}
		fmt.Fprintf(&b, "%s (layer %s, %s): %d Application(s)\n", inert.Quote(p.Ref()), p.Layer, inert.Quote(p.Origin), len(p.Applications))
		for _, n := range p.NotEvaluated {
			fmt.Fprintf(&b, "  not evaluated: %s\n", inert.Prose(n))
		}
		for _, e := range p.Errors {
			fmt.Fprintf(&b, "  Argo CD would refuse it: %s\n", inert.Prose(e))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
