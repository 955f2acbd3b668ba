package compat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/bcs/bcswire"
)

// BCS's answers decode strictly (bcswire.Decode: a value of another JSON type fails, and
// so does a key BCS's type lacks): every answer of a BCS route as bcs-common's envelope,
// and a step's data, when the step names its type in "decode", as the type bcs-client
// decodes it into. The command, its route and that type are listed in docs/compat.md
// ("bcs-client, command by command").
var wireTypes = map[string]func() any{
	"Application":              func() any { return new(bcswire.Application) },
	"[]Application":            func() any { return new([]bcswire.Application) },
	"[]TaskGroup":              func() any { return new([]bcswire.TaskGroup) },
	"[]string":                 func() any { return new([]string) },
	"Version":                  func() any { return new(bcswire.Version) },
	"Deployment":               func() any { return new(bcswire.Deployment) },
	"[]Deployment":             func() any { return new([]bcswire.Deployment) },
	"ClusterResource":          func() any { return new(bcswire.ClusterResource) },
	"[]AgentSetting":           func() any { return new([]bcswire.AgentSetting) },
	"[]SendFailure":            func() any { return new([]bcswire.SendFailure) },
	"[]OfferWithDelta":         func() any { return new([]bcswire.OfferWithDelta) },
	"[]Transaction":            func() any { return new([]bcswire.Transaction) },
	"[]StorageItem[RCStatus]":  func() any { return new([]bcswire.StorageItem[bcswire.RCStatus]) },
	"[]StorageItem[PodStatus]": func() any { return new([]bcswire.StorageItem[bcswire.PodStatus]) },
	"[]StorageItem[Deployment]": func() any {
		return new([]bcswire.StorageItem[bcswire.Deployment])
	},
	"StorageItem[RCStatus]":   func() any { return new(bcswire.StorageItem[bcswire.RCStatus]) },
	"StorageItem[PodStatus]":  func() any { return new(bcswire.StorageItem[bcswire.PodStatus]) },
	"[]StorageItem[document]": func() any { return new([]bcswire.StorageItem[json.RawMessage]) },
	"StorageItem[document]":   func() any { return new(bcswire.StorageItem[json.RawMessage]) },
}

// bcsPath says whether path is one of BCS's routes, whose answers are BCS's envelope.
func bcsPath(path string) bool {
	return strings.HasPrefix(path, "/mesosdriver/v4/") || strings.HasPrefix(path, "/bcsapi/v4/")
}

// kubeTypes are the types bcs-client decodes the answers of BCS's custom resource routes
// into: Kubernetes' own, which the API server BCS's driver passed them to answered.
var kubeTypes = map[string]func() any{
	"CustomResourceDefinition":     func() any { return new(bcswire.CustomResourceDefinition) },
	"CustomResourceDefinitionList": func() any { return new(bcswire.CustomResourceDefinitionList) },
	"CustomResource":               func() any { return new(bcswire.CustomResource) },
	"CustomResourceList":           func() any { return new(bcswire.CustomResourceList) },
	"Status":                       func() any { return new(bcswire.KubeStatus) },
}

// kubePath says whether path is one of BCS's custom resource routes, whose answers are
// Kubernetes' objects rather than BCS's envelope.
func kubePath(path string) bool {
	if !bcsPath(path) {
		return false
	}
	return strings.Contains(path, "/customresourcedefinitions") || strings.Contains(path, "/customresources/")
}

// checkKube decodes a custom resource route's answer strictly as typ names it; every
// such step names one.
func checkKube(body []byte, typ string) error {
	newValue, ok := kubeTypes[typ]
	if !ok {
		return fmt.Errorf("no Kubernetes type %q in kubeTypes", typ)
	}
	return bcswire.Decode(body, newValue())
}

// checkWire decodes a BCS answer strictly: the envelope, then its data as typ names it.
// "null" is a write's answer (bcs-client reads its code and message only; berth's data
// is null); "document" a definition or a document, decoded as api/v4 decodes BCS's
// documents (unknown keys refused).
func checkWire(body []byte, typ string) error {
	var env bcswire.Response
	if err := bcswire.Decode(body, &env); err != nil {
		return fmt.Errorf("the envelope: %w", err)
	}
	if typ == "" {
		return nil
	}
	data := []byte(env.Data)
	switch typ {
	case "null":
		if !bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
			return fmt.Errorf("data is %s, want null", data)
		}
		return nil
	case "document":
		_, err := v4.Parse(data)
		return err
	}
	newValue, ok := wireTypes[typ]
	if !ok {
		return fmt.Errorf("no BCS type %q in wireTypes", typ)
	}
	into := newValue()
	if err := bcswire.Decode(data, into); err != nil {
		return fmt.Errorf("data as %s: %w", typ, err)
	}
	return documentsParse(into)
}

// documentsParse decodes the documents that storage answers for services, configmaps and
// secrets as api/v4 decodes BCS's documents.
func documentsParse(v any) error {
	var docs []json.RawMessage
	switch x := v.(type) {
	case *[]bcswire.StorageItem[json.RawMessage]:
		for _, it := range *x {
			docs = append(docs, it.Data)
		}
	case *bcswire.StorageItem[json.RawMessage]:
		docs = append(docs, x.Data)
	}
	for i, d := range docs {
		if _, err := v4.Parse(d); err != nil {
			return fmt.Errorf("document %d: %w", i, err)
		}
	}
	return nil
}
