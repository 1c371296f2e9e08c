package appset

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"sigs.k8s.io/yaml"

	"fleetgen.dev/fleetgen/internal/sprigbound"
)

// renderer renders an ApplicationSet's templates as utils.Render does:
// fasttemplate ({{ key }} replaced by a string parameter, anything else
// left as it is), or Go's text/template with Sprig and Argo CD's functions
// when spec.goTemplate is set.
type renderer struct {
	goTemplate bool
	options    []string // spec.goTemplateOptions, e.g. missingkey=error
}

// notEvaluated is an error that stops the preview of a generator: a
// template function or size fleetgen does not evaluate.
type notEvaluated struct{ why string }

func (e notEvaluated) Error() string { return e.why }

// application renders tmpl (the merged template) with params and reads
// what the preview shows: Argo CD's RenderTemplateParams, which leaves the
// template as it is when params is empty.
func (r *renderer) application(tmpl map[string]any, params map[string]any) (Application, error) {
	out := tmpl
	if len(params) > 0 {
		v, err := r.walk(tmpl, params)
		if err != nil {
			return Application{}, err
		}
		out, _ = v.(map[string]any)
	}
	md, _ := out["metadata"].(map[string]any)
	spec, _ := out["spec"].(map[string]any)
	dest, _ := spec["destination"].(map[string]any)
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	return Application{
		Name: str(md, "name"), Project: str(spec, "project"),
		Server: str(dest, "server"), DestinationName: str(dest, "name"), DestinationNamespace: str(dest, "namespace"),
	}, nil
}

// walk renders every string of v and every key of its maps, dropping nil
// map values, as utils.Render's deeplyReplace does over an Application.
func (r *renderer) walk(v any, params map[string]any) (any, error) {
	switch t := v.(type) {
	case string:
		return r.replace(t, params)
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			if x == nil {
				continue
			}
			nv, err := r.walk(x, params)
			if err != nil {
				return nil, err
			}
			nk, err := r.replace(k, params)
			if err != nil {
				return nil, err
			}
			out[nk] = nv
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			nv, err := r.walk(x, params)
			if err != nil {
				return nil, err
			}
			out[i] = nv
		}
		return out, nil
	}
	return v, nil
}

// isTemplated is utils.Render's test for a string fasttemplate renders.
var isTemplated = regexp.MustCompile(".*{{.*}}.*")

// replace is utils.Render.Replace.
func (r *renderer) replace(tmpl string, params map[string]any) (string, error) {
	if r.goTemplate {
		return r.execute(tmpl, params)
	}
	if !isTemplated.MatchString(tmpl) {
		return tmpl, nil
	}
	// fasttemplate with the tags {{ and }}: each tag, trimmed, is replaced
	// by the string parameter of that name, or left as it was.
	var b strings.Builder
	rest := tmpl
	for {
		i := strings.Index(rest, "{{")
		if i < 0 {
			b.WriteString(rest)
			break
		}
		b.WriteString(rest[:i])
		rest = rest[i+2:]
		j := strings.Index(rest, "}}")
		if j < 0 {
			return "", fmt.Errorf("invalid template: Cannot find end tag=%q in the template=%q starting from %q", "}}", tmpl, rest)
		}
		tag := rest[:j]
		rest = rest[j+2:]
		trimmed := strings.TrimSpace(tag)
		if s, ok := params[trimmed].(string); ok && trimmed != "" {
			b.WriteString(s)
		} else {
			b.WriteString("{{" + tag + "}}")
		}
		if b.Len() > MaxOutput {
			return "", notEvaluated{fmt.Sprintf("a template that renders more than %d KiB", MaxOutput>>10)}
		}
	}
	return b.String(), nil
}

// execute runs tmpl as a Go template with params, as Argo CD does, into a
// bounded buffer.
func (r *renderer) execute(tmpl string, params map[string]any) (string, error) {
	t, err := base.Clone()
	if err != nil {
		return "", err
	}
	for _, o := range r.options {
		if !validOptions[o] { // text/template panics on any other
			return "", fmt.Errorf("invalid goTemplateOptions %q: want missingkey=default, invalid, zero or error", o)
		}
		t = t.Option(o)
	}
	parsed, err := t.Parse(tmpl)
	if err != nil {
		return "", fmt.Errorf("failed to parse template %s: %w", tmpl, err)
	}
	var buf limited
	if err := parsed.Execute(&buf, params); err != nil {
		var ne notEvaluated
		if errors.As(err, &ne) {
			return "", ne
		}
		if errors.Is(err, sprigbound.ErrTooLarge) {
			return "", notEvaluated{fmt.Sprintf("a template that makes more than %d items or %d KiB (%s), which fleetgen does not evaluate", MaxSequence, MaxOutput>>10, tooLarge(err))}
		}
		if errors.Is(err, errTooLong) {
			return "", notEvaluated{fmt.Sprintf("a template that renders more than %d KiB", MaxOutput>>10)}
		}
		return "", fmt.Errorf("failed to execute go template %s: %w", tmpl, err)
	}
	return buf.String(), nil
}

var errTooLong = errors.New("too long")

// tooLarge names the function of a sprigbound error: "repeat", "until", …
func tooLarge(err error) string {
	for _, fn := range []string{"untilStep", "until", "seq", "repeat"} {
		if strings.Contains(err.Error(), fn+" ") {
			return fn
		}
	}
	return "a sequence"
}

// base holds funcs, parsed once: cloning it is cheaper than adding them to
// every template (utils.Render's baseTemplate).
var base = template.New("base").Funcs(funcs)

// validOptions are the options text/template accepts.
var validOptions = map[string]bool{"missingkey=default": true, "missingkey=invalid": true, "missingkey=zero": true, "missingkey=error": true}

// limited is a buffer that refuses to grow past MaxOutput.
type limited struct{ bytes.Buffer }

func (l *limited) Write(p []byte) (int, error) {
	if l.Len()+len(p) > MaxOutput {
		return 0, errTooLong
	}
	return l.Buffer.Write(p)
}

// funcs are Argo CD's template functions (Sprig's generic functions but
// env, expandenv and getHostByName, plus normalize, toYaml, fromYaml and
// fromYamlArray), except that those whose result depends on the clock,
// randomness or the host, or that cost much, are not evaluated, and those
// that make sequences, repeat or indent text are bounded (package
// sprigbound).
var funcs = func() template.FuncMap {
	m := sprig.GenericFuncMap()
	delete(m, "env")
	delete(m, "expandenv")
	delete(m, "getHostByName")
	m["normalize"] = sanitizeName
	m["toYaml"] = toYAML
	m["fromYaml"] = fromYAML
	m["fromYamlArray"] = fromYAMLArray
	for _, name := range []string{
		"slugify", // gosimple/slug, which fleetgen does not link
		"now", "ago", "randAlphaNum", "randAlpha", "randAscii", "randNumeric", "randBytes", "randInt",
		"uuidv4", "shuffle", "encryptAES", "bcrypt", "htpasswd", "derivePassword", "genPrivateKey",
		"buildCustomCert", "genCA", "genCAWithKey", "genSelfSignedCert", "genSelfSignedCertWithKey",
		"genSignedCert", "genSignedCertWithKey",
	} {
		why := "the template function " + name + ", which fleetgen does not evaluate (its result depends on the clock, randomness or the host, or it costs too much): this generator's Applications are not shown"
		m[name] = func(...any) (any, error) { return nil, notEvaluated{why} }
	}
	for name, f := range sprigbound.Funcs(MaxSequence, MaxOutput) {
		m[name] = f
	}
	for _, name := range []string{"indent", "nindent"} {
		f := m[name].(func(int, string) string)
		m[name] = func(n int, s string) (string, error) {
			if n > MaxOutput {
				return "", notEvaluated{fmt.Sprintf("%s by more than %d KiB, which fleetgen does not evaluate", name, MaxOutput>>10)}
			}
			return f(n, s), nil
		}
	}
	return m
}()

var invalidDNSNameChars = regexp.MustCompile("[^-a-z0-9.]")

// sanitizeName is Argo CD's SanitizeName (nameNormalized, normalize): a
// DNS-1123 subdomain made of name.
func sanitizeName(name string) string {
	name = strings.ToLower(name)
	name = invalidDNSNameChars.ReplaceAllString(name, "-")
	if len(name) > 253 {
		name = name[:253]
	}
	return strings.Trim(name, "-.")
}

func toYAML(v any) (string, error) {
	data, err := yaml.Marshal(v)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(string(data), "\n"), nil
}

func fromYAML(str string) (map[string]any, error) {
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(str), &m); err != nil {
		return nil, err
	}
	return m, nil
}

func fromYAMLArray(str string) ([]any, error) {
	a := []any{}
	if err := yaml.Unmarshal([]byte(str), &a); err != nil {
		return nil, err
	}
	return a, nil
}
