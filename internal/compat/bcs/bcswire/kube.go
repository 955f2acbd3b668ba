package bcswire

import (
	"encoding/json"
	"time"
)

// bcs-client's custom resource commands decode Kubernetes' types (the API server BCS's
// driver passed them to answered them): apiextensions v1beta1's CustomResourceDefinition
// and its list, metav1's Status, and a custom resource's list as a JSON object with
// items.

// KubeObjectMeta is metav1.ObjectMeta.
type KubeObjectMeta struct {
	Name                       string            `json:"name,omitempty"`
	GenerateName               string            `json:"generateName,omitempty"`
	Namespace                  string            `json:"namespace,omitempty"`
	SelfLink                   string            `json:"selfLink,omitempty"`
	UID                        string            `json:"uid,omitempty"`
	ResourceVersion            string            `json:"resourceVersion,omitempty"`
	Generation                 int64             `json:"generation,omitempty"`
	CreationTimestamp          time.Time         `json:"creationTimestamp,omitempty"`
	DeletionTimestamp          *time.Time        `json:"deletionTimestamp,omitempty"`
	DeletionGracePeriodSeconds *int64            `json:"deletionGracePeriodSeconds,omitempty"`
	Labels                     map[string]string `json:"labels,omitempty"`
	Annotations                map[string]string `json:"annotations,omitempty"`
	OwnerReferences            []json.RawMessage `json:"ownerReferences,omitempty"`
	Finalizers                 []string          `json:"finalizers,omitempty"`
	ClusterName                string            `json:"clusterName,omitempty"`
	ManagedFields              []json.RawMessage `json:"managedFields,omitempty"`
}

// KubeListMeta is metav1.ListMeta.
type KubeListMeta struct {
	SelfLink           string `json:"selfLink,omitempty"`
	ResourceVersion    string `json:"resourceVersion,omitempty"`
	Continue           string `json:"continue,omitempty"`
	RemainingItemCount *int64 `json:"remainingItemCount,omitempty"`
}

// CRDNames is v1beta1.CustomResourceDefinitionNames.
type CRDNames struct {
	Plural     string   `json:"plural"`
	Singular   string   `json:"singular,omitempty"`
	ShortNames []string `json:"shortNames,omitempty"`
	Kind       string   `json:"kind"`
	ListKind   string   `json:"listKind,omitempty"`
	Categories []string `json:"categories,omitempty"`
}

// CustomResourceDefinition is v1beta1.CustomResourceDefinition (the validation schema,
// subresources and conversion as raw JSON: bcs-client reads none of them).
type CustomResourceDefinition struct {
	APIVersion string         `json:"apiVersion,omitempty"`
	Kind       string         `json:"kind,omitempty"`
	Metadata   KubeObjectMeta `json:"metadata,omitempty"`
	Spec       struct {
		Group    string   `json:"group"`
		Version  string   `json:"version,omitempty"`
		Names    CRDNames `json:"names"`
		Scope    string   `json:"scope"`
		Versions []struct {
			Name                     string          `json:"name"`
			Served                   bool            `json:"served"`
			Storage                  bool            `json:"storage"`
			Schema                   json.RawMessage `json:"schema,omitempty"`
			Subresources             json.RawMessage `json:"subresources,omitempty"`
			AdditionalPrinterColumns json.RawMessage `json:"additionalPrinterColumns,omitempty"`
		} `json:"versions,omitempty"`
		Validation               json.RawMessage `json:"validation,omitempty"`
		Subresources             json.RawMessage `json:"subresources,omitempty"`
		AdditionalPrinterColumns json.RawMessage `json:"additionalPrinterColumns,omitempty"`
		Conversion               json.RawMessage `json:"conversion,omitempty"`
		PreserveUnknownFields    *bool           `json:"preserveUnknownFields,omitempty"`
	} `json:"spec"`
	Status *struct {
		Conditions     json.RawMessage `json:"conditions"`
		AcceptedNames  CRDNames        `json:"acceptedNames"`
		StoredVersions []string        `json:"storedVersions"`
	} `json:"status,omitempty"`
}

// CustomResourceDefinitionList is v1beta1.CustomResourceDefinitionList.
type CustomResourceDefinitionList struct {
	APIVersion string                     `json:"apiVersion,omitempty"`
	Kind       string                     `json:"kind,omitempty"`
	Metadata   KubeListMeta               `json:"metadata,omitempty"`
	Items      []CustomResourceDefinition `json:"items"`
}

// CustomResource is what bcs-client reads of a custom resource: its type, its metadata
// (name, namespace, creationTimestamp) and whatever else it holds.
type CustomResource struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Metadata   KubeObjectMeta  `json:"metadata"`
	Spec       json.RawMessage `json:"spec,omitempty"`
	Status     json.RawMessage `json:"status,omitempty"`
}

// CustomResourceList is a custom resource's list: bcs-client reads its items.
type CustomResourceList struct {
	APIVersion string           `json:"apiVersion"`
	Kind       string           `json:"kind"`
	Metadata   KubeListMeta     `json:"metadata"`
	Items      []CustomResource `json:"items"`
}

// KubeStatus is metav1.Status, the API server's answer to a failed call; bcs-client
// reports its message.
type KubeStatus struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Metadata   KubeListMeta    `json:"metadata"`
	Status     string          `json:"status"`
	Message    string          `json:"message"`
	Reason     string          `json:"reason"`
	Details    json.RawMessage `json:"details,omitempty"`
	Code       int32           `json:"code"`
}
