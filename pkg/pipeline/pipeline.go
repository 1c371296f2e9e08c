// Package pipeline runs fleetgen's commands as library calls: each function is
// one command of the CLI, from loading fleet.yaml to writing, mirroring or
// publishing, and returns what the command reports (helm's action package).
// cmd/fleetgen only parses flags, calls one of these and prints its value.
package pipeline

import (
	"log/slog"
	"os"

	"fleetgen.dev/fleetgen/pkg/schema"
)

// Config is what every command shares, built once from the command line
// (helm's action.Configuration); each command takes its own options besides.
type Config struct {
	// File is fleet.yaml's path (default ./fleet.yaml).
	File string
	// Logger gets logs (never secrets); nil discards.
	Logger *slog.Logger
	// LookupEnv resolves {env: VAR}; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// KubeconfigEnvPrefix is a second prefix, besides FLEETGEN_KUBECONFIG_,
	// of the variables {env: VAR} may read (schema.LoadOptions.EnvPrefix).
	KubeconfigEnvPrefix string
	// AgeKeyFile holds age identities (trusted CI configuration) with which
	// render, check and publish decrypt the output folder's sealed Secrets
	// before trusting them; empty means $SOPS_AGE_KEY_FILE, and neither
	// means the plaintext-hash annotations are trusted (docs/secrets.md).
	AgeKeyFile string
	// AllowPlaintextSecrets lets credential Secrets be written unencrypted.
	AllowPlaintextSecrets bool
	// Locked refuses (problem.Invalid, nothing written) any change to
	// fleet.lock.yaml: a new client ID or shard assignment (render) or
	// image entry (mirror).
	Locked bool
	// ChartCache is the chart cache's folder (charts.Cache); empty means
	// charts.DefaultCacheDir, the user's cache.
	ChartCache string
	// FetchCharts, a registry host, lets a command fetch a chart the chart
	// cache lacks from the mirror, by its locked digest, read-only, when
	// spec.registry.host is that host: a pull request job on a fresh runner
	// (docs/ci.md). The host comes from the job, not from fleet.yaml, so
	// that a pull request that names another registry gets no credential
	// and no request. Empty: nothing is fetched, and such a chart is an
	// input error ("run fleetgen mirror").
	FetchCharts string
	// Rebalance reassigns shards on purpose (render and diff --rebalance,
	// shard.Options): those the lock puts on a shard no longer declared,
	// else the fewest that balance the shards.
	Rebalance bool
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

// Schema returns fleet.yaml's JSON Schema (`fleetgen schema`).
func Schema() ([]byte, error) { return schema.JSONSchema() }

// Field is what `fleetgen explain` says about one field of fleet.yaml.
type Field = schema.Field

// Explain describes the field of fleet.yaml at path (`fleetgen explain`),
// from the schema Schema returns; an unknown field is an input error that
// suggests the closest one.
func Explain(path string) (*Field, error) { return schema.Explain(path) }
