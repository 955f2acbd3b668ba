package cli

import (
	"io"
	"strings"
	"unicode/utf8"
)

// streamTable aligns rows that arrive over time (watches). text/tabwriter aligns only what
// is flushed together; this remembers the widest cell of each column so far, so later rows
// line up with earlier ones unless a cell is wider than anything before.
type streamTable struct {
	w      io.Writer
	widths []int
}

// gap separates columns, as in writeTable.
const gap = 3

// write prints rows now, aligned with each other and with everything printed before.
func (t *streamTable) write(rows ...[]string) error {
	for _, r := range rows {
		for i, c := range r {
			if i >= len(t.widths) {
				t.widths = append(t.widths, 0)
			}
			t.widths[i] = max(t.widths[i], utf8.RuneCountInString(cellReplacer.Replace(c)))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		for i, c := range r {
			c = cellReplacer.Replace(c)
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", t.widths[i]-utf8.RuneCountInString(c)+gap))
			}
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(t.w, b.String())
	return err
}
