package bcswire

import "time"

// MesosID is Mesos's OfferID, FrameworkID and AgentID.
type MesosID struct {
	Value *string `json:"value,omitempty"`
}

// MesosResource is Mesos's Resource as its Go type decodes JSON (the keys berth answers
// and the other value kinds; reservations and the like are left out: berth sends none).
type MesosResource struct {
	Name   *string      `json:"name,omitempty"`
	Type   *int32       `json:"type,omitempty"`
	Scalar *MesosScalar `json:"scalar,omitempty"`
	Ranges *MesosRanges `json:"ranges,omitempty"`
	Set    *MesosSet    `json:"set,omitempty"`
	Role   *string      `json:"role,omitempty"`
}

// OfferWithDelta is BCS's OfferWithDelta (`bcs-client offer`): Mesos's v1 Offer embedded
// (its keys at the top level) and BCS's deltaResource.
type OfferWithDelta struct {
	ID          *MesosID          `json:"id,omitempty"`
	FrameworkID *MesosID          `json:"framework_id,omitempty"`
	AgentID     *MesosID          `json:"agent_id,omitempty"`
	Hostname    *string           `json:"hostname,omitempty"`
	Resources   []*MesosResource  `json:"resources,omitempty"`
	Attributes  []*MesosAttribute `json:"attributes,omitempty"`
	ExecutorIDs []*MesosID        `json:"executor_ids,omitempty"`
	// DeltaResource is what in-place resource updates took off the agent.
	DeltaResource *Resource `json:"deltaResource"`
}

// Transaction is BCS's scheduler Transaction (`bcs-client trans -l`), its operations
// kept as raw JSON (berth lists none).
type Transaction struct {
	TransactionID string        `json:"transactionID"`
	ObjectKind    string        `json:"objectKind"`
	ObjectName    string        `json:"objectName"`
	Namespace     string        `json:"namespace"`
	PreOp         *any          `json:"preOp,omitempty"`
	CurOp         *any          `json:"curOp,omitempty"`
	Status        string        `json:"status"`
	Message       string        `json:"message"`
	CreateTime    time.Time     `json:"createTime"`
	CheckInterval time.Duration `json:"checkInterval"`
	DelayTime     time.Duration `json:"delayTime"`
}
