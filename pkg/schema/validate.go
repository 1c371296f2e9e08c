package schema

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/url"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"filippo.io/age"
)

// Validate checks a defaulted Fleet against every rule of SPEC §1 and returns
// Errors listing every problem in document order, or nil. Each error carries
// the file, line and column of the field (or of its nearest parent that
// fleet.yaml spells out), the field path, what is wrong and what would be
// valid. It reads nothing: {file: …} and {env: …} contents are checked only
// when Load has filled them in.
func Validate(f *Fleet) error {
	errs := validate(f)
	if len(errs) == 0 {
		return nil
	}
	sortErrors(errs)
	return errs
}

type validator struct {
	f    *Fleet
	errs Errors
	// okLabels remembers label keys and values found valid: a big fleet
	// repeats a few of them on every cluster.
	okLabels map[string]bool
	// kubeconfigs remembers what CheckKubeconfig said of each content: a
	// file several clusters reference is checked once.
	kubeconfigs map[string]error
}

// kubeconfig is CheckKubeconfig, once per distinct content.
func (v *validator) kubeconfig(data []byte) error {
	if err, ok := v.kubeconfigs[string(data)]; ok {
		return err
	}
	err := CheckKubeconfig(data)
	if v.kubeconfigs == nil {
		v.kubeconfigs = map[string]error{}
	}
	v.kubeconfigs[string(data)] = err
	return err
}

func (v *validator) add(path, format string, args ...any) {
	v.errs = append(v.errs, v.f.Errorf(path, format, args...))
}

func validate(f *Fleet) Errors {
	v := &validator{f: f, okLabels: map[string]bool{}}
	v.top()
	v.manager()
	v.registry()
	v.source()
	v.sourceMirrors()
	v.output()
	v.encryption()
	v.images()
	v.layers()
	v.groups()
	v.defaults()
	v.clusters()
	return v.errs
}

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
		v.add(path, "%s is required: %s", what, wantDNSLabel)
	case !isDNSLabel(s):
		v.add(path, "invalid %s %q: %s", what, s, wantDNSLabel)
	default:
		return true
	}
	return false
}

func (v *validator) subdomain(path, what, s string) {
	if s != "" && !isDNSSubdomain(s) {
		v.add(path, "invalid %s %q: %s", what, s, wantDNSSubdomain)
	}
}

func (v *validator) duration(path, s string) {
	if s != "" && !durationRE.MatchString(s) {
		v.add(path, "invalid duration %q: %s", s, wantDuration)
	}
}

func (v *validator) tokenTTL(path, s string) {
	if s == "" {
		return
	}
	if !durationRE.MatchString(s) {
		v.add(path, "invalid duration %q: %s", s, wantDuration)
		return
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		v.add(path, "duration %q is out of range: want at most 2562047h", s)
	case d <= 0:
		v.add(path, "token TTL %q is not positive: want a duration > 0, e.g. 240h (newer Fleet rejects tokens without a TTL)", s)
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
		if v.okLabels["k"+k] && v.okLabels["v"+m[k]] {
			continue
		}
		p := path + "[" + k + "]"
		if why := labelKey(k); why != "" {
			v.add(p, "invalid %s key %q: %s", what, k, why)
		} else {
			v.okLabels["k"+k] = true
		}
		if !labelValue(m[k]) {
			v.add(p, "invalid %s value %q for %q: want at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit, or empty", what, m[k], k)
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
		v.add(path, "registration mode is required: want %s", orList(all))
	default:
		v.add(path, "unsupported value %q%s: want %s", s, didYouMean(s, all), orList(all))
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
		v.add(at, "%s: want one or more PEM blocks -----BEGIN CERTIFICATE-----", why)
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

// Sections of the spec, in document order.

func (v *validator) top() {
	f := v.f
	switch f.APIVersion {
	case APIVersion:
	case "":
		v.add("apiVersion", "apiVersion is required: want %s", APIVersion)
	default:
		v.add("apiVersion", "unsupported apiVersion %q: want %s", f.APIVersion, APIVersion)
	}
	switch f.Kind {
	case Kind:
	case "":
		v.add("kind", "kind is required: want %s", Kind)
	default:
		v.add("kind", "unsupported kind %q: want %s", f.Kind, Kind)
	}
	v.name("metadata.name", "name", f.Metadata.Name)
}

func (v *validator) manager() {
	m := &v.f.Spec.Manager
	v.name("spec.manager.name", "name", m.Name)
	v.name("spec.manager.namespace", "namespace", m.Namespace)
	var needs *Cluster
	for i := range v.f.Spec.Clusters {
		c := &v.f.Spec.Clusters[i]
		if m := c.ModeOf(); m != nil && m.APIServerURL {
			needs = c
			break
		}
	}
	const wantURL = "want https://HOST[:PORT]"
	if m.APIServerURL == "" {
		if needs != nil {
			v.add("spec.manager.apiServerURL", "apiServerURL is required because cluster %q uses mode %s: %s", needs.Name, needs.Registration.Mode, wantURL)
		}
	} else if u, err := url.Parse(m.APIServerURL); err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		v.add("spec.manager.apiServerURL", "invalid API server URL %q: %s (agents only talk TLS)", m.APIServerURL, wantURL)
	}
	if ca := m.APIServerCA; ca != nil {
		v.ref("spec.manager.apiServerCA", ca, formFile|formValue, true)
		// The agents' values carry it as text, unchanged.
		if len(ca.Data) > 0 && !yamlText(ca.Data) {
			v.add("spec.manager.apiServerCA", "not a PEM text file (control characters or not UTF-8): want PEM certificates")
		}
	}
}

func (v *validator) registry() {
	r := &v.f.Spec.Registry
	if r.Host == "" {
		v.add("spec.registry.host", "registry host is required: want HOST[:PORT] of the private mirror, e.g. contoso.azurecr.io")
	} else if why := hostPort(r.Host); why != "" {
		v.add("spec.registry.host", "invalid registry host %q: %s", r.Host, why)
	}
	if r.Prefix != "" {
		for _, p := range strings.Split(r.Prefix, "/") {
			if !repoPathRE.MatchString(p) {
				v.add("spec.registry.prefix", "invalid repository prefix %q: want lower case path components separated by '/', e.g. mirror or team/mirror", r.Prefix)
				break
			}
		}
	}
	switch r.Layout {
	case LayoutStripHost, LayoutPreserveHost:
	default:
		v.add("spec.registry.layout", "unsupported value %q: want strip-host or preserve-host", r.Layout)
	}
}

func (v *validator) source() {
	s := &v.f.Spec.Source
	switch s.Kind {
	case SourceGit:
		v.gitURL(s.URL)
	case SourceOCI:
		if s.URL == "" {
			v.add("spec.source.url", "source url is required: want oci://HOST/REPOSITORY")
		} else if u, err := url.Parse(s.URL); err != nil || u.Scheme != "oci" || u.Host == "" || strings.Trim(u.Path, "/") == "" {
			v.add("spec.source.url", "invalid OCI URL %q: want oci://HOST/REPOSITORY", s.URL)
		}
	case "":
		v.add("spec.source.kind", "source kind is required: want git or oci")
	default:
		v.add("spec.source.kind", "unsupported value %q: want git or oci", s.Kind)
	}
	if s.Insecure && s.Kind != SourceOCI {
		v.add("spec.source.insecure", "insecure applies only to kind oci (a plain HTTP registry): for git, use an http:// URL")
	}
	if s.Ref == "" {
		v.add("spec.source.ref", "source ref is required: want a branch (git) or tag (oci)")
	}
	v.subdomain("spec.source.secretRef", "secret name", s.SecretRef)
	v.duration("spec.source.interval", s.Interval)
	if s.Path != "" {
		if why := relPath(s.Path); why != "" {
			v.add("spec.source.path", "invalid path %q: %s", s.Path, why)
		}
	}
}

func (v *validator) gitURL(raw string) {
	const want = "want https://, http:// or ssh:// (e.g. ssh://git@github.com/org/repo.git)"
	if raw == "" {
		v.add("spec.source.url", "source url is required: %s", want)
		return
	}
	if !strings.Contains(raw, "://") {
		if m := scpLikeRE.FindStringSubmatch(raw); m != nil {
			user := ""
			if m[1] != "" {
				user = m[1] + "@"
			}
			v.add("spec.source.url", "scp-style Git URL %q is not accepted by Flux: want ssh://%s%s/%s", raw, user, m[2], strings.TrimPrefix(m[3], "/"))
			return
		}
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http" && u.Scheme != "ssh") {
		v.add("spec.source.url", "invalid Git URL %q: %s", raw, want)
	}
}

// relPath reports why p is not a relative path inside the source root.
func relPath(p string) string {
	if path.IsAbs(p) || strings.HasPrefix(p, `\`) || (len(p) > 1 && p[1] == ':') {
		return "want a path relative to the folder of fleet.yaml"
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "it leaves the folder of fleet.yaml: want a path inside it"
	}
	return ""
}

func (v *validator) encryption() {
	e := v.f.Spec.Encryption
	if e == nil {
		return
	}
	if e.SOPS == nil {
		v.add("spec.encryption", "no encryption method: want sops: {ageRecipients: [age1…]}")
		return
	}
	if len(e.SOPS.AgeRecipients) == 0 {
		v.add("spec.encryption.sops.ageRecipients", "no age recipients: want at least one age1… public key")
	}
	for i, r := range e.SOPS.AgeRecipients {
		if strings.HasPrefix(strings.ToUpper(r), "AGE-SECRET-KEY-") {
			// Never echo it: it is the private key.
			v.add(fmt.Sprintf("spec.encryption.sops.ageRecipients[%d]", i), "this is an age secret key, not a recipient: want its public key age1… (age-keygen -y KEYFILE), and keep the secret key out of fleet.yaml")
		} else if _, err := age.ParseX25519Recipient(r); err != nil {
			v.add(fmt.Sprintf("spec.encryption.sops.ageRecipients[%d]", i), "invalid age recipient %q: want an X25519 public key age1… (age-keygen -y KEYFILE prints it)", r)
		}
	}
	v.subdomain("spec.encryption.sops.secretRef", "secret name", e.SOPS.SecretRef)
}

func (v *validator) images() {
	for i, img := range v.f.Spec.Images {
		if why := imageRef(img); why != "" {
			v.add(fmt.Sprintf("spec.images[%d]", i), "invalid image %q: %s", img, why)
		}
	}
}

// reservedLayerNames are the layer names that would collide with what
// fleetgen or Flux puts beside a layer: a layer is rendered as
// clusters/<cluster>/<name>.yaml holding the Flux Kustomization
// flux-system/<name>.
var reservedLayerNames = map[string]string{
	"kustomization": "clusters/<cluster>/kustomization.yaml is the folder's kustomize entry point",
	"source":        "clusters/<cluster>/source.yaml is fleetgen's Flux source",
	"flux-system":   "the Kustomization flux-system/flux-system and the folder clusters/<cluster>/flux-system/ are Flux's own (flux bootstrap)",
	"manager":       "the Kustomization flux-system/manager and clusters/<manager>/manager.yaml are the manager's entry point",
}

func (v *validator) layers() {
	ls := v.f.Spec.Layers
	index := map[string]int{}
	for i := range ls {
		l := &ls[i]
		p := fmt.Sprintf("spec.layers[%d]", i)
		if v.name(p+".name", "layer name", l.Name) {
			if why, ok := reservedLayerNames[l.Name]; ok {
				v.add(p+".name", "layer name %q is reserved: %s: want another name", l.Name, why)
			} else if j, dup := index[l.Name]; dup {
				v.add(p+".name", "duplicate layer name %q (also spec.layers[%d]): want unique names", l.Name, j)
			} else {
				index[l.Name] = i
			}
		}
		v.duration(p+".interval", l.Interval)
		v.duration(p+".timeout", l.Timeout)
		v.labels(p+".selector", "selector", l.Selector, nil)
		for _, k := range sortedKeys(l.Substitute) {
			if !substVarRE.MatchString(k) {
				v.add(p+".substitute["+k+"]", "invalid variable name %q: want letters, digits and _, not starting with a digit", k)
			}
		}
		v.layerPath(p+".path", l)
	}
	// Dependencies: known, not self, selected wherever the dependent is.
	for i := range ls {
		l := &ls[i]
		for j, dep := range l.DependsOn {
			p := fmt.Sprintf("spec.layers[%d].dependsOn[%d]", i, j)
			d, ok := index[dep]
			switch {
			case dep == l.Name:
				v.add(p, "layer %q depends on itself: want other layer names", dep)
			case !ok:
				v.add(p, "unknown layer %q%s: want one of %s", dep, didYouMean(dep, sortedNames(index)), strings.Join(sortedNames(index), ", "))
			default:
				for k := range v.f.Spec.Clusters {
					c := &v.f.Spec.Clusters[k]
					if Selects(l.Selector, c.Labels) && !Selects(ls[d].Selector, c.Labels) {
						v.add(p, "layer %q is not selected for cluster %q, which layer %q is selected for (Flux would wait for it forever): want %q's selector to cover every cluster %q's does", dep, c.Name, l.Name, dep, l.Name)
						break
					}
				}
			}
		}
	}
	v.cycles(index)
}

func sortedNames(index map[string]int) []string {
	names := make([]string, 0, len(index))
	for n := range index {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return []string{"(no layers)"}
	}
	return names
}

// cycles reports each dependency cycle once, at the dependsOn entry that
// closes it, with the cycle's path.
func (v *validator) cycles(index map[string]int) {
	ls := v.f.Spec.Layers
	const (
		white = iota
		grey
		black
	)
	color := make([]int, len(ls))
	var stack []int
	var visit func(i int)
	visit = func(i int) {
		color[i] = grey
		stack = append(stack, i)
		for j, dep := range ls[i].DependsOn {
			d, ok := index[dep]
			if !ok || d == i {
				continue
			}
			switch color[d] {
			case white:
				visit(d)
			case grey:
				var names []string
				for k := len(stack) - 1; k >= 0; k-- {
					names = append([]string{ls[stack[k]].Name}, names...)
					if stack[k] == d {
						break
					}
				}
				names = append(names, ls[d].Name)
				v.add(fmt.Sprintf("spec.layers[%d].dependsOn[%d]", i, j), "dependency cycle %s: want dependsOn to form no cycle", strings.Join(names, " -> "))
			}
		}
		stack = stack[:len(stack)-1]
		color[i] = black
	}
	for i := range ls {
		if color[i] == white && index[ls[i].Name] == i {
			visit(i)
		}
	}
}

// layerPath checks a layer path, its ${…} variables against every selected
// cluster, and that every expansion stays inside the source root.
func (v *validator) layerPath(p string, l *Layer) {
	if l.Path == "" {
		v.add(p, "layer path is required: want a folder relative to fleet.yaml, e.g. ./infrastructure/${env}")
		return
	}
	rest := pathVarRE.ReplaceAllString(l.Path, "")
	if strings.Contains(rest, "${") {
		v.add(p, "unterminated ${ in path %q: want ${cluster} or ${LABEL}", l.Path)
		return
	}
	if why := relPath(l.Path); why != "" {
		v.add(p, "invalid path %q: %s", l.Path, why)
		return
	}
	ok := true
	for _, m := range pathVarRE.FindAllStringSubmatch(l.Path, -1) {
		name := m[1]
		if name == "cluster" {
			continue
		}
		if labelKey(name) != "" {
			v.add(p, "invalid variable ${%s} in path: want ${cluster} or ${LABEL} with a label key", name)
			ok = false
			continue
		}
		for k := range v.f.Spec.Clusters {
			c := &v.f.Spec.Clusters[k]
			if _, has := c.Labels[name]; !has && Selects(l.Selector, c.Labels) {
				v.add(p, "cluster %q has no label %q for ${%s}, and layer %q is selected for it: want the label on every selected cluster (or in defaults.labels), or a selector that leaves the cluster out", c.Name, name, name, l.Name)
				ok = false
				break
			}
		}
	}
	if !ok || !strings.Contains(l.Path, "${") {
		return
	}
	for k := range v.f.Spec.Clusters {
		c := &v.f.Spec.Clusters[k]
		if !Selects(l.Selector, c.Labels) {
			continue
		}
		if e := ExpandPath(l.Path, c); relPath(e) != "" {
			v.add(p, "path %q expands to %q for cluster %q, which leaves the folder of fleet.yaml: want a path inside it", l.Path, e, c.Name)
			return
		}
	}
}

func (v *validator) groups() {
	seen := map[string]int{}
	for i, g := range v.f.Spec.Groups {
		p := fmt.Sprintf("spec.groups[%d]", i)
		if v.name(p+".name", "group name", g.Name) {
			if j, dup := seen[g.Name]; dup {
				v.add(p+".name", "duplicate group name %q (also spec.groups[%d]): want unique names", g.Name, j)
			} else {
				seen[g.Name] = i
			}
		}
		v.labels(p+".selector", "selector", g.Selector, nil)
	}
}

func (v *validator) defaults() {
	d := &v.f.Spec.Defaults
	v.labels("spec.defaults.labels", "label", d.Labels, nil)
	v.mode("spec.defaults.registration", d.Registration)
	v.tokenTTL("spec.defaults.tokenTTL", d.TokenTTL)
}

func (v *validator) clusters() {
	f := v.f
	names := map[string]int{}
	clientIDs := map[string]int{}
	defaultLabels := f.Spec.Defaults.Labels
	for i := range f.Spec.Clusters {
		c := &f.Spec.Clusters[i]
		p := fmt.Sprintf("spec.clusters[%d]", i)
		if v.name(p+".name", "cluster name", c.Name) {
			switch j, dup := names[c.Name]; {
			case dup:
				v.add(p+".name", "duplicate cluster name %q (also spec.clusters[%d]): want unique names", c.Name, j)
			case c.Name == f.Spec.Manager.Name:
				v.add(p+".name", "cluster name %q is the manager's name (spec.manager.name), whose entry point is clusters/%s/: want another name", c.Name, c.Name)
			default:
				names[c.Name] = i
			}
		}
		// Labels merged in from defaults.labels were checked there.
		v.labels(p+".labels", "label", c.Labels, func(k, val string) bool {
			dv, fromDefaults := defaultLabels[k]
			return fromDefaults && dv == val && !f.Has(p+".labels["+k+"]")
		})

		r := &c.Registration
		rp := p + ".registration"
		d := &f.Spec.Defaults
		// A mode or TTL inherited from defaults was checked there.
		if f.Has(rp+".mode") || r.Mode != d.Registration {
			v.mode(rp+".mode", r.Mode)
		}
		m := LookupMode(r.Mode)
		if m == nil {
			continue // which fields apply depends on the mode
		}
		for _, fld := range registrationFields {
			if fld.set(r) && !fld.applies(m) {
				v.add(rp+"."+fld.name, "%s applies only to mode %s, not %s: remove it", fld.name, orList(modeNames(fld.applies)), r.Mode)
			}
		}
		switch {
		case !m.Kubeconfig:
		case r.Kubeconfig == nil:
			v.add(rp+".kubeconfig", "mode %s needs the cluster's kubeconfig: want kubeconfig: {file: PATH} or {env: VAR}", r.Mode)
		default:
			v.ref(rp+".kubeconfig", r.Kubeconfig, formFile|formEnv, false)
			if len(r.Kubeconfig.Data) > 0 {
				if err := v.kubeconfig(r.Kubeconfig.Data); err != nil {
					v.add(rp+".kubeconfig", "%v", err)
				}
			}
		}
		if m.CACert && r.CACert != nil {
			v.ref(rp+".caCert", r.CACert, formFile|formValue, true)
		}
		if !m.Agent {
			continue
		}
		if f.Has(rp+".tokenTTL") || r.TokenTTL != d.TokenTTL {
			v.tokenTTL(rp+".tokenTTL", r.TokenTTL)
		}
		if r.ClientID != "" && r.ClientID != "auto" {
			if j, dup := clientIDs[r.ClientID]; dup {
				v.add(rp+".clientID", "duplicate clientID %q (also spec.clusters[%d]): want a unique client ID, or auto", r.ClientID, j)
			} else {
				clientIDs[r.ClientID] = i
			}
		}
	}
}

// Sorted returns errs in document order (by field path, spec.clusters[10]
// after spec.clusters[9], then by message), as Validate reports them; nil when
// errs is empty. Checks outside this package that locate their findings in
// fleet.yaml use it so that every input error reads alike.
func Sorted(errs Errors) error {
	if len(errs) == 0 {
		return nil
	}
	sortErrors(errs)
	return errs
}
