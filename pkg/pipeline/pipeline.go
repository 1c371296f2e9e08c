// Package pipeline runs fleetgen's commands as library calls: each function is
// one command of the CLI, from loading fleet.yaml to writing, mirroring or
// publishing. cmd/fleetgen only parses flags, calls one of these and prints.
package pipeline

import (
	"io"
	"log/slog"
	"os"

	"fleetgen.dev/fleetgen/pkg/problem"
)

// Config is what every command shares.
type Config struct {
	// File is fleet.yaml's path (default ./fleet.yaml).
	File string
	// OutDir is the output folder (render, publish, build).
	OutDir string
	// AllowPlaintextSecrets lets credential Secrets be written unencrypted.
	AllowPlaintextSecrets bool
	// Logger gets logs (never secrets); nil discards.
	Logger *slog.Logger
	// Progress, when non-nil, is where cmd/fleetgen shows human progress for
	// long work (see OnMirror); the pipeline writes nothing to it.
	Progress io.Writer
	// OnMirror, when non-nil, gets a mirror's progress (cmd/fleetgen draws
	// it): one MirrorUpdate at the start, one per mirror.Event, one at the end.
	OnMirror func(MirrorUpdate)
	// NoReferrers mirrors images without their signatures, attestations and
	// SBOMs, for registries that refuse artifact manifests.
	NoReferrers bool
	// Jobs bounds mirror concurrency; 0 means the default.
	Jobs int
	// PushURL overrides where publish pushes.
	PushURL string
	// LookupEnv resolves {env: VAR}; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// KubeconfigEnvPrefix is a second prefix, besides FLEETGEN_KUBECONFIG_,
	// of the variables {env: VAR} may read (schema.LoadOptions.EnvPrefix).
	KubeconfigEnvPrefix string
	// AgeKeyFile holds age identities (trusted CI configuration) with which
	// render, check and publish decrypt the sealed Secrets of OutDir before
	// trusting them; empty means $SOPS_AGE_KEY_FILE, and neither means the
	// plaintext-hash annotations are trusted (docs/secrets.md).
	AgeKeyFile string
	// Locked refuses (problem.Invalid, nothing written) any change to
	// fleet.lock.yaml: a new client ID (render) or image entry (mirror).
	Locked bool
	// AllowDirty lets publish push while fleet.yaml, the lock or a layer
	// folder has uncommitted changes in the Git work tree that holds them.
	AllowDirty bool
	// DryRun, when set, makes publish do everything but push, and print on it
	// what the commit (or artifact) would change.
	DryRun io.Writer
	// OnWarnings, when non-nil, gets what validate accepts but is likely a
	// mistake (schema.Warnings); nil logs each at level Warn. A warning
	// never fails a command.
	OnWarnings func(problem.Errors)
}

func (c Config) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}

// lookupEnv resolves an environment variable through cfg.LookupEnv, or the
// process environment when it is nil.
func (c Config) lookupEnv(k string) (string, bool) {
	if c.LookupEnv != nil {
		return c.LookupEnv(k)
	}
	return os.LookupEnv(k)
}
