package v4

// Constraint is an AND over IntersectionItem, each an OR over its UnionData.
type Constraint struct {
	IntersectionItem []ConstraintItem `json:"intersectionItem"`
}

// ConstraintItem is satisfied when any of its entries is.
type ConstraintItem struct {
	UnionData []ConstraintData `json:"unionData"`
}

// Constraint operators (matched case-insensitively on input, stored upper case).
const (
	OpUnique     = "UNIQUE"
	OpMaxPer     = "MAXPER"
	OpCluster    = "CLUSTER"
	OpLike       = "LIKE"
	OpUnlike     = "UNLIKE"
	OpGroupBy    = "GROUPBY"
	OpExclude    = "EXCLUDE"
	OpGreater    = "GREATER"
	OpToleration = "TOLERATION"
)

// Constraint value types, as in BCS (2, ranges, is accepted for completeness).
const (
	ValueScalar = 1
	ValueRanges = 2
	ValueText   = 3
	ValueSet    = 4
)

// ConstraintData is one placement rule on a node attribute ("hostname" is built in).
type ConstraintData struct {
	Name    string       `json:"name"`
	Operate string       `json:"operate"`
	Type    int          `json:"type,omitempty"`
	Scalar  *ScalarValue `json:"scalar,omitempty"`
	Ranges  []RangeValue `json:"ranges,omitempty"`
	Text    *TextValue   `json:"text,omitempty"`
	Set     *SetValue    `json:"set,omitempty"`
}

// ScalarValue is a number (type 1).
type ScalarValue struct {
	Value float64 `json:"value"`
}

// RangeValue is an inclusive integer range (type 2).
type RangeValue struct {
	Begin int64 `json:"begin"`
	End   int64 `json:"end"`
}

// TextValue is a string (type 3).
type TextValue struct {
	Value string `json:"value"`
}

// SetValue is a set of strings (type 4).
type SetValue struct {
	Item []string `json:"item"`
}
