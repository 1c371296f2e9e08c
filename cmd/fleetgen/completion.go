package main

import (
	"io"

	"github.com/spf13/cobra"

	"fleetgen.dev/fleetgen/pkg/pipeline"
)

// newCompletion prints cobra's completion script for one shell.
func newCompletion(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "Print the shell completion script for bash, zsh or fish",
		Long: `Completion prints a script that completes fleetgen's commands, flags, flag
values and fleet files in bash (needs the bash-completion package), zsh or fish.`,
		Example: example(
			"source <(fleetgen completion bash)                       # this shell",
			"fleetgen completion bash > /etc/bash_completion.d/fleetgen",
			"fleetgen completion zsh > \"${fpath[1]}/_fleetgen\"",
			"fleetgen completion fish > ~/.config/fish/completions/fleetgen.fish",
		),
		ValidArgs:             []string{"bash", "zsh", "fish"},
		DisableFlagsInUseLine: true,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := cobra.ExactArgs(1)(cmd, args); err != nil {
				return usagef("%s: %v: want bash, zsh or fish", cmd.CommandPath(), err)
			}
			if err := cobra.OnlyValidArgs(cmd, args); err != nil {
				return usagef("%s: %v: want bash, zsh or fish", cmd.CommandPath(), err)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			switch args[0] {
			case "bash":
				return wrap(root.GenBashCompletionV2(stdout, true))
			case "zsh":
				return wrap(root.GenZshCompletion(stdout))
			default:
				return wrap(root.GenFishCompletion(stdout, true))
			}
		},
	}
}

// completeFleetFile offers YAML files and folders for the [PATH] argument.
func completeFleetFile(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return []string{"yaml", "yml"}, cobra.ShellCompDirectiveFilterFileExt
}

// completeValues offers a fixed set of flag values.
func completeValues(values ...string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}

func newSchema(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of fleet.yaml, for editors",
		Long: `Schema prints a JSON Schema (draft 2020-12) of fleet.yaml: every field with
its description, type, enum, pattern and default, unknown fields rejected. It
is generated from the same types and rules validate uses; validate remains the
authority for what a schema cannot say (references between fields, files,
layer builds). The schema of this version is also schema/fleet.schema.json in
the repository.

Editors that run yaml-language-server (VS Code's YAML extension, Neovim,
Helix, …) use it with a first line in fleet.yaml:

  # yaml-language-server: $schema=fleet.schema.json`,
		Example: example(
			"fleetgen schema > fleet.schema.json",
		),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := pipeline.Schema()
			if err != nil {
				return wrap(err)
			}
			_, err = stdout.Write(b)
			return wrap(err)
		},
	}
}
