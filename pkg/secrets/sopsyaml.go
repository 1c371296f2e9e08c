package secrets

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"
)

// SOPS's YAML store: one document parsed into a branch, comments kept where
// SOPS keeps them, and emitted again as SOPS emits it (see sopstree.go).

// comment is one YAML comment line, without its '#'. SOPS keeps comments as
// tree items and encrypts those under an encrypted key.
type comment struct {
	text   string
	inline bool
}

// item is a mapping entry; key is a string or, for a comment line, a comment
// (with a nil value).
type item struct {
	key   any
	value any
}

// branch is a YAML mapping in document order. Values are branch, []any,
// comment (in sequences), or scalars: string, int, float64, bool, time.Time,
// nil.
type branch []item

// parseYAML reads one YAML document holding a mapping into a branch, keeping
// comments where SOPS's YAML store keeps them.
func parseYAML(in []byte) (branch, error) {
	// Duplicate keys are refused, as SOPS does.
	if err := yaml.NewDecoder(bytes.NewReader(in)).Decode(make(map[string]any)); err != nil && !errors.Is(err, io.EOF) {
		return nil, errors.New("not a YAML mapping")
	}
	d := yaml.NewDecoder(bytes.NewReader(in))
	var doc yaml.Node
	if err := d.Decode(&doc); err != nil {
		return nil, errors.New("not valid YAML")
	}
	var extra yaml.Node
	if err := d.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("want one YAML document")
	}
	return appendNode(nil, &doc, false)
}

func appendComments(b branch, text string, inline bool) branch {
	for _, line := range strings.Split(text, "\n") {
		if line != "" {
			b = append(b, item{key: comment{text: line[1:], inline: inline}})
		}
	}
	return b
}

func appendListComments(l []any, text string, inline bool) []any {
	for _, line := range strings.Split(text, "\n") {
		if line != "" {
			l = append(l, comment{text: line[1:], inline: inline})
		}
	}
	return l
}

// appendNode adds the entries of a document or mapping node to b.
func appendNode(b branch, n *yaml.Node, commentsHandled bool) (branch, error) {
	if !commentsHandled {
		b = appendComments(b, n.HeadComment, false)
		b = appendComments(b, n.LineComment, false)
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			var err error
			if b, err = appendNode(b, c, false); err != nil {
				return nil, err
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			b = appendComments(b, k.HeadComment, false)
			b = appendComments(b, k.LineComment, false)
			scalar := v.Kind == yaml.ScalarNode || v.Kind == yaml.AliasNode
			if scalar {
				b = appendComments(b, v.HeadComment, false)
				b = appendComments(b, v.LineComment, true)
			}
			var key any
			if err := k.Decode(&key); err != nil {
				return nil, errors.New("a mapping key does not parse")
			}
			if _, ok := key.(string); !ok {
				return nil, errors.New("a mapping key is not a string")
			}
			val, err := nodeValue(v, scalar)
			if err != nil {
				return nil, err
			}
			b = append(b, item{key: key, value: val})
			if scalar {
				b = appendComments(b, v.FootComment, false)
			}
			b = appendComments(b, k.FootComment, false)
		}
	case yaml.ScalarNode:
		if n.ShortTag() != "!!null" {
			return nil, errors.New("the YAML document is not a mapping")
		}
	default:
		return nil, errors.New("the YAML document is not a mapping")
	}
	if !commentsHandled {
		b = appendComments(b, n.FootComment, false)
	}
	return b, nil
}

func nodeValue(n *yaml.Node, commentsHandled bool) (any, error) {
	switch n.Kind {
	case yaml.SequenceNode:
		var l []any
		if !commentsHandled {
			l = appendListComments(l, n.HeadComment, false)
			l = appendListComments(l, n.LineComment, false)
		}
		for _, c := range n.Content {
			l = appendListComments(l, c.HeadComment, false)
			l = appendListComments(l, c.LineComment, true)
			v, err := nodeValue(c, true)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
			l = appendListComments(l, c.FootComment, false)
		}
		if !commentsHandled {
			l = appendListComments(l, n.FootComment, false)
		}
		return l, nil
	case yaml.MappingNode:
		return appendNode(branch{}, n, commentsHandled)
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, errors.New("a YAML value does not parse")
		}
		return v, nil
	default:
		// Aliases are not something fleetgen writes; a file that has them
		// is not one of ours.
		return nil, errors.New("unsupported YAML node (alias)")
	}
}

// emitYAML encodes b as SOPS's YAML store does, with indent spaces.
func emitYAML(b branch, indent int) ([]byte, error) {
	var buf bytes.Buffer
	e := yaml.NewEncoder(&buf)
	e.SetIndent(indent)
	m := &yaml.Node{Kind: yaml.MappingNode}
	if err := fillMapping(b, m); err != nil {
		return nil, err
	}
	if err := e.Encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{m}}); err != nil {
		return nil, fmt.Errorf("encode YAML: %w", err)
	}
	if err := e.Close(); err != nil {
		return nil, fmt.Errorf("encode YAML: %w", err)
	}
	return buf.Bytes(), nil
}

func joinComments(c []string) string {
	return "#" + strings.Join(c, "\n#")
}

func addHead(n *yaml.Node, c []string) []string {
	if len(c) > 0 {
		if n.HeadComment != "" {
			n.HeadComment = joinComments(c) + "\n" + n.HeadComment
		} else {
			n.HeadComment = joinComments(c)
		}
	}
	return nil
}

func addTail(dst *string, c []string) []string {
	if len(c) > 0 {
		if *dst != "" {
			*dst += "\n" + joinComments(c)
		} else {
			*dst = joinComments(c)
		}
	}
	return nil
}

func valueNode(v any) (*yaml.Node, error) {
	switch v := v.(type) {
	case branch:
		n := &yaml.Node{Kind: yaml.MappingNode}
		return n, fillMapping(v, n)
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode}
		return n, fillSequence(v, n)
	default:
		n := &yaml.Node{}
		if err := n.Encode(v); err != nil {
			return nil, fmt.Errorf("encode YAML value: %w", err)
		}
		return n, nil
	}
}

// takeComment adds v to the pending head or inline comments when it is a
// comment, and reports whether it was.
func takeComment(v any, head, inline *[]string) bool {
	c, ok := v.(comment)
	if !ok {
		return false
	}
	if c.inline {
		*inline = append(*inline, c.text)
	} else {
		*head = append(*head, c.text)
	}
	return true
}

func fillSequence(l []any, seq *yaml.Node) error {
	var head, inline []string
	first := true
	for _, v := range l {
		if takeComment(v, &head, &inline) {
			continue
		}
		if first {
			head = addHead(seq, head)
			first = false
		}
		n, err := valueNode(v)
		if err != nil {
			return err
		}
		head = addHead(n, head)
		inline = addTail(&n.LineComment, inline)
		seq.Content = append(seq.Content, n)
	}
	head = append(head, inline...)
	if len(head) > 0 {
		if first {
			addHead(seq, head)
		} else {
			addTail(&seq.Content[len(seq.Content)-1].FootComment, head)
		}
	}
	return nil
}

func fillMapping(b branch, m *yaml.Node) error {
	var head, inline []string
	first := true
	for _, it := range b {
		if takeComment(it.key, &head, &inline) {
			continue
		}
		if first {
			head = addHead(m, head)
			first = false
		}
		k := &yaml.Node{}
		if err := k.Encode(it.key); err != nil {
			return fmt.Errorf("encode YAML key: %w", err)
		}
		head = addHead(k, head)
		v, err := valueNode(it.value)
		if err != nil {
			return err
		}
		inline = addTail(&v.LineComment, inline)
		m.Content = append(m.Content, k, v)
	}
	head = append(head, inline...)
	if len(head) > 0 {
		if first {
			addHead(m, head)
		} else {
			addTail(&m.Content[len(m.Content)-2].FootComment, head)
		}
	}
	return nil
}
