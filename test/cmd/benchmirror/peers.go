package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"fleetgen.dev/fleetgen/pkg/mirror"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// The mirrors users would pick instead of fleetgen's (issue 36), each into a
// fresh registry in the same run, from the same source: skopeo sync (the
// Debian package) and regsync (regclient, FLEETGEN_REGSYNC). crane's copy
// loop is in main.go.

// skopeoSync copies refs with `skopeo sync --src yaml`, one YAML source
// listing every repository's tags, all platforms of an index (not
// --preserve-digests: skopeo 1.9 refuses the data set's OCI indexes of Docker
// manifests with it).
// It copies no referrer (skopeo 1.9 knows none).
func skopeoSync(ctx context.Context, tmp, src string, refs []string) (result, error) {
	bin, err := exec.LookPath("skopeo")
	if err != nil {
		return result{}, fmt.Errorf("skopeo not found: apt-get install skopeo")
	}
	p, stop, err := registry(tmp, "skopeo")
	if err != nil {
		return result{}, err
	}
	defer stop()
	tags := tagsByRepo(src, refs)
	var b strings.Builder
	fmt.Fprintf(&b, "%s:\n  tls-verify: false\n  images:\n", src)
	for _, repo := range sortedKeys(tags) {
		fmt.Fprintf(&b, "    %s: [%s]\n", repo, strings.Join(tags[repo], ", "))
	}
	cfg := filepath.Join(tmp, "skopeo-sync.yaml")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
		return result{}, err
	}
	settle()
	start := time.Now()
	// Not --scoped (it would put host:port in a repository path): each
	// image lands under its last path element, unique in the data set.
	cmd := exec.CommandContext(ctx, bin, "sync", "--all", "--src", "yaml", "--dest", "docker",
		"--dest-tls-verify=false", cfg, p.Host+"/skopeo")
	cmd.Env = append(os.Environ(), "HOME="+tmp) // no user policy or auth file
	if out, err := cmd.CombinedOutput(); err != nil {
		return result{}, fmt.Errorf("skopeo sync: %w: %s", err, tail(out))
	}
	return result{"skopeo sync", time.Since(start), p.BlobBytes()}, nil
}

// regsyncOnce copies refs with `regsync once`: one sync entry per
// repository (its release tags), jobs images at a time, with the digest tags
// and referrers fleetgen copies too (digestTags, referrers).
func regsyncOnce(ctx context.Context, tmp, bin, src string, refs []string, jobs int, referrers bool) (result, error) {
	p, stop, err := registry(tmp, "regsync")
	if err != nil {
		return result{}, err
	}
	defer stop()
	tags := tagsByRepo(src, refs)
	var b strings.Builder
	fmt.Fprintf(&b, "version: 1\ncreds:\n  - registry: %s\n    tls: disabled\n  - registry: %s\n    tls: disabled\n", src, p.Host)
	fmt.Fprintf(&b, "defaults:\n  parallel: %d\n  digestTags: %v\n  referrers: %v\nsync:\n", jobs, referrers, referrers)
	for _, repo := range sortedKeys(tags) {
		var allow []string
		for _, t := range tags[repo] {
			allow = append(allow, fmt.Sprintf("%q", "^"+strings.ReplaceAll(t, ".", `\.`)+"$"))
		}
		fmt.Fprintf(&b, "  - source: %s/%s\n    target: %s/%s\n    type: repository\n    tags:\n      allow: [%s]\n",
			src, repo, p.Host, repo, strings.Join(allow, ", "))
	}
	cfg := filepath.Join(tmp, "regsync.yaml")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
		return result{}, err
	}
	settle()
	start := time.Now()
	cmd := exec.CommandContext(ctx, bin, "once", "-c", cfg)
	cmd.Env = append(os.Environ(), "HOME="+tmp)
	if out, err := cmd.CombinedOutput(); err != nil {
		return result{}, fmt.Errorf("regsync once: %w: %s", err, tail(out))
	}
	return result{"regsync once", time.Since(start), p.BlobBytes()}, nil
}

// craneLoop copies refs one `crane copy` at a time, as a script would.
func craneLoop(ctx context.Context, tmp, crane string, refs []string) (result, error) {
	p, stop, err := registry(tmp, "crane")
	if err != nil {
		return result{}, err
	}
	defer stop()
	pairs, err := mirror.Plan(schema.Registry{Host: p.Host}, refs)
	if err != nil {
		return result{}, err
	}
	settle()
	start := time.Now()
	for _, pr := range pairs {
		cmd := exec.CommandContext(ctx, crane, "copy", pr.Source, pr.Target)
		if out, err := cmd.CombinedOutput(); err != nil {
			return result{}, fmt.Errorf("crane copy %s %s: %w: %s", pr.Source, pr.Target, err, tail(out))
		}
	}
	return result{"crane copy loop", time.Since(start), p.BlobBytes()}, nil
}

// tagsByRepo groups refs (src/repo:tag) by repository.
func tagsByRepo(src string, refs []string) map[string][]string {
	m := map[string][]string{}
	for _, r := range refs {
		repo, tag, _ := strings.Cut(strings.TrimPrefix(r, src+"/"), ":")
		m[repo] = append(m[repo], tag)
	}
	for _, ts := range m {
		sort.Strings(ts)
	}
	return m
}

func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// tail is the end of a tool's output, for an error.
func tail(out []byte) string {
	const max = 2000
	if len(out) > max {
		out = out[len(out)-max:]
	}
	return string(out)
}
