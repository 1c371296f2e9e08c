package secrets

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"fleetgen.dev/fleetgen/pkg/layout"
	"go.yaml.in/yaml/v3"
)

// sopsConfig is the part of SOPS's .sops.yaml that fleetgen writes, in the
// field order sops documents.
type sopsConfig struct {
	CreationRules []creationRule `yaml:"creation_rules"`
	Stores        struct {
		YAML struct {
			Indent int `yaml:"indent"`
		} `yaml:"yaml"`
	} `yaml:"stores"`
}

type creationRule struct {
	PathRegex      string `yaml:"path_regex"`
	EncryptedRegex string `yaml:"encrypted_regex"`
	// Age is comma-separated, the form every sops 3.x release reads.
	Age string `yaml:"age"`
}

// creationRules returns the .sops.yaml file: a rule for the kubeconfig
// Secrets wherever the output folder sits (sops compares path_regex with the
// path as given, made relative to the folder of .sops.yaml only when it is
// inside it), and one per sealed file outside that layout, should there be any,
// with the same encrypted_regex and recipients Seal uses, and the YAML
// indentation of fleetgen's output so that a hand edit makes a small diff.
func creationRules(recipients, sealedPaths []string) ([]byte, error) {
	var c sopsConfig
	rule := func(re string) creationRule {
		return creationRule{PathRegex: re, EncryptedRegex: EncryptedRegex, Age: strings.Join(recipients, ",")}
	}
	kubeconfigs := layout.FleetKubeconfig.Regexp()
	shape := regexp.MustCompile(kubeconfigs)
	for _, p := range sealedPaths {
		if !shape.MatchString(p) {
			c.CreationRules = append(c.CreationRules, rule("(^|/)"+regexp.QuoteMeta(p)+"$"))
		}
	}
	c.CreationRules = append(c.CreationRules, rule(kubeconfigs))
	c.Stores.YAML.Indent = yamlIndent
	var b bytes.Buffer
	b.WriteString(layout.Header)
	e := yaml.NewEncoder(&b)
	e.SetIndent(yamlIndent)
	if err := e.Encode(c); err != nil {
		return nil, fmt.Errorf("encode %s: %w", ConfigPath, err)
	}
	if err := e.Close(); err != nil {
		return nil, fmt.Errorf("encode %s: %w", ConfigPath, err)
	}
	return b.Bytes(), nil
}
