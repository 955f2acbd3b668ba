// Package bytesize shows byte counts to people in binary units, one decimal (1.5 GiB,
// 300.0 MiB, 512 B): in the store's messages and logs, the server's answers and the
// CLI's tables.
package bytesize

import "fmt"

// Format shows n in binary units, one decimal: 1.5 GiB, 300.0 MiB, 512 B.
func Format(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
