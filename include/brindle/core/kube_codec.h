/*
 * The pure half of the Kubernetes API client: request paths, and reading
 * what the API server answers (a Status, a list page, a watch event) from jv
 * trees. No I/O; lib/sys/kube_client.c calls it, unit tests and fuzz
 * targets reach it directly.
 *
 * Errors map onto the datastore's errno contract (include/brindle/sys/ds.h):
 *   -ENOENT     404 NotFound
 *   -EEXIST     409 AlreadyExists
 *   -ECANCELED  409 Conflict (the resourceVersion of an update is stale)
 *   -ESTALE     410 Gone / Expired (a watch or continue token too old)
 *   -EACCES     401 Unauthorized, 403 Forbidden
 *   -EINVAL     400 BadRequest, 422 Invalid (the message names the field)
 *   -EAGAIN     429 TooManyRequests, 500-504 (try again later)
 *   -EIO        anything else
 *   -EPROTO     an answer of the wrong shape
 */
#ifndef BRINDLE_KUBE_CODEC_H
#define BRINDLE_KUBE_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <brindle/core/arena.h>
#include <brindle/core/jv.h>
#include <brindle/core/strbuf.h>

/*
 * The path of a collection or an object: "/api/v1/namespaces/ns/pods/name"
 * for the core group ("v1"), "/apis/<group>/<version>/..." otherwise.
 * @ns and @name may be NULL. Appended to @out.
 */
void kube_path(struct strbuf *out, const char *group_version, const char *ns, const char *plural,
	       const char *name);
/* @s percent-encoded for a URL query value (RFC 3986 unreserved kept). Appended to @out. */
void kube_query_escape(struct strbuf *out, const char *s);

/*
 * The errno of a failed answer (see above), with a one-line message in @msg:
 * the Status's message when the body is one, else the HTTP status. @body may
 * be NULL.
 */
int kube_status_errno(long http_status, const struct jv *body, struct strbuf *msg);

/* A page of a list: items in the caller's arena (from @v). */
struct kube_list_page {
	struct jv **items;
	size_t n;
	const char *resource_version; /* of the list ("" when absent) */
	const char *cont;	      /* metadata.continue; "" on the last page */
};
int kube_decode_list(const struct jv *v, struct kube_list_page *out, struct strbuf *err) must_check;

enum kube_event_type {
	KUBE_EVENT_ADDED,
	KUBE_EVENT_MODIFIED,
	KUBE_EVENT_DELETED,
	KUBE_EVENT_BOOKMARK,
	KUBE_EVENT_ERROR, /* object is a Status */
};

struct kube_event {
	enum kube_event_type type;
	const struct jv *object;
	const char *resource_version; /* object.metadata.resourceVersion ("" for ERROR) */
	/* ERROR: the Status's errno and HTTP code (410 when the watch is too old). */
	int error;
	long code;
};
/*
 * One line of a watch stream ({"type":..,"object":{..}}). -EPROTO with the
 * reason in @err when it is malformed; for an ERROR event, 0 with the
 * Status's message in @err.
 */
int kube_decode_event(const struct jv *v, struct kube_event *out, struct strbuf *err) must_check;

/* metadata.name / namespace / resourceVersion / uid of an object ("" when absent). */
const char *kube_meta_str(const struct jv *obj, const char *field);

#endif
