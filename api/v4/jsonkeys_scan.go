package v4

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// The duplicate-key pass (jsonkeys.go) reads the text a second time through
// json.Decoder.Token, which allocates a token per value: for an agent's status report it
// cost as much as decoding the report. Nearly all text has no duplicate, so a plain scan
// that allocates nothing says so first, and only text it cannot clear (a duplicate, a
// key it would have to compare after unescaping beyond its means, input that is not JSON,
// very deep nesting) takes the token pass, which finds and names the duplicate.

// maxScanDepth is the nesting the scan follows; deeper text takes the token pass.
const maxScanDepth = 256

// maxScanKeys is how many keys of one object the scan compares pairwise; an object with
// more takes the token pass.
const maxScanKeys = 64

// surelyNoDuplicateKeys reports whether data, a stream of JSON values, has no object that
// holds a key twice. False means "maybe": the token pass decides.
func surelyNoDuplicateKeys(data []byte) bool {
	return surelyNoKeyTwice(data, false)
}

// surelyNoKeyTwice is surelyNoDuplicateKeys, also counting keys equal but for case as
// one key when fold is set (Parse's objects, matched case-insensitively, members.go).
func surelyNoKeyTwice(data []byte, fold bool) bool {
	s := keyScan{data: data, fold: fold}
	for {
		s.space()
		if s.pos >= len(s.data) {
			return true
		}
		if !s.value(0) {
			return false
		}
	}
}

// keyScan walks JSON text; pos is where it reads next.
type keyScan struct {
	data []byte
	pos  int
	// keys holds the keys of the objects being scanned, innermost last: a stack shared
	// by the nesting levels, so that the scan allocates once.
	keys [][]byte
	fold bool // keys equal but for case count as one
}

func (s *keyScan) space() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// value scans one value; false when it is not JSON the scan clears.
func (s *keyScan) value(depth int) bool {
	if depth > maxScanDepth {
		return false
	}
	s.space()
	if s.pos >= len(s.data) {
		return false
	}
	switch s.data[s.pos] {
	case '{':
		return s.object(depth)
	case '[':
		return s.array(depth)
	case '"':
		_, ok := s.str()
		return ok
	default:
		return s.literal()
	}
}

func (s *keyScan) object(depth int) bool {
	base := len(s.keys)
	defer func() { s.keys = s.keys[:base] }()
	if s.empty('}') {
		return true
	}
	for {
		s.space()
		if s.pos >= len(s.data) || s.data[s.pos] != '"' {
			return false
		}
		key, ok := s.str()
		if !ok || len(s.keys)-base >= maxScanKeys {
			return false
		}
		for _, k := range s.keys[base:] {
			if bytes.Equal(k, key) || s.fold && bytes.EqualFold(k, key) {
				return false
			}
		}
		s.keys = append(s.keys, key)
		s.space()
		if s.pos >= len(s.data) || s.data[s.pos] != ':' {
			return false
		}
		s.pos++
		if !s.value(depth + 1) {
			return false
		}
		if more, ok := s.after('}'); !more {
			return ok
		}
	}
}

func (s *keyScan) array(depth int) bool {
	if s.empty(']') {
		return true
	}
	for {
		if !s.value(depth + 1) {
			return false
		}
		if more, ok := s.after(']'); !more {
			return ok
		}
	}
}

// empty takes the opening delimiter of an object or array, and its closer when nothing
// is between them.
func (s *keyScan) empty(closer byte) bool {
	s.pos++
	s.space()
	if s.pos < len(s.data) && s.data[s.pos] == closer {
		s.pos++
		return true
	}
	return false
}

// after takes what follows a member or an element: ',' (more follow) or the closer (the
// object or array ended, ok); anything else is not JSON (not ok).
func (s *keyScan) after(closer byte) (more, ok bool) {
	s.space()
	if s.pos >= len(s.data) {
		return false, false
	}
	switch s.data[s.pos] {
	case ',':
		s.pos++
		return true, true
	case closer:
		s.pos++
		return false, true
	}
	return false, false
}

// str scans a string and returns its content as keys compare: the raw bytes, or, when it
// holds an escape or bytes that are not UTF-8, the text as the decoder reads it (two
// spellings of one key are one key; the decoder reads every invalid byte as U+FFFD).
func (s *keyScan) str() ([]byte, bool) {
	start := s.pos
	s.pos++ // '"'
	escaped, nonASCII := false, false
	for s.pos < len(s.data) {
		switch c := s.data[s.pos]; {
		case c == '"':
			s.pos++
			raw := s.data[start+1 : s.pos-1]
			if !escaped && (!nonASCII || utf8.Valid(raw)) {
				return raw, true
			}
			var text string
			if json.Unmarshal(s.data[start:s.pos], &text) != nil {
				return nil, false
			}
			return []byte(text), true
		case c == '\\':
			escaped = true
			s.pos += 2
		case c < 0x20:
			return nil, false // not allowed unescaped in JSON
		case c >= utf8.RuneSelf:
			nonASCII = true
			s.pos++
		default:
			s.pos++
		}
	}
	return nil, false
}

// literal scans a number, true, false or null (loosely: the decoder already read the text
// or will refuse it).
func (s *keyScan) literal() bool {
	start := s.pos
	for s.pos < len(s.data) {
		switch c := s.data[s.pos]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '+', c == '.', c == 'E':
			s.pos++
		default:
			return s.pos > start
		}
	}
	return s.pos > start
}
