package lock

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// MaxSize is the largest lock Load and Parse accept, and MaxItems the most
// YAML separators (',' ':' '-' '[' '{' and line breaks, a bound on the number
// of YAML nodes) in it. The lock of 10,000 agent clusters and 1,000 images is
// about 1 MiB and 100,000 separators; the caps keep a hostile lock (it comes
// with pull requests) from exhausting memory.
const (
	MaxSize  = 8 << 20
	MaxItems = 1_000_000
)

// digestRE is the only digest form mirror writes (go-containerregistry's
// sha256 of the manifest or index).
var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// Parse decodes lock bytes strictly: unknown and duplicate fields, values that
// are not strings, malformed digests and duplicate entries are errors, all of
// them reported as problem.Errors naming fleet.lock.yaml, the line and column
// and the field path. No message quotes the lock's content (not even the YAML
// parser's, which may), only where it stands.
func Parse(data []byte) (*Lock, error) {
	l := New()
	if len(bytes.TrimSpace(data)) == 0 {
		return l, nil
	}
	p := &parser{}
	p.document(data, l)
	if len(p.errs) > 0 {
		return nil, p.errs
	}
	l.sort()
	return l, nil
}

type parser struct {
	errs problem.Errors
}

func (p *parser) add(n *yaml.Node, e *problem.FieldError) {
	e.File = FileName
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	p.errs = append(p.errs, e)
}

// rewrite ends every whole-file message: the lock is fleetgen's to write.
const rewrite = "want the lock fleetgen writes (run fleetgen mirror to write it again)"

func (p *parser) document(data []byte, l *Lock) {
	whole := func(line int, what string) {
		mk := problem.Other
		if what == "invalid YAML" {
			mk = problem.InvalidValue
		}
		e := mk("", "%s: %s", what, rewrite)
		e.File, e.Line = FileName, line
		p.errs = append(p.errs, e)
	}
	switch {
	case len(data) > MaxSize:
		whole(0, fmt.Sprintf("larger than %d bytes", MaxSize))
		return
	case !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0:
		whole(0, "not UTF-8 text")
		return
	case schema.CountItems(data) > MaxItems:
		whole(0, fmt.Sprintf("more than %d YAML items", MaxItems))
		return
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := safeDecode(dec, &doc); err != nil {
		whole(yamlLine(err), "invalid YAML")
		return
	}
	var extra yaml.Node
	switch err := safeDecode(dec, &extra); {
	case err == nil:
		whole(extra.Line, "a second YAML document")
		return
	case !errors.Is(err, io.EOF):
		whole(yamlLine(err), "invalid YAML")
		return
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if a := findAlias(root); a != nil {
		whole(a.Line, "a YAML alias")
		return
	}
	if root.Kind != yaml.MappingNode {
		whole(root.Line, "not a mapping")
		return
	}
	p.fields(root, "", func(key string, k, v *yaml.Node) bool {
		switch key {
		case "apiVersion":
			if s, ok := p.str(v, key); ok && s != APIVersion {
				p.add(v, problem.Other(key, "want %s", APIVersion))
			}
			l.APIVersion = APIVersion
		case "kind":
			if s, ok := p.str(v, key); ok && s != Kind {
				p.add(v, problem.Other(key, "want %s", Kind))
			}
			l.Kind = Kind
		case "images":
			l.Images = p.images(v)
		case "clients":
			l.Clients = p.clients(v)
		default:
			return false
		}
		return true
	}, "apiVersion, kind, images or clients", "apiVersion", "kind")
}

func (p *parser) images(n *yaml.Node) []Image {
	var out []Image
	seen := map[string]int{}
	p.list(n, "images", func(i int, item *yaml.Node, path string) {
		var img Image
		p.fields(item, path, func(key string, _, v *yaml.Node) bool {
			switch key {
			case "source":
				img.Source, _ = p.str(v, path+".source")
			case "target":
				img.Target, _ = p.str(v, path+".target")
			case "digest":
				img.Digest = p.digest(v, path+".digest")
			case "referrers":
				img.Referrers = p.referrers(v, path+".referrers")
			case "verified":
				img.Verified = p.verified(v, path+".verified")
			default:
				return false
			}
			return true
		}, "source, target, digest, referrers or verified", "source", "target", "digest")
		if j, dup := seen[img.Source]; dup && img.Source != "" {
			p.add(item, problem.Duplicate(path+".source", "duplicate source (also images[%d]): want one entry per image", j))
		} else {
			seen[img.Source] = i
		}
		out = append(out, img)
	})
	return out
}

// digest reads a digest field, reporting one that is not sha256 in hex.
func (p *parser) digest(v *yaml.Node, path string) string {
	s, ok := p.str(v, path)
	if ok && !digestRE.MatchString(s) {
		p.add(v, problem.Other(path, "malformed digest: want sha256: and 64 lower-case hex digits"))
	}
	return s
}

func (p *parser) referrers(n *yaml.Node, path string) []Referrer {
	var out []Referrer
	seen := map[Referrer]int{}
	p.list(n, path, func(i int, item *yaml.Node, ipath string) {
		var r Referrer
		p.fields(item, ipath, func(key string, _, v *yaml.Node) bool {
			switch key {
			case "digest":
				r.Digest = p.digest(v, ipath+".digest")
			case "artifactType":
				r.ArtifactType, _ = p.str(v, ipath+".artifactType")
			case "tag":
				if s, ok := p.str(v, ipath+".tag"); ok {
					if !cosignTagRE.MatchString(s) {
						p.add(v, problem.Other(ipath+".tag", "malformed tag: want sha256-, 64 lower-case hex digits and .sig, .att or .sbom"))
					}
					r.Tag = s
				}
			default:
				return false
			}
			return true
		}, "digest, artifactType or tag", "digest", "artifactType")
		key := Referrer{Digest: r.Digest, Tag: r.Tag}
		if j, dup := seen[key]; dup && r.Digest != "" {
			p.add(item, problem.Duplicate(ipath+".digest", "duplicate referrer (also %s[%d]): want one entry per artifact", path, j))
		} else {
			seen[key] = i
		}
		out = append(out, r)
	})
	return out
}

// policyRE is the only policy name a verified entry may carry.
var policyRE = regexp.MustCompile(`^spec\.verify\[(0|[1-9][0-9]{0,5})\]$`)

func (p *parser) verified(n *yaml.Node, path string) *Verified {
	v := &Verified{}
	p.fields(n, path, func(key string, _, val *yaml.Node) bool {
		switch key {
		case "policy":
			if s, ok := p.str(val, path+".policy"); ok {
				if !policyRE.MatchString(s) {
					p.add(val, problem.Other(path+".policy", "malformed policy: want spec.verify[N]"))
				}
				v.Policy = s
			}
		case "policyDigest":
			v.PolicyDigest = p.digest(val, path+".policyDigest")
		case "signature":
			v.Signature = p.digest(val, path+".signature")
		default:
			return false
		}
		return true
	}, "policy, policyDigest or signature", "policy", "policyDigest", "signature")
	return v
}

// cosignTagRE is the only tag a referrer entry may carry: cosign's scheme.
var cosignTagRE = regexp.MustCompile(`^sha256-[0-9a-f]{64}\.(sig|att|sbom)$`)

func (p *parser) clients(n *yaml.Node) []Client {
	var out []Client
	seen := map[string]int{}
	p.list(n, "clients", func(i int, item *yaml.Node, path string) {
		var c Client
		p.fields(item, path, func(key string, _, v *yaml.Node) bool {
			switch key {
			case "cluster":
				c.Cluster, _ = p.str(v, path+".cluster")
			case "clientID":
				c.ClientID, _ = p.str(v, path+".clientID")
			default:
				return false
			}
			return true
		}, "cluster or clientID", "cluster", "clientID")
		if j, dup := seen[c.Cluster]; dup && c.Cluster != "" {
			p.add(item, problem.Duplicate(path+".cluster", "duplicate cluster (also clients[%d]): want one client ID per cluster", j))
		} else {
			seen[c.Cluster] = i
		}
		out = append(out, c)
	})
	return out
}

// list calls item for every element of the list n (null is an empty list).
func (p *parser) list(n *yaml.Node, path string, item func(i int, n *yaml.Node, path string)) {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return
	}
	if n.Kind != yaml.SequenceNode {
		p.add(n, problem.Other(path, "want a list"))
		return
	}
	for i, c := range n.Content {
		item(i, c, fmt.Sprintf("%s[%d]", path, i))
	}
}

// fields walks the mapping n, calling field for each key; field returns false
// for a key it does not know. Unknown, duplicate, non-string and missing
// required keys are errors; none quotes the key.
func (p *parser) fields(n *yaml.Node, path string, field func(key string, k, v *yaml.Node) bool, known string, required ...string) {
	if n.Kind != yaml.MappingNode {
		p.add(n, problem.Other(path, "want a mapping with %s", known))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			p.add(k, problem.Other(path, "a key that is not a string: want %s", known))
			continue
		}
		if seen[k.Value] {
			p.add(k, problem.Duplicate(path, "duplicate field: want each of %s once", known))
			continue
		}
		seen[k.Value] = true
		if !field(k.Value, k, v) {
			p.add(k, problem.NotFound(path, "unknown field: want %s", known))
		}
	}
	for _, r := range required {
		if !seen[r] {
			p.add(n, problem.Other(join(path, r), "missing: want %s set", r))
		}
	}
}

// str returns the string value of the scalar n, reporting anything else
// (a number, a list, null, an empty string) at path.
func (p *parser) str(n *yaml.Node, path string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" || n.Value == "" {
		p.add(n, problem.Other(path, "want a non-empty string"))
		return "", false
	}
	return n.Value, true
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

// safeDecode turns a panic inside the YAML library into an error: the lock
// comes with pull requests and must never crash the program.
func safeDecode(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = errors.New("yaml: unparsable input")
		}
	}()
	return dec.Decode(n)
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+):`)

// yamlLine returns the line a YAML parser error names, 0 when none; the rest
// of the message may quote the input and is dropped.
func yamlLine(err error) int {
	m := yamlLineRE.FindStringSubmatch(err.Error())
	if m == nil {
		return 0
	}
	line := 0
	fmt.Sscan(m[1], &line)
	return line
}

// findAlias returns the first alias node in document order. Aliases are
// refused, not expanded: fleetgen never writes one, and that rules out alias
// bombs.
func findAlias(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode {
		return n
	}
	for _, c := range n.Content {
		if a := findAlias(c); a != nil {
			return a
		}
	}
	return nil
}
