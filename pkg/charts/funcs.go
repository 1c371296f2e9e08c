package charts

import (
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"text/template"
	"time"

	"fleetgen.dev/fleetgen/internal/sprigbound"
)

// maxGenerated bounds what one call of a size-taking template function
// (repeat, until, untilStep, seq, the random strings) may produce: Helm's
// engine has no bound of its own, and a chart is untrusted.
const maxGenerated = 1 << 20

// epoch is the time `now` stands in for: fixed, so that a chart that prints
// the time renders the same bytes every time.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// standIn is the certificate the key- and certificate-generating functions
// return: the shape of Sprig's (fields Cert and Key), fixed text.
type standIn struct{ Cert, Key string }

const (
	standInCert = "-----BEGIN CERTIFICATE-----\nZmxlZXRnZW4gc3RhbmQtaW4=\n-----END CERTIFICATE-----\n"
	standInKey  = "-----BEGIN PRIVATE KEY-----\nZmxlZXRnZW4gc3RhbmQtaW4=\n-----END PRIVATE KEY-----\n"
)

// recorder collects what a render's templates called that cannot be
// rendered offline as the cluster renders it (Note texts), concurrently safe.
type recorder struct {
	mu    sync.Mutex
	calls map[string]map[string]bool // reason → function
}

func (r *recorder) add(reason, fn string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.calls == nil {
		r.calls = map[string]map[string]bool{}
	}
	if r.calls[reason] == nil {
		r.calls[reason] = map[string]bool{}
	}
	r.calls[reason][fn] = true
}

func (r *recorder) notes() []Note {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Note
	if fns := slices.Sorted(maps.Keys(r.calls[NoteLookup])); len(fns) > 0 {
		out = append(out, Note{NoteLookup, "the chart calls lookup, which finds nothing offline (as helm template renders it): objects it would read from the cluster are left out"})
	}
	if fns := slices.Sorted(maps.Keys(r.calls[NoteGenerated])); len(fns) > 0 {
		out = append(out, Note{NoteGenerated, "the chart calls " + strings.Join(fns, ", ") + ": a fixed stand-in rendered in place of what the cluster generates"})
	}
	return out
}

// funcs returns the template functions that replace Helm's for an offline,
// deterministic, bounded render: lookup finds nothing (Helm's own
// placeholder, recorded), the random, key-generating and clock functions
// return fixed stand-ins (recorded), and the functions whose output size a
// template chooses refuse past maxGenerated (package sprigbound).
// Everything else is Helm's.
func (r *recorder) funcs() template.FuncMap {
	gen := func(fn string) { r.add(NoteGenerated, fn) }
	randString := func(fn string, fill byte) func(int) (string, error) {
		return func(n int) (string, error) {
			gen(fn)
			if n < 0 || n > maxGenerated {
				return "", fmt.Errorf("%s of %d characters: more than %d", fn, n, maxGenerated)
			}
			return strings.Repeat(string(fill), n), nil
		}
	}
	cert := func(fn string) func(...any) (standIn, error) {
		return func(...any) (standIn, error) {
			gen(fn)
			return standIn{Cert: standInCert, Key: standInKey}, nil
		}
	}
	m := template.FuncMap{
		"lookup": func(string, string, string, string) (map[string]any, error) {
			r.add(NoteLookup, "lookup")
			return map[string]any{}, nil
		},
		"now":          func() time.Time { gen("now"); return epoch },
		"ago":          func(any) string { gen("ago"); return "0s" },
		"randAlphaNum": randString("randAlphaNum", 'x'),
		"randAlpha":    randString("randAlpha", 'x'),
		"randAscii":    randString("randAscii", 'x'),
		"randNumeric":  randString("randNumeric", '0'),
		"randBytes": func(n int) (string, error) {
			gen("randBytes")
			if n < 0 || n > maxGenerated {
				return "", fmt.Errorf("randBytes of %d bytes: more than %d", n, maxGenerated)
			}
			return base64.StdEncoding.EncodeToString(make([]byte, n)), nil
		},
		"randInt":                  func(lo, _ int) int { gen("randInt"); return lo },
		"uuidv4":                   func() string { gen("uuidv4"); return "00000000-0000-4000-8000-000000000000" },
		"shuffle":                  func(s string) string { gen("shuffle"); return s },
		"bcrypt":                   func(string) string { gen("bcrypt"); return "$2a$10$fleetgen.stand.in" },
		"htpasswd":                 func(user, _ string) string { gen("htpasswd"); return user + ":$2a$10$fleetgen.stand.in" },
		"encryptAES":               func(_, _ string) (string, error) { gen("encryptAES"); return "ZmxlZXRnZW4gc3RhbmQtaW4=", nil },
		"genPrivateKey":            func(string) string { gen("genPrivateKey"); return standInKey },
		"genCA":                    cert("genCA"),
		"genCAWithKey":             cert("genCAWithKey"),
		"genSelfSignedCert":        cert("genSelfSignedCert"),
		"genSelfSignedCertWithKey": cert("genSelfSignedCertWithKey"),
		"genSignedCert":            cert("genSignedCert"),
		"genSignedCertWithKey":     cert("genSignedCertWithKey"),
	}
	maps.Copy(m, sprigbound.Funcs(maxGenerated, maxGenerated))
	return m
}
