package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// Targets loads fleet.yaml and returns what reaches each of its clusters:
// the layers selected for it and the deliveries whose targets select it
// (Fleet's matching, package fleetmatch), and every delivery target that
// reaches no cluster (`fleetgen targets`, SPEC §2). It reads neither the
// lock nor the layer folders, and writes nothing.
func Targets(ctx context.Context, cfg Config) (*schema.Reach, error) {
	f, err := load(cfg)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return f.Reach(), nil
}

// WriteTargets prints r: format "json" is the object of SPEC §2, one line;
// "text" a table, a row per layer and delivery that reaches a cluster with
// the selector or target (and its criteria) that selected it, then the
// targets that reach no cluster and why. Every name printed is one
// Validate checked (DNS labels, label keys and values), so nothing in it is
// more than text.
func WriteTargets(w io.Writer, r *schema.Reach, format string) error {
	if format == "json" {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
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
		if m := schema.LookupMode(c.Mode); m != nil && !m.Fleet && deliveries(r) > 0 {
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

// deliveries counts the deliveries that reach any cluster.
func deliveries(r *schema.Reach) int {
	n := 0
	for _, c := range r.Clusters {
		n += len(c.Deliveries)
	}
	return n
}

// warnings hands ws to cfg.OnWarnings, or logs each.
func (c Config) warnings(ws problem.Errors) {
	if len(ws) == 0 {
		return
	}
	if c.OnWarnings != nil {
		c.OnWarnings(ws)
		return
	}
	for _, w := range ws {
		c.logger().Warn(w.Msg, "file", w.File, "line", w.Line, "column", w.Column, "field", w.Path, "code", w.ErrorCode())
	}
}
