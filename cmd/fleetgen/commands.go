package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"fleetgen.dev/fleetgen/pkg/pipeline"
)

// version is set at build time: go build -ldflags "-X main.version=v1.2.3".
var version = ""

func newValidate(g *globals) *cobra.Command {
	var o struct{ file string }
	cmd := &cobra.Command{
		Use:   "validate [PATH]",
		Short: "Check fleet.yaml and every file it refers to",
		Long: `Validate loads fleet.yaml strictly, applies defaults and checks everything:
names, labels, modes, durations, URLs, layer dependencies, referenced files and
environment variables. It prints every problem (file:line:col, field path,
what would be valid) and writes nothing. Exit code 2 when the input is invalid.`,
		Example: example(
			"fleetgen validate",
			"fleetgen validate clusters/prod          # clusters/prod/fleet.yaml",
			"fleetgen validate -o github              # in a GitHub Actions job: annotate the pull request",
			"fleetgen validate -o json | jq -r .code  # one JSON object per problem",
		),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.configFor(cmd, o.file, args)
			if err != nil {
				return err
			}
			return wrap(pipeline.Validate(cmd.Context(), cfg))
		},
	}
	// For validate the problems are the output: -o/--output names their format,
	// and --error-format, which the other commands take, is the same flag.
	cmd.Flags().StringVarP(&g.errFormat, "output", "o", formatText, "how problems are printed: text (stderr), json or github (stdout)")
	cmd.Flags().SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if name == "error-format" {
			name = "output"
		}
		return pflag.NormalizedName(name)
	})
	_ = cmd.RegisterFlagCompletionFunc("output", completeValues(formatText, formatJSON, formatGitHub))
	addFile(g, cmd, &o.file)
	return cmd
}

func newImages(g *globals, stdout io.Writer) *cobra.Command {
	var o struct {
		file string
		why  bool
	}
	cmd := &cobra.Command{
		Use:   "images [PATH]",
		Short: "List every image the fleet needs",
		Long: `Images prints, one per line and sorted, every image the fleet needs:
spec.images plus every image found in the kustomize build of each layer path
(containers, initContainers and ephemeralContainers of all workload kinds, and
HelmRelease/OCIRepository chart references). References are normalised the way
fleet.lock.yaml keys them.`,
		Example: example(
			"fleetgen images",
			"fleetgen images --why   # say which layer or spec.images entry needs each image",
		),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.configFor(cmd, o.file, args)
			if err != nil {
				return err
			}
			return wrap(pipeline.Images(cmd.Context(), cfg, stdout, o.why))
		},
	}
	addFile(g, cmd, &o.file)
	cmd.Flags().BoolVar(&o.why, "why", false, "print who needs each image")
	return cmd
}

func newMirror(g *globals, stdout io.Writer) *cobra.Command {
	var o struct {
		file   string
		dryRun bool
		jobs   int
	}
	cmd := &cobra.Command{
		Use:   "mirror [PATH]",
		Short: "Copy every image to the private registry and pin it in fleet.lock.yaml",
		Long: `Mirror copies each image the fleet needs (see 'fleetgen images') to
spec.registry: all platforms of an index, by digest, skipping what is already
there. Only when every copy succeeded does it write the digests to
fleet.lock.yaml, beside fleet.yaml; commit that file.

Credentials come from the Docker config and its credential helpers (so
'az acr login' works), or FLEETGEN_REGISTRY_USERNAME and
FLEETGEN_REGISTRY_PASSWORD.`,
		Example: example(
			"fleetgen mirror --dry-run   # print the plan: source -> target",
			"fleetgen mirror --jobs 8",
		),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.configFor(cmd, o.file, args)
			if err != nil {
				return err
			}
			cfg.Jobs = o.jobs
			return wrap(pipeline.Mirror(cmd.Context(), cfg, stdout, o.dryRun))
		},
	}
	addFile(g, cmd, &o.file)
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "print the plan and copy nothing")
	cmd.Flags().IntVar(&o.jobs, "jobs", 0, "images copied at once (0: default)")
	return cmd
}

func newRender(g *globals, stdout io.Writer) *cobra.Command {
	var o struct {
		file           string
		out            string
		check          bool
		allowPlaintext bool
	}
	cmd := &cobra.Command{
		Use:   "render [PATH] -o DIR",
		Short: "Write the Fleet, Verrazzano and Flux manifests to DIR",
		Long: `Render compiles fleet.yaml and fleet.lock.yaml into DIR: manager/ for the
management cluster, clusters/<name>/ as each cluster's Flux entry point and
agents/<name>/values.yaml for fleet-agent installs.

Files are written atomically; files an earlier render wrote and this one does
not are removed; files fleetgen did not write are never touched. A render that
fails leaves DIR as it was. The only change a render makes to fleet.lock.yaml
is adding the client ID of a new agent cluster.

With --check, render writes nothing (not even the lock), prints a unified diff
on stdout and exits 3 when DIR is not what a render would write.`,
		Example: example(
			"fleetgen render -o out",
			"fleetgen render -f fleet.yaml -o out --check   # in CI: fail on drift",
		),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.configFor(cmd, o.file, args)
			if err != nil {
				return err
			}
			cfg.OutDir = o.out
			cfg.AllowPlaintextSecrets = o.allowPlaintext
			if !o.check {
				return wrap(pipeline.Render(cmd.Context(), cfg))
			}
			diff, err := pipeline.Check(cmd.Context(), cfg)
			if err != nil {
				return wrap(err)
			}
			if diff == "" {
				return nil
			}
			if _, err := io.WriteString(stdout, diff); err != nil {
				return wrap(err)
			}
			return errDrift
		},
	}
	addFile(g, cmd, &o.file)
	addOutput(cmd, &o.out)
	cmd.Flags().BoolVar(&o.check, "check", false, "write nothing; print a diff and exit 3 when DIR differs")
	cmd.Flags().BoolVar(&o.allowPlaintext, "allow-plaintext-secrets", false, "write kubeconfig Secrets unencrypted when spec.encryption is not set")
	return cmd
}

func newPublish(g *globals) *cobra.Command {
	var o struct {
		file    string
		out     string
		pushURL string
	}
	cmd := &cobra.Command{
		Use:   "publish [PATH] -o DIR",
		Short: "Push the rendered tree to spec.source (Git or OCI)",
		Long: `Publish verifies that every locked image is in the registry at its digest and
that DIR matches a fresh render, then commits DIR to spec.source: for git it
commits and pushes (never forced), for oci it pushes a Flux artifact tagged
with spec.source.ref. An unchanged tree makes no commit.`,
		Example: example(
			"fleetgen publish -o out",
			"fleetgen publish -o out --push-url https://github.com/contoso/fleet-gitops.git",
		),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.configFor(cmd, o.file, args)
			if err != nil {
				return err
			}
			cfg.OutDir = o.out
			cfg.PushURL = o.pushURL
			return wrap(pipeline.Publish(cmd.Context(), cfg))
		},
	}
	addFile(g, cmd, &o.file)
	addOutput(cmd, &o.out)
	cmd.Flags().StringVar(&o.pushURL, "push-url", "", "push here instead of spec.source.url")
	return cmd
}

func newBuild(g *globals) *cobra.Command {
	var o struct {
		file           string
		out            string
		publish        bool
		pushURL        string
		allowPlaintext bool
		jobs           int
	}
	cmd := &cobra.Command{
		Use:   "build [PATH] -o DIR",
		Short: "Validate, mirror, render and (with --publish) publish",
		Long: `Build runs validate, mirror, render and, with --publish, publish, in that
order, and stops at the first failure, so nothing is published that refers to
an image the registry lacks.`,
		Example: example(
			"fleetgen build -o out",
			"fleetgen build -o out --publish --push-url file:///srv/git/fleet.git",
		),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.configFor(cmd, o.file, args)
			if err != nil {
				return err
			}
			cfg.OutDir = o.out
			cfg.PushURL = o.pushURL
			cfg.AllowPlaintextSecrets = o.allowPlaintext
			cfg.Jobs = o.jobs
			return wrap(pipeline.Build(cmd.Context(), cfg, o.publish))
		},
	}
	addFile(g, cmd, &o.file)
	addOutput(cmd, &o.out)
	cmd.Flags().BoolVar(&o.publish, "publish", false, "publish after rendering")
	cmd.Flags().StringVar(&o.pushURL, "push-url", "", "push here instead of spec.source.url")
	cmd.Flags().BoolVar(&o.allowPlaintext, "allow-plaintext-secrets", false, "write kubeconfig Secrets unencrypted when spec.encryption is not set")
	cmd.Flags().IntVar(&o.jobs, "jobs", 0, "images copied at once (0: default)")
	return cmd
}

func newVersion(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print version, commit and Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v, commit := buildVersion()
			_, err := fmt.Fprintf(stdout, "fleetgen %s\ncommit: %s\ngo: %s\n", v, commit, runtime.Version())
			return wrap(err)
		},
	}
}

// buildVersion returns the version (the ldflags value, else the module version)
// and the VCS commit ("unknown" when not built from a checkout).
func buildVersion() (v, commit string) {
	v, commit = version, "unknown"
	info, ok := debug.ReadBuildInfo()
	if !ok {
		if v == "" {
			v = "(devel)"
		}
		return v, commit
	}
	if v == "" {
		v = info.Main.Version
	}
	if v == "" {
		v = "(devel)"
	}
	var rev string
	var dirty bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" {
		commit = rev
		if dirty {
			commit += " (modified)"
		}
	}
	return v, commit
}
