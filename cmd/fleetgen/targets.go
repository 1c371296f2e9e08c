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
		Short: "Explain which layers, deliveries, managers and Applications reach each cluster",
		Long: `Targets explains delivery: for every cluster of fleet.yaml, in input order,
each layer selected for it and each delivery (Fleet GitRepo) that reaches it,
with the selector or the target that selected it, matched exactly as Fleet's
controller matches (within a target every criterion must hold, a target with
no criterion selects nothing, the first target that matches wins, only
clusters registered with Fleet: modes agent, manager and capi); each manager
that registers it (Fleet or Verrazzano by its mode; Argo CD, KubeFleet,
Sveltos and OCM by their selectors, with the cluster that runs each); and the
Argo CD Applications that each ApplicationSet the Argo CD cluster receives
would create on it, as Argo CD's cluster and list generators make them (other
generators are named, not evaluated). Then every delivery target, layer
selector and manager selector that reaches no cluster, and why (with the
label values that do exist), and every ApplicationSet previewed. --cluster
limits the clusters listed. With spec.shards it shows each cluster's shards
(those fleet.lock.yaml keeps, or those a render would assign now) and the
load of every shard: its clusters and, for Fleet, the BundleDeployments they
receive and the GitRepos it runs (docs/scale.md).

It explains a fleet that validate refuses too (a delivery that selects no
cluster is what targets is for), then exits 2 with validate's problems. It
writes nothing.`,
		Example: example(
			"fleetgen targets",
			"fleetgen targets --cluster edge-1",
			"fleetgen targets --output json | jq -r '.clusters[] | select(.deliveries == []) | .name'",
			"fleetgen targets --output json | jq '.unmatched, .unmatchedLayers, .emptyManagers'",
			"fleetgen targets --output json | jq -r '.clusters[] | .name as $c | .applications[] | \"\\($c) \\(.name)\"'",
			"fleetgen targets --output json | jq -c '.load[]'   # per manager and shard: clusters and load",
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
	in.add(g, cmd, withPlaintext)
	addFormat(cmd, &o.format, "text (a table) or json ({clusters, unmatched, unmatchedLayers, emptyManagers, applicationSets, load})", formatText, formatJSON)
	aliasShortFormat(cmd, &o.format)
	addClusters(cmd, &o.clusters, "list only this cluster (repeatable)")
	return cmd
}

// addClusters adds --cluster NAME (repeatable, SPEC §2).
func addClusters(cmd *cobra.Command, clusters *[]string, usage string) {
	cmd.Flags().StringArrayVar(clusters, "cluster", nil, usage)
}

// writeTargets prints r: format "json" is the object of SPEC §2, one line;
// "text" a table, a row per layer, delivery, manager and Application that
// reaches a cluster with the selector, target, mode or ApplicationSet that
// selected it, then the targets, layer selectors and manager selectors that
// reach no cluster and why, and the ApplicationSets previewed. The names come
// from fleet.yaml, which may not be valid (targets explains a fleet validate
// refuses), or from a layer (what an ApplicationSet's template makes): every
// one is written inert.
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
			if d.Target == "" {
				row("delivery "+t(d.Name), d.Why)
			} else {
				row("delivery "+t(d.Name), "target "+t(d.Target)+": "+t(d.Why))
			}
			for _, b := range d.Bundles {
				row("  bundle "+t(b), "")
			}
		}
		for _, m := range c.Managers {
			row("manager "+m.Manager+" on "+t(m.Host), t(m.Why))
		}
		for _, a := range c.Applications {
			row("application "+inert.Quote(a.Name), "ApplicationSet "+inert.Quote(a.ApplicationSet))
		}
		why := c.ShardWhy
		if s := c.Shard; s != nil && s.Fleet != "" && len(why) > 0 {
			row("fleet shard "+t(s.Fleet), why[0])
			why = why[1:]
		}
		if s := c.Shard; s != nil && s.ArgoCD != nil && len(why) > 0 {
			row(fmt.Sprintf("argocd shard %d", *s.ArgoCD), why[0])
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
	if len(r.Load) > 0 {
		b.WriteString("\nLOAD PER SHARD\n")
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "MANAGER\tSHARD\tCLUSTERS\tBUNDLEDEPLOYMENTS\tGITREPOS\tGITREPO BUNDLEDEPLOYMENTS")
		num := func(n *int) string {
			if n == nil {
				return "-"
			}
			return fmt.Sprint(*n)
		}
		for _, l := range r.Load {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", l.Manager, l.Shard, l.Clusters, num(l.BundleDeployments), num(l.GitRepos), num(l.GitRepoBundleDeployments))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
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
	if len(r.EmptyManagers) > 0 {
		b.WriteString("\nMANAGERS THAT REGISTER NO CLUSTER\n")
		for _, m := range r.EmptyManagers {
			fmt.Fprintf(&b, "%s: %s\n", m.Manager, t(m.Why))
		}
	}
	for i, p := range r.ApplicationSets {
		if i == 0 {
			b.WriteString("\nAPPLICATIONSETS (on cluster " + t(p.Cluster) + ")\n")
		}
		fmt.Fprintf(&b, "%s (layer %s, %s): %d Application(s)\n", inert.Quote(p.Ref()), t(p.Layer), inert.Quote(p.Origin), len(p.Applications))
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
