package inert

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// JSON encodes v as encoding/json does (HTML characters, control characters,
// U+2028 and U+2029 escaped; bytes that are not UTF-8 become U+FFFD), indented
// when indent is not "", and then escapes what encoding/json leaves raw:
// every other non-ASCII rune and DEL as \uXXXX (a surrogate pair above
// U+FFFF), and the '#' of "##[" as \u0023. Outside strings JSON is ASCII
// without '#', so these only ever rewrite string contents, and a JSON reader
// decodes the same value. The result ends with a line feed.
func JSON(v any, indent string) ([]byte, error) {
	var b []byte
	var err error
	if indent != "" {
		b, err = json.MarshalIndent(v, "", indent)
	} else {
		b, err = json.Marshal(v)
	}
	if err != nil {
		return nil, err
	}
	return append(asciiJSON(b), '\n'), nil
}

// asciiJSON rewrites encoding/json output (valid UTF-8) as described at JSON.
func asciiJSON(b []byte) []byte {
	clean := true
	for _, c := range b {
		if c >= 0x7f {
			clean = false
			break
		}
	}
	if clean && !bytes.Contains(b, []byte("##[")) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == '#' && i+2 < len(b) && b[i+1] == '#' && b[i+2] == '[':
			out = append(out, `#\u0023`...)
			i += 2
		case c < 0x7f:
			out = append(out, c)
			i++
		default:
			r, n := utf8.DecodeRune(b[i:])
			if r >= 0x10000 {
				r -= 0x10000
				out = append(out, `\u`+hexN(uint32(0xd800+(r>>10)), 4)+`\u`+hexN(uint32(0xdc00+(r&0x3ff)), 4)...)
			} else {
				out = append(out, `\u`+hexN(uint32(r), 4)...)
			}
			i += n
		}
	}
	return out
}
