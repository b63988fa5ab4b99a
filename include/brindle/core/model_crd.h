/*
 * Calico's kinds as CustomResourceDefinitions in crd.projectcalico.org/v1 (the
 * Kubernetes datastore), generated from the model's own field tables: one
 * source of truth for what brindlectl validates and what the apiserver
 * validates and prunes. docs/crds.md says what is shipped and how.
 */
#ifndef BRINDLE_MODEL_CRD_H
#define BRINDLE_MODEL_CRD_H

#include <brindle/core/jv.h>
#include <brindle/core/model.h>
#include <brindle/core/strbuf.h>

#define MODEL_CRD_GROUP	      "crd.projectcalico.org"
#define MODEL_CRD_VERSION     "v1"
#define MODEL_CRD_API_VERSION "crd.projectcalico.org/v1"

/*
 * The OpenAPI v3 structural schema of @k's custom resources: apiVersion,
 * kind, metadata (an object, left to the apiserver), spec from the kind's
 * field table (types, enums, required fields, ranges, int-or-string).
 * NULL when @k is not a CRD (k->crd_kind is NULL). Allocated in @a.
 */
struct jv *model_crd_schema(struct arena *a, const struct br_kind *k);
/*
 * A spec as kind @k's custom resource stores it (out), and back (in): the
 * fields Calico's CRD keeps as strings where the model has a bool
 * (BlockAffinity's deleted: "true"/"false", "" read as false). Anything else
 * is as it was.
 */
struct jv *model_crd_spec_out(struct arena *a, const struct br_kind *k, const struct jv *spec);
struct jv *model_crd_spec_in(struct arena *a, const struct br_kind *k, const struct jv *spec);

/*
 * The whole CustomResourceDefinition (apiextensions.k8s.io/v1) of @k:
 * "<crd_plural>.crd.projectcalico.org", version v1 served and stored, scope
 * from k->namespaced. NULL when @k is not a CRD.
 */
struct jv *model_crd(struct arena *a, const struct br_kind *k);

/*
 * Every CRD of the kind table as one multi-document YAML stream, in the
 * table's order, after a comment saying it is generated (deploy/crds.yaml).
 */
void model_crds_yaml(struct strbuf *out);

#endif
