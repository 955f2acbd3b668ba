package cluster

// Recovery is what a recovery of etcd's space did, the answer of POST /v1/cluster/recover.
type Recovery struct {
	// CompactedTo is the revision the history was compacted to (0: nothing to compact).
	CompactedTo int64            `json:"compactedTo"`
	Members     []MemberRecovery `json:"members"`
	// AlarmBefore: the NOSPACE alarm was raised when the recovery began. Disarmed: this
	// recovery disarmed it.
	AlarmBefore bool `json:"alarmBefore"`
	Disarmed    bool `json:"disarmed"`
	// LiveData: after compaction, a member still uses more than 80% of its quota: the
	// space holds live data, and only deleting objects or a larger quota helps.
	LiveData bool `json:"liveData"`
	// Message says the outcome in a sentence.
	Message string `json:"message"`
}

// MemberRecovery is one member's sizes before and after the recovery.
type MemberRecovery struct {
	Name     string `json:"name"`
	Endpoint string `json:"endpoint"`
	// Sizes in bytes: the file (what the quota counts), the part in use, the quota.
	SizeBefore   int64  `json:"sizeBefore"`
	InUseBefore  int64  `json:"inUseBefore"`
	SizeAfter    int64  `json:"sizeAfter"`
	InUseAfter   int64  `json:"inUseAfter"`
	Quota        int64  `json:"quota"`
	Defragmented bool   `json:"defragmented"`
	Error        string `json:"error,omitempty"`
}

// Rewrapped is the answer of POST /v1/encryption/rewrap (docs/security.md): the key
// every secret value is now sealed with, and how many values were sealed again.
type Rewrapped struct {
	Key       string `json:"key"`
	Rewrapped int    `json:"rewrapped"`
}
