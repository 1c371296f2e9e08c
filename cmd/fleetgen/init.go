package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"fleetgen.dev/fleetgen/pkg/pipeline"
)

func newInit(stdout, stderr io.Writer) *cobra.Command {
	var o pipeline.InitOptions
	cmd := &cobra.Command{
		Use:   "init [DIR]",
		Short: "Write a starting fleet: fleet.yaml with comments, a layer, a placeholder kubeconfig",
		Long: `Init writes a starting fleet into DIR (default the current folder, made when
missing): fleet.yaml with a comment on every stanza (manager, registry,
source, encryption, one layer, one agent cluster and one manager-mode
cluster, and commented-out deliveries, argocd and verify), the layer's folder
apps/, a placeholder kubeconfig for the manager-mode cluster and .sops.yaml.
The fleet is named after DIR.

The manager-mode cluster's kubeconfig is sealed with SOPS for age keys:
give yours with --age-recipient (age-keygen prints it); without one, init
generates an identity into DIR/age.agekey (mode 0600) and lists it in
DIR/.gitignore. It validates and renders as written once 'fleetgen mirror'
has pinned its image (fleet-agent) in fleet.lock.yaml.

Init never overwrites a file: when one of its files exists it writes nothing
and exits 2 naming it. Flag values are checked as validate checks
fleet.yaml, before anything is written.`,
		Example: example(
			"fleetgen init myfleet",
			"fleetgen init myfleet --manager https://fleet.contoso.example:6443 --registry contoso.azurecr.io \\",
			"    --source ssh://git@github.com/contoso/fleet-gitops.git --age-recipient age1qpmdkse4…",
		),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("%s: want at most one folder", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Dir = "."
			if len(args) == 1 {
				o.Dir = args[0]
			}
			res, err := pipeline.Init(cmd.Context(), o)
			if err != nil {
				return wrap(err)
			}
			// The folder and the file names are the user's own and fleetgen's.
			var b strings.Builder
			for _, f := range res.Files {
				fmt.Fprintln(&b, filepath.Join(o.Dir, filepath.FromSlash(f)))
			}
			if _, err := io.WriteString(stdout, b.String()); err != nil {
				return wrap(err)
			}
			if res.AgeKey != "" {
				fmt.Fprintf(stderr, "warning: no --age-recipient: generated the age identity %s (listed in .gitignore: never commit it); Flux decrypts with it: load it into each cluster as the Secret flux-system/sops-age (docs/secrets.md)\n",
					filepath.Join(o.Dir, res.AgeKey))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Manager, "manager", "", "the manager's API server URL, https://HOST[:PORT] (spec.manager.apiServerURL; default a placeholder)")
	f.StringVar(&o.Registry, "registry", "", "the private registry, HOST[:PORT] (spec.registry.host; default a placeholder)")
	f.StringVar(&o.Source, "source", "", "where clusters' Flux reads the rendered tree: a Git URL, or oci://HOST/REPO (spec.source.url; default a placeholder)")
	f.StringSliceVar(&o.AgeRecipients, "age-recipient", nil, "an age public key (age1…) Secrets are sealed for; repeat for several (default: generate an identity into DIR/age.agekey)")
	cmd.ValidArgsFunction = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return nil, cobra.ShellCompDirectiveFilterDirs
	}
	return cmd
}
