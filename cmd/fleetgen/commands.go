package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"fleetgen.dev/fleetgen/internal/inert"
	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/pipeline"
)

// version is set at build time: go build -ldflags "-X main.version=v1.2.3".
var version = ""

func newValidate(g *globals) *cobra.Command {
	in := new(input)
	cmd := &cobra.Command{
		Use:   "validate [PATH]",
		Short: "Check fleet.yaml and every file it refers to",
		Long: `Validate loads fleet.yaml strictly, applies defaults and checks everything:
names, labels, modes, durations, URLs, layer dependencies, referenced files and
environment variables, then every layer build, image and lock entry. It
prints every problem of every phase in one run (file:line:col, field path,
what would be valid): a misspelled field or a missing file never hides a
layer that does not build or an image the lock lacks. It writes nothing.
Exit code 2 when the input is invalid. Warnings (a ClusterGroup that holds no
cluster, a delivery target or layer selector that reaches no cluster) are
printed beside the problems and never change the exit code.`,
		Example: example(
			"fleetgen validate",
			"fleetgen validate clusters/prod          # clusters/prod/fleet.yaml",
			"fleetgen validate --output github   # in a GitHub Actions job: annotate the pull request",
			"fleetgen validate --output json | jq -r .code   # one JSON object per problem",
		),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.configFor(cmd, in, args)
			if err != nil {
				return err
			}
			ws, err := pipeline.Validate(cmd.Context(), cfg) // warnings beside errors
			writeWarnings(cmd.OutOrStdout(), cmd.ErrOrStderr(), g.errFormat, ws)
			return wrap(err)
		},
	}
	// For validate the problems are the report: --output names their format,
	// and --error-format, which the other commands take, is the same flag.
	addFormat(cmd, &g.errFormat, "how problems are printed: text (stderr), json or github (stdout)", formatText, formatJSON, formatGitHub)
	aliasShortFormat(cmd, &g.errFormat)
	cmd.Flags().SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if name == "error-format" {
			name = "output"
		}
		return pflag.NormalizedName(name)
	})
	in.add(g, cmd, withPlaintext)
	return cmd
}

func newImages(g *globals, stdout io.Writer) *cobra.Command {
	in := new(input)
	var o struct {
		why    bool
		format string
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
			"fleetgen images --output json | jq -r '.[] | select(.locked == null) | .image'   # not mirrored yet",
		),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(cmd, o.format, formatText, formatJSON); err != nil {
				return err
			}
			cfg, err := g.configFor(cmd, in, args)
			if err != nil {
				return err
			}
			imgs, err := pipeline.Images(cmd.Context(), cfg, pipeline.ImagesOptions{Policies: o.format == formatJSON})
			if err != nil {
				return wrap(err)
			}
			return wrap(writeImages(stdout, imgs, o.format, o.why))
		},
	}
	in.add(g, cmd, 0)
	cmd.Flags().BoolVar(&o.why, "why", false, "print who needs each image")
	addFormat(cmd, &o.format, "text (one image per line) or json (an array of {image, neededBy, locked, policy})", formatText, formatJSON)
	aliasShortFormat(cmd, &o.format)
	return cmd
}

func newMirror(g *globals, stdout io.Writer) *cobra.Command {
	in := new(input)
	var o pipeline.MirrorOptions
	cmd := &cobra.Command{
		Use:   "mirror [PATH]",
		Short: "Copy every image to the private registry and pin it in fleet.lock.yaml",
		Long: `Mirror copies each image the fleet needs (see 'fleetgen images') to
spec.registry: all platforms of an index, by digest, skipping what is already
there. Only when every copy succeeded does it write the digests to
fleet.lock.yaml, beside fleet.yaml; commit that file. Images a spec.verify
policy covers are copied only with a signature that verifies at the source;
--dry-run prints the plan and checks those signatures, copying nothing.

Across an air gap, the lock says what goes: --to oci-layout:PATH writes every
locked image (every platform, every referrer the lock lists) into an OCI image
layout, a folder or a tar when PATH ends in .tar, verifying signatures first;
on the other side, --from oci-layout:PATH (a layout fleetgen or 'oras backup'
wrote) checks every digest and signature and pushes exactly what the lock
names into spec.registry. Neither changes the lock.

Credentials come from the Docker config and its credential helpers (so
'az acr login' works), or FLEETGEN_REGISTRY_USERNAME and
FLEETGEN_REGISTRY_PASSWORD.`,
		Example: example(
			"fleetgen mirror --dry-run   # print the plan: source -> target",
			"fleetgen mirror --jobs 8",
			"fleetgen mirror --to oci-layout:images.tar     # the connected side of an air gap",
			"fleetgen mirror --from oci-layout:images.tar   # the other side",
		),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.configFor(cmd, in, args)
			if err != nil {
				return err
			}
			o.OnProgress = mirrorProgress(g.progress)
			res, err := pipeline.Mirror(cmd.Context(), cfg, o)
			if res == nil || !o.DryRun {
				return wrap(err)
			}
			var b strings.Builder // the references come from layers: inert
			for _, p := range res.Plan {
				fmt.Fprintf(&b, "%s -> %s\n", inert.Text(p.Source), inert.Text(p.Target))
			}
			if _, werr := io.WriteString(stdout, b.String()); werr != nil {
				return wrap(werr)
			}
			if res.Verdicts != nil {
				io.WriteString(stdout, "\nsignatures at the source:\n")
				if werr := writeVerdicts(stdout, res.Verdicts, formatText); werr != nil {
					return wrap(werr)
				}
			}
			return wrap(err)
		},
	}
	in.add(g, cmd, 0)
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "print the plan and check signatures (spec.verify), copying nothing")
	cmd.Flags().IntVar(&o.Jobs, "jobs", 0, "images copied at once (0: default)")
	cmd.Flags().BoolVar(&o.NoReferrers, "no-referrers", false, noReferrersUsage)
	cmd.Flags().StringVar(&o.To, "to", "", "write the locked images into an OCI image layout, oci-layout:PATH (a folder, or a .tar), instead of spec.registry")
	cmd.Flags().StringVar(&o.From, "from", "", "push the locked images from an OCI image layout, oci-layout:PATH, into spec.registry")
	_ = cmd.MarkFlagFilename("to")
	_ = cmd.MarkFlagFilename("from")
	return cmd
}

func newRender(g *globals, stdout io.Writer) *cobra.Command {
	in := new(input)
	var o struct {
		out      string
		check    bool
		format   string
		clusters []string
	}
	cmd := &cobra.Command{
		Use:   "render [PATH] -o DIR",
		Short: "Write the Fleet, Verrazzano and Flux manifests to DIR",
		Long: `Render compiles fleet.yaml and fleet.lock.yaml into DIR: ` + layout.ManagerDir + `/ for the
management cluster, ` + layout.ClusterDir("<name>") + `/ as each cluster's Flux entry point and
` + layout.AgentValues.Path("<name>") + ` for fleet-agent installs.

Files are written atomically; files an earlier render wrote and this one does
not are removed; files fleetgen did not write are never touched. A render that
fails leaves DIR as it was. The only changes a render makes to fleet.lock.yaml
are adding the client ID of a new agent cluster and the shards of a new
cluster or delivery (spec.shards); with --locked it refuses them (exit 2,
nothing written), so that CI never renders an identity or a shard nobody
committed. A shard once assigned is kept; --rebalance moves shards on purpose
(docs/scale.md), and diff shows each move.

With --check, render writes nothing (not even the lock), prints a unified diff
on stdout and exits 3 when DIR is not what a render would write; with
--output github it first prints a workflow command per warning and changed
cluster (see 'fleetgen diff').

With -o -, render writes no folder: every rendered document goes to stdout as
one YAML stream, files in path order, each after "---" and "# Source: <path>".
It never changes the lock: a new agent cluster's client ID is refused (exit 2)
until 'fleetgen render -o DIR' has minted it. --cluster NAME (repeatable)
streams only what concerns those clusters, as helm template shows one
release: their Flux entry folder, agent values and registration objects on
the manager (naming the manager adds its shared files).`,
		Example: example(
			"fleetgen render -o out",
			"fleetgen render -f fleet.yaml -o out --check   # in CI: fail on drift",
			"fleetgen render -o out --check --locked --output github",
			"fleetgen render -o out --rebalance   # move shards on purpose (review with diff --rebalance first)",
			"fleetgen render -o - | kubeconform -strict -",
			"fleetgen render -o - --cluster edge-1   # what edge-1 gets",
		),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutFlag(cmd, o.out, true); err != nil {
				return err
			}
			if err := checkFormat(cmd, o.format, formatText, formatGitHub); err != nil {
				return err
			}
			if o.format != formatText && !o.check {
				return usagef("%s: --output %s formats the report of --check: add --check", cmd.CommandPath(), o.format)
			}
			cfg, err := g.configFor(cmd, in, args)
			if err != nil {
				return err
			}
			if len(o.clusters) > 0 && o.out != "-" {
				return usagef("%s: --cluster limits the stream of -o -: give -o -, or use 'fleetgen diff --cluster' to compare with DIR", cmd.CommandPath())
			}
			ro := pipeline.RenderOptions{OutDir: o.out, Clusters: o.clusters}
			if o.out == "-" {
				if o.check {
					return usagef("%s: --check compares with a folder: give -o DIR, not -o -", cmd.CommandPath())
				}
				return wrap(pipeline.RenderStream(cmd.Context(), cfg, ro, stdout))
			}
			if !o.check {
				return wrap(pipeline.Render(cmd.Context(), cfg, ro))
			}
			if o.format == formatGitHub {
				rep, diff, err := pipeline.Diff(cmd.Context(), cfg, ro)
				if err != nil {
					return wrap(err)
				}
				return writeDiff(stdout, rep, diff, formatGitHub)
			}
			diff, err := pipeline.Check(cmd.Context(), cfg, ro)
			if err != nil {
				return wrap(err)
			}
			if diff == "" {
				return nil
			}
			// The diff quotes DIR's files: escaped and under
			// ::stop-commands:: (inert.Block), so a runner runs nothing in it.
			if _, err := io.WriteString(stdout, inert.Block(diff)); err != nil {
				return wrap(err)
			}
			return errDrift
		},
	}
	in.add(g, cmd, withPlaintext|withLocked|withRebalance)
	addOutputDir(cmd, &o.out)
	cmd.Flags().BoolVar(&o.check, "check", false, "write nothing; print a diff and exit 3 when DIR differs")
	addFormat(cmd, &o.format, "with --check: text (the diff) or github (workflow commands, then the diff)", formatText, formatGitHub)
	addClusters(cmd, &o.clusters, "with -o -: stream only what concerns this cluster (repeatable)")
	return cmd
}

func newPublish(g *globals, stdout io.Writer) *cobra.Command {
	in := new(input)
	var o pipeline.PublishOptions
	cmd := &cobra.Command{
		Use:   "publish [PATH] -o DIR",
		Short: "Push the rendered tree to spec.source (Git or OCI)",
		Long: `Publish checks that every locked image is in the registry at its digest and
that DIR matches a fresh render, then commits DIR to spec.source: for git it
commits and pushes (never forced), for oci it pushes a Flux artifact tagged
with spec.source.ref. An unchanged tree makes no commit.

When fleet.yaml's folder is inside a Git work tree, publish refuses (exit 2)
while fleet.yaml, fleet.lock.yaml or a layer folder has uncommitted changes
(--allow-dirty publishes anyway), and the commit message names the fleet
repository's commit. --dry-run does everything but push and prints the files
the commit would add, change and remove.`,
		Example: example(
			"fleetgen publish -o out",
			"fleetgen publish -o out --dry-run --locked",
			"fleetgen publish -o out --push-url https://github.com/contoso/fleet-gitops.git",
		),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutFlag(cmd, o.OutDir, false); err != nil {
				return err
			}
			cfg, err := g.configFor(cmd, in, args)
			if err != nil {
				return err
			}
			res, err := pipeline.Publish(cmd.Context(), cfg, o)
			if err != nil {
				return wrap(err)
			}
			_, err = io.WriteString(stdout, res.DryRun)
			return wrap(err)
		},
	}
	in.add(g, cmd, withLocked)
	addOutputDir(cmd, &o.OutDir)
	cmd.Flags().StringVar(&o.PushURL, "push-url", "", "push here instead of spec.source.url")
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "do everything but push; print what the commit would change")
	cmd.Flags().BoolVar(&o.AllowDirty, "allow-dirty", false, "publish even when fleet.yaml, the lock or a layer folder has uncommitted changes")
	return cmd
}

func newBuild(g *globals) *cobra.Command {
	in := new(input)
	var o pipeline.BuildOptions
	cmd := &cobra.Command{
		Use:   "build [PATH] -o DIR",
		Short: "Validate, mirror, render and (with --publish) publish",
		Long: `Build runs validate, mirror, render and, with --publish, publish, in that
order, and stops at the first failure, so nothing is published that refers to
an image the registry lacks.`,
		Example: example(
			"fleetgen build -o out",
			"fleetgen build -o out --publish --push-url file:///srv/git/fleet.git",
			"fleetgen build -o out --publish --locked   # the merge job: publish only what is committed",
		),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutFlag(cmd, o.Publish.OutDir, false); err != nil {
				return err
			}
			cfg, err := g.configFor(cmd, in, args)
			if err != nil {
				return err
			}
			o.Mirror.OnProgress, o.Publish.Jobs = mirrorProgress(g.progress), o.Mirror.Jobs
			return wrap(pipeline.Build(cmd.Context(), cfg, o))
		},
	}
	in.add(g, cmd, withPlaintext|withLocked)
	addOutputDir(cmd, &o.Publish.OutDir)
	cmd.Flags().BoolVar(&o.Push, "publish", false, "publish after rendering")
	cmd.Flags().StringVar(&o.Publish.PushURL, "push-url", "", "push here instead of spec.source.url")
	cmd.Flags().IntVar(&o.Mirror.Jobs, "jobs", 0, "images copied at once (0: default)")
	cmd.Flags().BoolVar(&o.Publish.AllowDirty, "allow-dirty", false, "with --publish: publish even when fleet.yaml, the lock or a layer folder has uncommitted changes")
	cmd.Flags().BoolVar(&o.Mirror.NoReferrers, "no-referrers", false, noReferrersUsage)
	return cmd
}

func newVersion(stdout io.Writer) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:     "version",
		Short:   "Print version, commit and Go version",
		Args:    cobra.NoArgs,
		Example: example("fleetgen version", "fleetgen version --output json | jq -r .version"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(cmd, format, formatText, formatJSON); err != nil {
				return err
			}
			v, commit := buildVersion()
			if format == formatJSON {
				b, err := json.Marshal(struct {
					Version string `json:"version"`
					Commit  string `json:"commit"`
					Go      string `json:"go"`
				}{v, commit, runtime.Version()})
				if err != nil {
					return wrap(err)
				}
				_, err = stdout.Write(append(b, '\n'))
				return wrap(err)
			}
			_, err := fmt.Fprintf(stdout, "fleetgen %s\ncommit: %s\ngo: %s\n", v, commit, runtime.Version())
			return wrap(err)
		},
	}
	addFormat(cmd, &format, "text or json ({version, commit, go})", formatText, formatJSON)
	aliasShortFormat(cmd, &format)
	return cmd
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
