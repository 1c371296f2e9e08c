package main

import (
	"io"

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
			"fleetgen targets -o json | jq -r '.clusters[] | select(.deliveries == []) | .name'",
			"fleetgen targets -o json | jq '.unmatched'",
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
			return wrap(pipeline.WriteTargets(stdout, r, format))
		},
	}
	in.add(g, cmd, 0)
	cmd.Flags().StringVarP(&format, "output", "o", formatText, "text (a table) or json ({clusters, unmatched})")
	_ = cmd.RegisterFlagCompletionFunc("output", completeValues(formatText, formatJSON))
	return cmd
}
