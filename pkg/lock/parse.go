package lock

import (
	"bytes"
	"fmt"
	"regexp"

	"fleetgen.dev/fleetgen/internal/strictyaml"
	"fleetgen.dev/fleetgen/pkg/problem"
)

// MaxSize is the largest lock Load and Parse accept, and MaxItems the most
// YAML separators (',' ':' '-' '[' '{' and line breaks, a bound on the number
// of YAML nodes) in it. The lock of the 100,000-cluster benchmark fleet
// (40,000 client IDs, 60,000 Fleet shards) is 5.4 MiB and 680,000
// separators, and one with a client ID and two shards for every one of
// 100,000 clusters about 13 MiB; the caps keep a hostile lock (it comes with
// pull requests) from exhausting memory.
const (
	MaxSize  = 32 << 20
	MaxItems = 4_000_000
)

// rewrite ends every whole-file message: the lock is fleetgen's to write.
const rewrite = "want the lock fleetgen writes (run fleetgen mirror to write it again)"

// Parse decodes lock bytes strictly, with fleet.yaml's decoder: unknown and
// duplicate fields, missing ones, values that are not non-empty strings,
// malformed digests and duplicate entries are errors, all of them reported
// in document order as problem.Errors naming fleet.lock.yaml, the line and
// column and the field path. The lock is an opaque document: no message
// quotes its content (not even the YAML parser's, which may), only where it
// stands.
func Parse(data []byte) (*Lock, error) {
	l := New()
	if len(bytes.TrimSpace(data)) == 0 {
		return l, nil
	}
	pos, errs, ok := strictyaml.Decode(data, l, strictyaml.Doc{File: FileName, MaxSize: MaxSize, MaxItems: MaxItems, Opaque: true, Want: rewrite})
	if ok {
		errs = append(errs, l.check(pos)...)
		errs.Sort()
	}
	if len(errs) > 0 {
		return nil, errs
	}
	l.sort()
	return l, nil
}

// check reports what the decoder cannot: a header of another document, a
// digest, tag or policy of another form, an image, artifact or cluster
// listed twice. It skips empty values, which the decoder reported.
func (l *Lock) check(pos map[string]strictyaml.Pos) problem.Errors {
	var errs problem.Errors
	// add places e where the field path at stands.
	add := func(at string, e *problem.FieldError) {
		errs = append(errs, e.At(FileName, pos[at].Line, pos[at].Column))
	}
	form := func(path, s string, re *regexp.Regexp, what, want string) {
		if s != "" && !re.MatchString(s) {
			add(path, problem.InvalidValue(path, "malformed %s: want %s", what, want))
		}
	}
	digest := func(path, s string) { form(path, s, digestRE, "digest", "sha256: and 64 lower-case hex digits") }
	for _, h := range []struct{ path, got, want string }{{"apiVersion", l.APIVersion, APIVersion}, {"kind", l.Kind, Kind}} {
		if h.got != "" && h.got != h.want {
			add(h.path, problem.NotSupported(h.path, "want %s", h.want))
		}
	}
	images := map[string]int{}
	for i, img := range l.Images {
		path := fmt.Sprintf("images[%d]", i)
		digest(path+".digest", img.Digest)
		referrers := map[Referrer]int{}
		for j, r := range img.Referrers {
			rpath := fmt.Sprintf("%s.referrers[%d]", path, j)
			digest(rpath+".digest", r.Digest)
			form(rpath+".tag", r.Tag, cosignTagRE, "tag", "sha256-, 64 lower-case hex digits and .sig, .att or .sbom")
			key := Referrer{Digest: r.Digest, Tag: r.Tag}
			if k, dup := referrers[key]; dup && r.Digest != "" {
				add(rpath, problem.Duplicate(rpath+".digest", "duplicate referrer (also %s.referrers[%d]): want one entry per artifact", path, k))
			} else {
				referrers[key] = j
			}
		}
		if v := img.Verified; v != nil {
			form(path+".verified.policy", v.Policy, policyRE, "policy", "spec.verify[N]")
			digest(path+".verified.policyDigest", v.PolicyDigest)
			digest(path+".verified.signature", v.Signature)
		}
		if j, dup := images[img.Source]; dup && img.Source != "" {
			add(path, problem.Duplicate(path+".source", "duplicate source (also images[%d]): want one entry per image", j))
		} else {
			images[img.Source] = i
		}
	}
	charts := map[Chart]int{}
	for i, c := range l.Charts {
		path := fmt.Sprintf("charts[%d]", i)
		digest(path+".archive", c.Archive)
		digest(path+".digest", c.Digest)
		form(path+".repository", c.Repository, chartRepoRE, "repository", "an http:// or https:// URL without a trailing slash")
		key := Chart{Repository: c.Repository, Chart: c.Chart, Version: c.Version}
		if j, dup := charts[key]; dup {
			add(path, problem.Duplicate(path+".chart", "duplicate chart (also charts[%d]): want one entry per repository, chart and version", j))
		} else {
			charts[key] = i
		}
	}
	l.checkShards(add)
	clients := map[string]int{}
	for i, c := range l.Clients {
		path := fmt.Sprintf("clients[%d]", i)
		if j, dup := clients[c.Cluster]; dup && c.Cluster != "" {
			add(path, problem.Duplicate(path+".cluster", "duplicate cluster (also clients[%d]): want one client ID per cluster", j))
		} else {
			clients[c.Cluster] = i
		}
	}
	return errs
}

// digestRE is the only digest form mirror writes (go-containerregistry's
// sha256 of the manifest or index).
var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// chartRepoRE is the form of a chart entry's repository.
var chartRepoRE = regexp.MustCompile(`^https?://[^/\s]+(/[^\s]*[^/\s])?$`)

// policyRE is the only policy name a verified entry may carry.
var policyRE = regexp.MustCompile(`^spec\.verify\[(0|[1-9][0-9]{0,5})\]$`)

// cosignTagRE is the only tag a referrer entry may carry: cosign's scheme.
var cosignTagRE = regexp.MustCompile(`^sha256-[0-9a-f]{64}\.(sig|att|sbom)$`)
