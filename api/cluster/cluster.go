package cluster

import "time"

// Info is the answer of GET /v1/cluster.
type Info struct {
	// Self is the server that answered.
	Self Self `json:"self"`
	// Leader is the id of the server running the scheduler and controllers ("" while
	// none does); LeaderError says why it could not be read (no quorum).
	Leader      string `json:"leader"`
	LeaderError string `json:"leaderError,omitempty"`
	// Etcd is "embedded" or "external".
	Etcd    string   `json:"etcd"`
	Members []Member `json:"members"`
	// MembersError says why the members could not be listed.
	MembersError string `json:"membersError,omitempty"`
	// Space: etcd's alarms and what to do when it is full (the sizes are the members').
	Space Space `json:"space"`
}

// Self is a server: its id in the leader election and its etcd member's name ("" with
// an external etcd or a single member on random ports).
type Self struct {
	ID     string `json:"id"`
	Member string `json:"member,omitempty"`
}

// Member is one etcd member as GET /v1/cluster shows it.
type Member struct {
	ID         string   `json:"id"` // hexadecimal, as etcdctl prints it
	Name       string   `json:"name"`
	PeerURLs   []string `json:"peerURLs"`
	ClientURLs []string `json:"clientURLs"`
	// Learner: added, not yet a voter (a server still joining). Started: it has run and
	// published its name (false between the add and its first start).
	Learner bool `json:"learner,omitempty"`
	Started bool `json:"started"`
	// Healthy: its client URL answered a status request in time and it knows a raft
	// leader. RaftLeader: it is the etcd (raft) leader.
	Healthy    bool   `json:"healthy"`
	RaftLeader bool   `json:"raftLeader,omitempty"`
	Error      string `json:"error,omitempty"`
	// DBSize is the size of its database file, which its quota DBQuota bounds (past it
	// etcd refuses writes); DBSizeInUse the part of it that is not free pages (a
	// defragmentation gives the rest back). Zero when it did not answer.
	DBSize      int64 `json:"dbSize,omitempty"`
	DBSizeInUse int64 `json:"dbSizeInUse,omitempty"`
	DBQuota     int64 `json:"dbQuota,omitempty"`
}

// Space is etcd's space as GET /v1/cluster shows it; the sizes are on each Member.
type Space struct {
	// NoSpace: the NOSPACE alarm is raised and etcd refuses writes.
	NoSpace bool    `json:"noSpace"`
	Alarms  []Alarm `json:"alarms,omitempty"`
	// AlarmsError says why the alarms could not be listed (no quorum).
	AlarmsError string `json:"alarmsError,omitempty"`
	// Advice says what happens and what to do while NoSpace.
	Advice string `json:"advice,omitempty"`
	// LastCompaction is the last periodic compaction by any server.
	LastCompaction *Compaction `json:"lastCompaction,omitempty"`
}

// Alarm is one raised etcd alarm.
type Alarm struct {
	Member string `json:"member"` // hexadecimal member ID
	Type   string `json:"type"`   // NOSPACE, CORRUPT
}

// Compaction is a periodic compaction of etcd's history: the revision compacted to and
// when. The servers also keep the last one in etcd in this form.
type Compaction struct {
	Revision int64     `json:"revision"`
	Time     time.Time `json:"time"`
}
