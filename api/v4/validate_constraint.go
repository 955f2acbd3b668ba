package v4

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// validateConstraint checks the shape every operator needs (docs/spec.md, Validation
// rules): the value type it takes and that the value for that type is present.
func validateConstraint(p string, c *Constraint, errs *FieldErrors) {
	if c == nil {
		return
	}
	for i, item := range c.IntersectionItem {
		ip := fmt.Sprintf("%s.intersectionItem[%d]", p, i)
		if len(item.UnionData) == 0 {
			errs.add(ip+".unionData", "required: at least one entry")
		}
		for j := range item.UnionData {
			validateConstraintData(fmt.Sprintf("%s.unionData[%d]", ip, j), &item.UnionData[j], errs)
		}
	}
}

// validateConstraintData checks one entry of a constraint: its name and value type, the
// value its type needs, and the type and value its operator needs.
func validateConstraintData(p string, d *ConstraintData, errs *FieldErrors) {
	if d.Name == "" {
		errs.add(p+".name", "required")
	}
	if d.Type < 0 || d.Type > ValueSet {
		errs.add(p+".type", "must be 1 (scalar), 2 (ranges), 3 (text) or 4 (set), got %d", d.Type)
	}
	validateConstraintValue(p, d, errs)
	validateConstraintOperator(p, d, errs)
}

// validateConstraintValue checks that the value for the declared type is there, as BCS
// checks it at create time.
func validateConstraintValue(p string, d *ConstraintData, errs *FieldErrors) {
	switch d.Type {
	case ValueScalar:
		if d.Scalar == nil {
			errs.add(p+".scalar", "required for type 1")
		}
	case ValueRanges:
		if len(d.Ranges) == 0 {
			errs.add(p+".ranges", "required for type 2")
		}
		for k, r := range d.Ranges {
			if r.Begin > r.End {
				errs.add(fmt.Sprintf("%s.ranges[%d]", p, k), "begin %d is after end %d", r.Begin, r.End)
			}
		}
	case ValueText:
		if d.Text == nil {
			errs.add(p+".text", "required for type 3")
		}
	case ValueSet:
		if d.Set == nil || len(d.Set.Item) == 0 {
			errs.add(p+".set.item", "required for type 4: at least one item")
		}
	}
}

// validateConstraintOperator checks what the operator needs of the entry's type and value.
func validateConstraintOperator(p string, d *ConstraintData, errs *FieldErrors) {
	switch d.Operate {
	case OpUnique:
	case OpMaxPer:
		if needValueType(p, d, errs, ValueText) && d.Text != nil {
			if n, err := strconv.Atoi(strings.TrimSpace(d.Text.Value)); err != nil || n <= 0 {
				errs.add(p+".text.value", "MAXPER needs a positive integer, got %q", truncate(d.Text.Value, 40))
			}
		}
	case OpCluster:
		needValueType(p, d, errs, ValueText, ValueSet)
	case OpGroupBy:
		needValueType(p, d, errs, ValueSet)
	case OpLike, OpUnlike:
		if needValueType(p, d, errs, ValueText, ValueSet) {
			for k, pat := range patterns(d) {
				if err := checkPattern(pat); err != nil {
					errs.add(p+k, "%v", err)
				}
			}
		}
	case OpExclude:
		validateExclude(p, d, errs)
	case OpGreater:
		needValueType(p, d, errs, ValueScalar)
	case OpToleration:
		if needValueType(p, d, errs, ValueText) && d.Text != nil && d.Text.Value == "" {
			errs.add(p+".text.value", "TOLERATION needs the taint value to tolerate")
		}
	default:
		oneOf(p+".operate", d.Operate, errs, OpUnique, OpMaxPer, OpCluster, OpLike, OpUnlike, OpGroupBy, OpExclude, OpGreater, OpToleration)
	}
}

// validateExclude checks an EXCLUDE entry: it matches application labels, given as a set
// of "key:value" items.
func validateExclude(p string, d *ConstraintData, errs *FieldErrors) {
	if d.Name != "" && d.Name != "label" {
		errs.add(p+".name", "EXCLUDE matches application labels: name must be \"label\", got %q", truncate(d.Name, 40))
	}
	if needValueType(p, d, errs, ValueSet) && d.Set != nil {
		for k, it := range d.Set.Item {
			if key, _, ok := strings.Cut(it, ":"); !ok || key == "" {
				errs.add(fmt.Sprintf("%s.set.item[%d]", p, k), "must be a label as \"key:value\", got %q", truncate(it, 80))
			}
		}
	}
}

// valueTypeNames names the value types in messages.
var valueTypeNames = map[int]string{ValueScalar: "1 (scalar)", ValueRanges: "2 (ranges)", ValueText: "3 (text)", ValueSet: "4 (set)"}

// needValueType reports whether the entry's type is one of types, and says which the
// operator needs when it is not.
func needValueType(p string, d *ConstraintData, errs *FieldErrors, types ...int) bool {
	if slices.Contains(types, d.Type) {
		return true
	}
	want := make([]string, len(types))
	for i, t := range types {
		want[i] = valueTypeNames[t]
	}
	errs.add(p+".type", "%s needs type %s, got %d", d.Operate, strings.Join(want, " or "), d.Type)
	return false
}

// patterns returns the LIKE/UNLIKE patterns keyed by their path suffix.
func patterns(d *ConstraintData) map[string]string {
	out := map[string]string{}
	if d.Type == ValueText && d.Text != nil {
		out[".text.value"] = d.Text.Value
	}
	if d.Type == ValueSet && d.Set != nil {
		for i, it := range d.Set.Item {
			out[fmt.Sprintf(".set.item[%d]", i)] = it
		}
	}
	return out
}

// checkPattern accepts what LIKE can match with: a shell glob or a regular expression
// (both match the whole value; see docs/spec.md).
func checkPattern(pat string) error {
	if pat == "" {
		return fmt.Errorf("pattern required")
	}
	_, globErr := path.Match(pat, "")
	_, reErr := regexp.Compile(pat)
	if globErr != nil && reErr != nil {
		return fmt.Errorf("%q is neither a valid glob nor a valid regular expression: %v", truncate(pat, 80), reErr)
	}
	return nil
}

// CheckConstraint checks a constraint made at run time (a workflow step's, after its
// inputs were substituted) as admission checks a stored one; the errors name path.
func CheckConstraint(path string, c *Constraint) error {
	var errs FieldErrors
	validateConstraint(path, c, &errs)
	if len(errs) == 0 {
		return nil
	}
	return errs
}
