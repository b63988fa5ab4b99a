/*
 * Calico kinds stored as custom resources in crd.projectcalico.org/v1, the
 * way Calico's Kubernetes datastore stores them, so objects written by
 * Calico read back here and the other way round:
 *
 *  - the CR has the kind's CRD kind and plural, and the object's name, except
 *    for the IPAM kinds, whose CR names Calico derives: an IPAMBlock
 *    "10-0-0-0-26" (the CIDR with '.', ':' and '/' as '-'), a BlockAffinity
 *    "<node>-10-0-0-0-26", an IPAMHandle its handle ID in lower case. Read
 *    back, their names come from their spec (cidr, node, handleID);
 *  - `spec` is copied as is;
 *  - the v3 object's metadata except namespace, resourceVersion and uid (and
 *    name, but for the policy kinds) goes into the annotation
 *    `projectcalico.org/metadata` as JSON; v3 labels and annotations whose
 *    key holds "projectcalico.org/" also go on the CR's own, and a read
 *    merges them back (the annotation's copy wins);
 *  - resourceVersion is the CR's (the object's revision); uid and
 *    creationTimestamp are the CR's. (Calico shows the CR's uid with each
 *    byte's bits reversed; Brindle shows it as is.)
 *
 * Pure: no I/O. lib/sys/ds_kube.c sends and receives the documents.
 */
#ifndef BRINDLE_KDD_CRD_H
#define BRINDLE_KDD_CRD_H

#include <brindle/core/arena.h>
#include <brindle/core/jv.h>
#include <brindle/core/model.h>
#include <brindle/core/model_crd.h>
#include <brindle/core/strbuf.h>

#define KDD_CRD_GROUP_VERSION	"crd.projectcalico.org/v1"
#define KDD_METADATA_ANNOTATION "projectcalico.org/metadata"

/* The CR's kind and plural of @k; false when @k is not stored as a CR. */
bool kdd_crd_names(const struct br_kind *k, const char **crd_kind, const char **crd_plural);

/*
 * The CR name of (@k, @scope, @name) (scope: the node of a BlockAffinity).
 * -EINVAL with the reason in @err when it cannot be one (over 253 characters).
 */
int kdd_crd_name(const struct br_kind *k, const char *scope, const char *name, struct strbuf *out,
		 struct strbuf *err) must_check;

/*
 * The CR that stores @o (a Calico kind with CRD names). With @for_update the
 * object's resourceVersion goes into the CR's metadata (the update's
 * precondition). NULL with the reason in @err when @o cannot be stored.
 */
struct jv *kdd_crd_encode(struct arena *a, const struct br_object *o, bool for_update,
			  struct strbuf *err);

/*
 * The object a CR of kind @k stores: decoded, defaulted and validated as a
 * file's would be, with its revision from resourceVersion. NULL with errors
 * naming the CR ("ippools/pool-1: spec.blockSize: ...").
 */
struct br_object *kdd_crd_decode(const struct br_kind *k, const struct jv *cr,
				 struct model_errors *errs);

/* A resourceVersion as a revision: -EINVAL when it is not a positive integer. */
int kdd_revision(const char *rv, int64_t *out) must_check;

#endif
