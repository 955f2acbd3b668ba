package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/berthhq/berth/internal/bytesize"
	"github.com/berthhq/berth/internal/daemon"
)

// etcdSpaceFlags bound etcd's space (docs/operations.md): the embedded etcd's quota and
// how often the history is compacted.
type etcdSpaceFlags struct {
	quota              string
	compactionInterval time.Duration
}

// defaultCompactionInterval is kube-apiserver's: watches up to 5 minutes behind resume.
const defaultCompactionInterval = 5 * time.Minute

// minCompactionInterval keeps compaction from turning into a busy loop and every watch
// that is a little behind into a re-list.
const minCompactionInterval = 10 * time.Second

func (e *etcdSpaceFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&e.quota, "etcd-quota-bytes", "",
		"space quota of the embedded etcd, in bytes or with KiB, MiB or GiB (default 8GiB); past it etcd refuses writes")
	fl.DurationVar(&e.compactionInterval, "etcd-compaction-interval", defaultCompactionInterval,
		"how often etcd's history is compacted, keeping one interval of it (0: never)")
}

// quotaBytes parses --etcd-quota-bytes: 0 (the store's default) when not given.
func (e etcdSpaceFlags) quotaBytes(external bool) (int64, error) {
	if e.quota == "" {
		return 0, nil
	}
	if external {
		return 0, fmt.Errorf("--etcd-quota-bytes is for the embedded etcd; an external etcd has its own --quota-backend-bytes")
	}
	n, err := parseBytes(e.quota)
	if err != nil {
		return 0, fmt.Errorf("--etcd-quota-bytes %q: %w", e.quota, err)
	}
	if n < daemon.MinQuotaBytes || n > daemon.MaxQuotaBytes {
		return 0, fmt.Errorf("--etcd-quota-bytes %q: must be between %s and %s", e.quota,
			bytesize.Format(daemon.MinQuotaBytes), bytesize.Format(daemon.MaxQuotaBytes))
	}
	return n, nil
}

func (e etcdSpaceFlags) checkInterval() error {
	if d := e.compactionInterval; d < 0 || (d > 0 && d < minCompactionInterval) {
		return fmt.Errorf("--etcd-compaction-interval %s: use 0 (never compact) or at least %s", d, minCompactionInterval)
	}
	return nil
}

// byteUnits are the suffixes parseBytes takes, binary as etcd's quota is.
var byteUnits = []struct {
	suffix string
	factor int64
}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"b", 1}}

// parseBytes reads a whole number of bytes, optionally with a binary unit: 8GiB, 512MiB.
func parseBytes(s string) (int64, error) {
	num, factor := strings.ToLower(strings.TrimSpace(s)), int64(1)
	for _, u := range byteUnits {
		if rest, ok := strings.CutSuffix(num, u.suffix); ok {
			num, factor = strings.TrimSpace(rest), u.factor
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("not a size: use a whole number of bytes, or of KiB, MiB or GiB (8GiB)")
	}
	if n > (1<<62)/factor {
		return 0, fmt.Errorf("too large")
	}
	return n * factor, nil
}
