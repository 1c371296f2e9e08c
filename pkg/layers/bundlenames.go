package layers

import (
	"crypto/md5" //nolint:gosec // Fleet's names, not a security use
	"encoding/hex"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// Fleet's names for what `fleet apply` and fleet-controller make of a
// bundle (rancher/fleet pkg/names), which the model names its sets and
// releases with.

// bundleName is the name `fleet apply` gives bn of the GitRepo delivery:
// the options' name, else names.HelmReleaseName of the GitRepo's name
// joined with the folder (and, for a driven scan's options file, its name
// without extension).
func bundleName(delivery string, bn *bundle) string {
	if bn.opts.Name != "" {
		return bn.opts.Name
	}
	id := filepath.ToSlash(filepath.Join(delivery, bn.dir))
	if bn.optionsFile != "" {
		id = filepath.ToSlash(filepath.Join(id, strings.TrimSuffix(bn.optionsFile, path.Ext(bn.optionsFile))))
	}
	return helmReleaseName(id)
}

var (
	disallowedChars = regexp.MustCompile(`[^a-zA-Z0-9-]+`)
	helmReleaseRE   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	dnsLabelSafe    = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	multiDash       = regexp.MustCompile("-+")
)

// helmReleaseName is Fleet's names.HelmReleaseName: a name valid as a Helm
// release and a DNS label, at most 53 characters.
func helmReleaseName(s string) string {
	bak := s
	s = strings.ReplaceAll(s, "/", "-")
	if s != strings.ToLower(s) || disallowedChars.MatchString(s) {
		s = s + "-" + md5Hex(s, 8)
	}
	s = strings.ToLower(s)
	s = disallowedChars.ReplaceAllLiteralString(s, "-")
	s = multiDash.ReplaceAllString(s, "-")
	s = strings.Trim(s, "-")
	if helmReleaseRE.MatchString(s) && dnsLabelSafe.MatchString(s) {
		return limitName(s, 53)
	}
	return md5Hex(bak, 24)
}

// limitName is Fleet's names.Limit.
func limitName(s string, count int) string {
	if len(s) <= count {
		return s
	}
	const hexLen = 5
	sep := "-"
	if count <= hexLen+len(sep) {
		return s[:count]
	}
	n := count - hexLen - len(sep)
	if s[n-1] == '-' {
		sep = ""
	}
	return s[:n] + sep + md5Hex(s, hexLen)
}

func md5Hex(s string, n int) string {
	h := md5.Sum([]byte(s)) //nolint:gosec // Fleet's names
	return hex.EncodeToString(h[:])[:n]
}
