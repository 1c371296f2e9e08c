package schema

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"fleetgen.dev/fleetgen/pkg/problem"
)

// Field rules shared by several fields.

var (
	dnsLabelRE     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dnsSubdomainRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	labelNameRE    = regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`)
	durationRE     = regexp.MustCompile(`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`)
	substVarRE     = regexp.MustCompile(`^[_a-zA-Z][_a-zA-Z0-9]*$`)
	repoPathRE     = regexp.MustCompile(`^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*$`)
	tagRE          = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	digestRE       = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)
	scpLikeRE      = regexp.MustCompile(`^(?:([A-Za-z0-9._~-]+)@)?([A-Za-z0-9.-]+):(.*)$`)
	pathVarRE      = regexp.MustCompile(`\$\{([^}]*)\}`)
)

const (
	wantDNSLabel     = "want a DNS-1123 label: at most 63 lower case letters, digits or '-', starting and ending with a letter or digit"
	wantDNSSubdomain = "want a DNS-1123 subdomain: lower case letters, digits, '-' and '.', at most 253 characters"
	wantDuration     = "want a number and unit ms, s, m or h, e.g. 30s, 10m or 1h30m (Flux accepts no other units)"
)

func isDNSLabel(s string) bool { return len(s) <= 63 && dnsLabelRE.MatchString(s) }

func isDNSSubdomain(s string) bool { return len(s) <= 253 && dnsSubdomainRE.MatchString(s) }

// name checks a required DNS-1123 label; it also keeps names like ../x out of
// the output tree, which uses them as file and folder names.
func (v *validator) name(path, what, s string) bool {
	switch {
	case s == "":
		v.add(problem.Required(path, "%s is required: %s", what, wantDNSLabel))
	case !isDNSLabel(s):
		v.add(problem.InvalidValue(path, "invalid %s %q: %s", what, s, wantDNSLabel))
	default:
		return true
	}
	return false
}

func (v *validator) subdomain(path, what, s string) {
	if s != "" && !isDNSSubdomain(s) {
		v.add(problem.InvalidValue(path, "invalid %s %q: %s", what, s, wantDNSSubdomain))
	}
}

func (v *validator) duration(path, s string) {
	if s != "" && !durationRE.MatchString(s) {
		v.add(problem.InvalidDuration(path, "invalid duration %q: %s", s, wantDuration))
	}
}

func (v *validator) tokenTTL(path, s string) {
	if s == "" {
		return
	}
	if !durationRE.MatchString(s) {
		v.add(problem.InvalidDuration(path, "invalid duration %q: %s", s, wantDuration))
		return
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		v.add(problem.InvalidDuration(path, "duration %q is out of range: want at most 2562047h", s))
	case d <= 0:
		v.add(problem.InvalidDuration(path, "token TTL %q is not positive: want a duration > 0, e.g. 240h (newer Fleet rejects tokens without a TTL)", s))
	}
}

// labelKey reports why k is not a Kubernetes label key ("" if it is one).
func labelKey(k string) string {
	prefix, name, hasPrefix := strings.Cut(k, "/")
	if !hasPrefix {
		name, prefix = prefix, ""
	}
	switch {
	case hasPrefix && !isDNSSubdomain(prefix):
		return "its prefix is not a DNS-1123 subdomain: want a lower case DNS name before the /, e.g. example.com/team"
	case len(name) > 63 || !labelNameRE.MatchString(name):
		return "want [PREFIX/]NAME with NAME at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit, and PREFIX a DNS subdomain"
	}
	return ""
}

// LabelKeyProblem says why k is not a Kubernetes label key ([PREFIX/]NAME,
// apimachinery's IsQualifiedName), "" when it is one.
func LabelKeyProblem(k string) string { return labelKey(k) }

// ValidLabelValue reports whether s is a Kubernetes label value
// (apimachinery's IsValidLabelValue): empty, or at most 63 letters, digits,
// '-', '_' or '.', starting and ending with a letter or digit.
func ValidLabelValue(s string) bool { return labelValue(s) }

func labelValue(s string) bool {
	return s == "" || (len(s) <= 63 && labelNameRE.MatchString(s))
}

// labels checks the keys and values of a label map or selector; skip tells
// which entries to leave out (those already checked elsewhere).
func (v *validator) labels(path, what string, m map[string]string, skip func(k, val string) bool) {
	for _, k := range sortedKeys(m) {
		if skip != nil && skip(k, m[k]) {
			continue
		}
		// A Cluster's labels and what selects by them (not the fleet-agent's
		// pod selectors under clusters[].agent).
		if why := reservedLabel(k); why != "" && !strings.Contains(path, ".agent.") {
			v.add(problem.InvalidValue(path+"["+k+"]", "%s key %q is reserved: %s", what, k, why))
			continue
		}
		if v.okLabels["k"+k] && v.okLabels["v"+m[k]] {
			continue
		}
		p := path + "[" + k + "]"
		if why := labelKey(k); why != "" {
			v.add(problem.InvalidValue(p, "invalid %s key %q: %s", what, k, why))
		} else {
			v.okLabels["k"+k] = true
		}
		if !labelValue(m[k]) {
			v.add(problem.InvalidValue(p, "invalid %s value %q for %q: want at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit, or empty", what, m[k], k))
		} else {
			v.okLabels["v"+m[k]] = true
		}
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (v *validator) mode(path, s string) {
	all := modeNames(nil)
	switch {
	case LookupMode(s) != nil:
	case s == "":
		v.add(problem.Required(path, "registration mode is required: want %s", problem.OrList(all)))
	default:
		v.add(problem.NotSupported(path, "unsupported value %q%s: want %s", s, problem.DidYouMean(s, all), problem.OrList(all)))
	}
}

// ref checks a FileRef's form and, when Load read it, that it holds PEM
// certificates.
func (v *validator) ref(path string, r *FileRef, forms int, pemCerts bool) {
	if errs := v.f.refShape(path, r, forms); len(errs) > 0 {
		v.errs = append(v.errs, errs...)
		return
	}
	if !pemCerts || len(r.Data) == 0 {
		return
	}
	if why := checkPEM(r.Data); why != "" {
		at := path + ".file"
		if r.Value != "" {
			at = path + ".value"
		}
		v.add(problem.Other(at, "%s: want one or more PEM blocks -----BEGIN CERTIFICATE-----", why))
	}
}

// checkPEM reports why data is not a PEM bundle of X.509 certificates ("" if
// it is one). The reason never quotes the content.
func checkPEM(data []byte) string {
	n := 0
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			return fmt.Sprintf("PEM block %d is not a certificate (its type is not CERTIFICATE)", n+1)
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return fmt.Sprintf("PEM block %d is not a valid X.509 certificate", n+1)
		}
		n++
	}
	if n == 0 {
		return "not PEM"
	}
	return ""
}

// yamlText reports whether b is text a YAML file can hold unchanged: UTF-8
// without control characters other than newline and tab.
func yamlText(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, c := range b {
		if c < 0x20 && c != '\n' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// hostPort reports why s is not HOST[:PORT] ("" if it is).
func hostPort(s string) string {
	if strings.Contains(s, "://") || strings.Contains(s, "/") {
		return "want HOST[:PORT] without scheme or path, e.g. contoso.azurecr.io or localhost:5000"
	}
	host, port := s, ""
	if strings.HasPrefix(s, "[") {
		i := strings.Index(s, "]")
		if i < 0 {
			return "unclosed [ in IPv6 address: want [ADDR]:PORT"
		}
		host, port = s[1:i], strings.TrimPrefix(s[i+1:], ":")
		if net.ParseIP(host) == nil {
			return "invalid IPv6 address: want [ADDR]:PORT"
		}
	} else if h, p, ok := strings.Cut(s, ":"); ok {
		host, port = h, p
		if port == "" {
			return "empty port: want HOST:PORT with PORT 1-65535"
		}
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || port[0] == '0' {
			return fmt.Sprintf("invalid port %q: want 1-65535", port)
		}
	}
	if net.ParseIP(host) == nil && !isDNSSubdomain(host) {
		return "want HOST[:PORT] with HOST a lower case DNS name or IP address, e.g. contoso.azurecr.io or localhost:5000"
	}
	return ""
}

// imageRef reports why s is not an image reference ("" if it is). It is a
// small syntactic check; pkg/mirror parses references fully.
func imageRef(s string) string {
	const want = "want [HOST[:PORT]/]PATH[:TAG][@sha256:DIGEST] with a lower case PATH, e.g. ghcr.io/kubereboot/kured:1.12.0"
	if strings.TrimSpace(s) == "" {
		return "empty image reference: " + want
	}
	s = strings.TrimPrefix(s, "oci://") // Helm charts as OCI artifacts
	name, digest, hasDigest := strings.Cut(s, "@")
	if hasDigest && !digestRE.MatchString(digest) {
		return "invalid digest: want sha256: and 64 lower case hex digits"
	}
	slash := strings.LastIndex(name, "/")
	if i := strings.LastIndex(name, ":"); i > slash {
		if !tagRE.MatchString(name[i+1:]) {
			return "invalid tag: want at most 128 letters, digits, '_', '.' or '-', not starting with '.' or '-'"
		}
		name = name[:i]
	}
	parts := strings.Split(name, "/")
	if len(parts) > 1 && (strings.ContainsAny(parts[0], ".:") || parts[0] == "localhost") {
		if why := hostPort(parts[0]); why != "" {
			return "invalid registry host: " + why
		}
		parts = parts[1:]
	}
	for _, p := range parts {
		if !repoPathRE.MatchString(p) {
			return want
		}
	}
	return ""
}
