package customres

import (
	"slices"
	"strings"
)

// ParseDefinition reads a definition document: Kubernetes' CustomResourceDefinition
// (spec.group, spec.version or the first of spec.versions, spec.names), as BCS's client
// sends it. Its resources are namespaced: a definition of scope Cluster is refused, since
// berth bounds and authorizes custom resources by namespace. An empty metadata.name
// becomes plural.group, the only name it may have. name, when not empty, is the path's.
func ParseDefinition(body []byte, name string) (Definition, Doc, error) {
	doc, err := decode(body)
	if err != nil {
		return Definition{}, nil, err
	}
	var d Definition
	apiVersion, err := str(doc, "apiVersion")
	if err != nil {
		return d, nil, err
	}
	if !slices.Contains(definitionAPIVersions, apiVersion) {
		return d, nil, invalid("apiVersion", "%q: a definition is v4 or apiextensions.k8s.io/v1beta1 or v1", truncate(apiVersion))
	}
	kind, err := str(doc, "kind")
	if err != nil {
		return d, nil, err
	}
	if kind != "" && !strings.EqualFold(kind, DefinitionKind) {
		return d, nil, invalid("kind", "%q: must be %s", truncate(kind), DefinitionKind)
	}
	doc["kind"] = DefinitionKind
	if d.Group, err = str(doc, "spec", "group"); err != nil {
		return d, nil, err
	}
	if err := checkGroup("spec.group", d.Group); err != nil {
		return d, nil, err
	}
	if d.Version, err = definitionVersion(doc); err != nil {
		return d, nil, err
	}
	if err := CheckName("spec.version", d.Version); err != nil {
		return d, nil, err
	}
	// Kubernetes' v1beta1 definitions carry spec.version, which BCS's client reads.
	doc["spec"].(map[string]any)["version"] = d.Version
	if err := d.readNames(doc); err != nil {
		return d, nil, err
	}
	scope, err := str(doc, "spec", "scope")
	if err != nil {
		return d, nil, err
	}
	if scope != "" && scope != "Namespaced" {
		return d, nil, invalid("spec.scope", "%q: berth keeps custom resources in namespaces (Namespaced)", truncate(scope))
	}
	d.Name = d.Plural + "." + d.Group
	m, err := metadata(doc)
	if err != nil {
		return d, nil, err
	}
	given, err := str(doc, "metadata", "name")
	if err != nil {
		return d, nil, err
	}
	switch {
	case given != "" && given != d.Name:
		return d, nil, invalid("metadata.name", "%q: must be spec.names.plural.spec.group, %s", truncate(given), d.Name)
	case name != "" && name != d.Name:
		return d, nil, invalid("metadata.name", "the document defines %s, the path names %q", d.Name, truncate(name))
	}
	m["name"] = d.Name
	delete(m, "namespace")
	return d, doc, nil
}

// definitionVersion is spec.version, else the name of the first of spec.versions.
func definitionVersion(doc Doc) (string, error) {
	v, err := str(doc, "spec", "version")
	if err != nil || v != "" {
		return v, err
	}
	spec, _ := doc["spec"].(map[string]any)
	versions, ok := spec["versions"].([]any)
	if !ok || len(versions) == 0 {
		return "", invalid("spec.version", "is required (or spec.versions[0].name)")
	}
	first, ok := versions[0].(map[string]any)
	if !ok {
		return "", invalid("spec.versions[0]", "must be an object")
	}
	if v, ok = first["name"].(string); !ok {
		return "", invalid("spec.versions[0].name", "must be a string")
	}
	return v, nil
}

// readNames reads spec.names; the singular defaults to the kind in lowercase.
func (d *Definition) readNames(doc Doc) error {
	var err error
	if d.Plural, err = str(doc, "spec", "names", "plural"); err != nil {
		return err
	}
	if err := CheckName("spec.names.plural", d.Plural); err != nil {
		return err
	}
	if d.Kind, err = str(doc, "spec", "names", "kind"); err != nil {
		return err
	}
	if d.Kind == "" {
		return invalid("spec.names.kind", "is required")
	}
	if len(d.Kind) > 63 || !kindName.MatchString(d.Kind) {
		return invalid("spec.names.kind", "%q: at most 63 letters and digits, starting with a letter", truncate(d.Kind))
	}
	if d.Singular, err = str(doc, "spec", "names", "singular"); err != nil {
		return err
	}
	if d.Singular == "" {
		d.Singular = strings.ToLower(d.Kind)
		names := doc["spec"].(map[string]any)["names"].(map[string]any)
		names["singular"] = d.Singular
	}
	return CheckName("spec.names.singular", d.Singular)
}

// Same reports whether a replacement keeps what the stored resources depend on: the
// group, the version, the plural and the kind.
func (d Definition) Same(o Definition) bool {
	return d.Name == o.Name && d.Version == o.Version && d.Kind == o.Kind
}

// Resource reads a custom resource of definition d in namespace ns; name, when not
// empty, is the path's. The document's apiVersion must be d's group/version and its kind
// d's kind; an empty metadata.namespace becomes ns.
func (d Definition) Resource(body []byte, ns, name string) (string, Doc, error) {
	doc, err := decode(body)
	if err != nil {
		return "", nil, err
	}
	apiVersion, err := str(doc, "apiVersion")
	if err != nil {
		return "", nil, err
	}
	if apiVersion != d.APIVersion() {
		return "", nil, invalid("apiVersion", "%q: resources of %s are %s", truncate(apiVersion), d.Name, d.APIVersion())
	}
	kind, err := str(doc, "kind")
	if err != nil {
		return "", nil, err
	}
	if kind != d.Kind {
		return "", nil, invalid("kind", "%q: resources of %s are of kind %s", truncate(kind), d.Name, d.Kind)
	}
	if _, err := metadata(doc); err != nil {
		return "", nil, err
	}
	given, err := str(doc, "metadata", "name")
	if err != nil {
		return "", nil, err
	}
	if err := CheckName("metadata.name", given); err != nil {
		return "", nil, err
	}
	if name != "" && given != name {
		return "", nil, invalid("metadata.name", "the document is named %q, the path %q", given, truncate(name))
	}
	docNS, err := str(doc, "metadata", "namespace")
	if err != nil {
		return "", nil, err
	}
	if docNS != "" && docNS != ns {
		return "", nil, invalid("metadata.namespace", "the document is in namespace %q, the path in %q", truncate(docNS), ns)
	}
	return given, doc, nil
}

// DefinitionOf reads back a stored definition.
func DefinitionOf(doc Doc) Definition {
	var d Definition
	d.Group, _ = str(doc, "spec", "group")
	d.Version, _ = definitionVersion(doc)
	d.Plural, _ = str(doc, "spec", "names", "plural")
	d.Singular, _ = str(doc, "spec", "names", "singular")
	d.Kind, _ = str(doc, "spec", "names", "kind")
	d.Name = d.Plural + "." + d.Group
	return d
}
