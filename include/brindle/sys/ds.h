/*
 * The datastore: typed resources in and out, and a list+watch "syncer" that
 * reports "in sync" after the first full list. Shared by felix, confd, the
 * CNI plugin and brindlectl. etcd v3 is the backend today (lib/ds_etcd.c);
 * nothing here is etcd-specific, so a Kubernetes API backend can plug in
 * behind the same functions.
 *
 * Identity: (kind, scope, name). The scope is the namespace for namespaced
 * kinds, the node for BlockAffinity (affinities are per node), and NULL
 * otherwise. Names of IPAM kinds are their key form: a block "10.0.0.0-26",
 * a handle its handle ID.
 *
 * Errors are negative errno values; ds_last_error() has the text:
 *   -ENOENT     no such resource
 *   -EEXIST     create of something that exists
 *   -ECANCELED  the resource changed since it was read (revision mismatch)
 *   -EINVAL     a stored value that does not decode (message names the key)
 *   -EROFS      a write while the datastore is locked for migration (ds_set_locked)
 *   others      the backend is unreachable or failed
 */
#ifndef BRINDLE_DS_H
#define BRINDLE_DS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <brindle/core/model.h>
#include <brindle/core/strbuf.h>

struct loop;
struct ds;

struct ds_config {
	const char *type; /* "etcdv3" or "kubernetes" */
	const char *const *etcd_endpoints;
	size_t n_etcd_endpoints;
	const char *etcd_ca_file;
	const char *etcd_cert_file;
	const char *etcd_key_file;
	/* kubernetes: a kubeconfig file; NULL: KUBECONFIG, else in-cluster (see kube_conn_load) */
	const char *kubeconfig;
	const char *kube_context; /* kubernetes: a context other than current-context */
	long timeout_ms;
	/* How long an outage may last before a daemon reports not ready (struct ds_outage). */
	uint64_t outage_grace_ms;
};

/*
 * Fill @cfg from the environment; fields already set are kept. The type
 * comes from BRINDLE_DATASTORE_TYPE, else Calico's DATASTORE_TYPE, else
 * CALICO_DATASTORE_TYPE (default etcdv3); any type but "etcdv3" and
 * "kubernetes" is an error naming where it came from.
 *   etcdv3:     BRINDLE_ETCD_ENDPOINTS (default http://127.0.0.1:2379),
 *               BRINDLE_ETCD_CA_CERT_FILE, BRINDLE_ETCD_CERT_FILE, BRINDLE_ETCD_KEY_FILE.
 *   kubernetes: the kubeconfig from BRINDLE_KUBECONFIG (one path); none: NULL,
 *               which kube_conn_load takes as KUBECONFIG's list of files (merged as
 *               kubectl merges them), else in-cluster.
 *   both:       BRINDLE_DATASTORE_GRACE, the outage grace period (a duration such as
 *               "30s" or "1m", or seconds; default 30 s).
 * Strings point into the environment or @storage (freed by ds_config_free_storage).
 */
struct ds_config_storage {
	char **endpoints;
	size_t n;
};
int ds_config_from_env(struct ds_config *cfg, struct ds_config_storage *storage,
		       struct strbuf *err) must_check;
/* "a,b,c" into cfg->etcd_endpoints (kept in @storage). */
int ds_config_set_endpoints(struct ds_config *cfg, struct ds_config_storage *storage,
			    const char *list, struct strbuf *err) must_check;
void ds_config_free_storage(struct ds_config_storage *storage);

/* The scope of @o's identity (see the top of this file): namespace, a BlockAffinity's node, or
 * NULL. */
const char *ds_scope(const struct br_object *o);

int ds_open(const struct ds_config *cfg, struct ds **out, struct strbuf *err) must_check;
void ds_close(struct ds *d);
const char *ds_last_error(const struct ds *d);

int ds_get(struct ds *d, const struct br_kind *k, const char *scope, const char *name,
	   struct br_object **out) must_check;
/* All of kind @k (within @scope when not NULL), sorted by scope then name. */
int ds_list(struct ds *d, const struct br_kind *k, const char *scope, struct br_object ***out,
	    size_t *n) must_check;

/*
 * Several independent reads at once: a get of @name, or (@name NULL) the
 * list of @kind within @scope. On the Kubernetes API they go in parallel
 * over one connection (a CNI ADD's reads cost one round trip, not several);
 * elsewhere one after another. Each gets err (as ds_get's or ds_list's) and
 * obj (a get's, caller frees) or objs and n (a list's, caller frees with
 * model_free_all). Returns 0, or the first error; ds_last_error says the
 * last failure's reason.
 *
 * On the Kubernetes API a read may also be of a document of no kind of ours
 * (@kind NULL): a GET of the API path @path (a Pod, a Namespace), its answer
 * copied into @arena as @doc, or why it failed as @error (in @arena too).
 * Elsewhere such a read fails with -EOPNOTSUPP.
 */
struct ds_read {
	const struct br_kind *kind;
	const char *path;
	struct arena *arena;
	struct jv *doc;
	const char *error;
	const char *scope;
	const char *name;
	/*
	 * A list that may be a moment old: on Kubernetes the API server answers from
	 * its cache (resourceVersion=0) instead of first waiting for the cache to
	 * catch up with etcd (tens of milliseconds right after any write). Only for
	 * decisions whose writes are compare-and-swap anyway, or for data a moment's
	 * lag cannot hurt: IPAM's IPReservations (a reservation made as an address is
	 * being assigned races that assignment in Calico too, whatever the read).
	 */
	bool cached;
	int err;
	struct br_object *obj;
	struct br_object **objs;
	size_t n;
};
int ds_read_many(struct ds *d, struct ds_read *r, size_t n);
/*
 * Calico's rules for writing IP pools, against what is stored and among @objs:
 * an existing pool's cidr and blockSize do not change, pools do not overlap.
 * ds_create, ds_update and ds_write_seq check them; a caller writing a file
 * object by object checks the whole file first. 0, or -EINVAL (ds_last_error).
 */
int ds_check_pools(struct ds *d, struct br_object *const *objs, size_t n) must_check;
/*
 * Write IP pools as they are, without those rules: what a migration does with
 * a datastore that holds overlapping pools already (IPAM copes with them; the
 * rules only stop new ones being made).
 */
void ds_keep_pools(struct ds *d, bool keep);
/* Create; fails with -EEXIST. Sets uid and creationTimestamp when absent, and o->revision. */
int ds_create(struct ds *d, struct br_object *o) must_check;
/* Replace the stored object if its revision is still o->revision; updates o->revision. */
int ds_update(struct ds *d, struct br_object *o) must_check;
/*
 * Create or replace (kubectl apply): keeps the stored uid and creationTimestamp,
 * writes nothing when the content is unchanged. Retries lost races.
 */
int ds_apply(struct ds *d, struct br_object *o, bool *created, bool *changed) must_check;
/* Delete; with @revision > 0 only if unchanged since then. */
int ds_delete(struct ds *d, const struct br_kind *k, const char *scope, const char *name,
	      int64_t revision) must_check;

/*
 * Several writes, in the order given, each with its own condition: a create
 * must find its object absent (-EEXIST), an update or delete its object at
 * the revision given (-ECANCELED; -ENOENT when it is gone). The first write
 * that fails stops the rest. On success every written object's revision is
 * updated.
 *
 * Where the backend has transactions (etcd) the writes land together or
 * not at all: *done is 0 or @n. Where it has none (the Kubernetes API) they
 * land one by one and *done says how many did, so a caller orders them such
 * that every prefix is a state it can recover from (IPAM: Calico's order,
 * docs/ipam.md). @done may be NULL.
 */
enum ds_write_op {
	DS_WRITE_CREATE,
	DS_WRITE_UPDATE,
	DS_WRITE_DELETE
};
struct ds_write {
	enum ds_write_op op;
	struct br_object *obj; /* create, update; delete reads kind, scope, name, revision */
};
int ds_write_seq(struct ds *d, struct ds_write *w, size_t n, size_t *done) must_check;
/* Whether ds_write_seq's writes land together (the backend has transactions). */
bool ds_has_transactions(const struct ds *d);

/*
 * Apply @n objects (as ds_apply each) in transactions: a batch of at most
 * DS_APPLY_BATCH objects is read, and its creates and updates land together
 * or not at all; a batch someone else changed meanwhile is read and tried
 * again. More than DS_APPLY_BATCH objects, or more than DS_APPLY_BATCH_BYTES
 * of them, take several transactions, in order (etcd's defaults:
 * --max-txn-ops 128, each write one; --max-request-bytes 1.5 MiB). Needs ds_has_transactions.
 * Returns 0, or the first failing batch's error with what[i] set for the objects written before it
 * (DS_APPLY_NOT_WRITTEN for the rest).
 */
#define DS_APPLY_BATCH	     100
#define DS_APPLY_BATCH_BYTES (1u << 20)
enum ds_apply_outcome {
	DS_APPLY_NOT_WRITTEN,
	DS_APPLY_CREATED,
	DS_APPLY_CONFIGURED,
	DS_APPLY_UNCHANGED,
};
int ds_apply_all(struct ds *d, struct br_object **objs, size_t n,
		 enum ds_apply_outcome *what) must_check;

/*
 * While on, creates and updates are checked by the server and not stored:
 * the Kubernetes API's dryRun=All (validation, admission, conflicts).
 * -EOPNOTSUPP on a backend without it (etcd, whose transactions make it
 * needless). Node and WorkloadEndpoint writes on Kubernetes (patches of the
 * Node and the Pod) are not sent at all while it is on.
 */
int ds_set_dry_run(struct ds *d, bool on) must_check;

/*
 * The Kubernetes datastore's API client, for what only Kubernetes has (the
 * CNI plugin reads the pod it sets up); NULL on other datastores. Owned by
 * @d.
 */
struct kube_client;
struct kube_client *ds_kube_client(struct ds *d);

/* --- the migration lock (brindlectl datastore migrate) ---------------------------------- */

/*
 * A marker in the datastore that stops every write of every client of it:
 * while it is there ds_create, ds_update, ds_apply, ds_delete and
 * ds_write_seq fail with -EROFS and DS_LOCKED_MESSAGE, whichever program
 * calls them (brindlectl, brindle-cni, brindle-ipam). Reads and the syncer
 * go on. etcd: the key DS_ETCD_LOCK_KEY, checked absent inside each write's
 * own transaction, so no write that started before the lock lands after it.
 * Kubernetes: -EOPNOTSUPP (a migration goes from etcd to Kubernetes).
 */
#define DS_LOCKED_MESSAGE \
	"the datastore is locked for migration (brindlectl datastore migrate unlock)"
#define DS_ETCD_LOCK_KEY "/calico/brindle/v1/migration-lock"
/* Lock (@locked) or unlock; *changed (optional) says whether it was the other way. */
int ds_set_locked(struct ds *d, bool locked, bool *changed) must_check;
int ds_is_locked(struct ds *d, bool *locked) must_check;

/* --- the syncer --------------------------------------------------------------------------- */

enum ds_sync_status {
	DS_WAIT_FOR_DATASTORE, /* cannot reach the datastore */
	DS_RESYNC,	       /* (re)listing */
	DS_IN_SYNC,	       /* every kind listed; now watching */
};

struct ds_update {
	const struct br_kind *kind;
	const char *scope; /* namespace / node, or NULL */
	const char *name;
	/* The new value (the receiver takes ownership), or NULL when deleted. */
	struct br_object *obj;
	/* Set when a stored value failed to decode; obj is then NULL. */
	const char *error;
};

/*
 * Why the syncer re-lists (the label of a resync metric), with a sentence for
 * the log. A resync delivers only differences: content is compared, not
 * only revisions, and keys gone from the store are delivered as deletes.
 */
#define DS_RESYNC_COMPACTED	    "compacted"		 /* the watch's revision was compacted */
#define DS_RESYNC_BEHIND	    "revision_backwards" /* the store is below what was seen */
#define DS_RESYNC_CLUSTER_CHANGED   "cluster_changed"	 /* another cluster ID answered */
#define DS_RESYNC_STORE_CHANGED	    "store_changed" /* the store's history is not the one watched */
#define DS_RESYNC_MESSAGE_TOO_LARGE "message_too_large" /* a watch message over the limit */

struct ds_syncer_ops {
	void (*update)(void *ctx, const struct ds_update *u);
	/* @why says what is missing (NULL when in sync); valid during the call. */
	void (*status)(void *ctx, enum ds_sync_status status, const char *why);
	/* A resync begins (once per cause, not per kind). May be NULL. */
	void (*resync)(void *ctx, const char *reason, const char *detail);
};

struct ds_watch_spec {
	enum br_kind_id kind;
	const char *scope; /* only this namespace / node; NULL for all */
};

struct ds_syncer;

/*
 * List every kind in @specs, deliver each object as an update, report
 * DS_IN_SYNC, then deliver changes as they happen. Everything runs in @l.
 *
 * After a lost watch it resumes where it was, and checks on reconnecting
 * that the store is the one it watched (same cluster, not below a revision
 * seen, the same keys at the revision it resumes from). When it is not, or
 * after compaction, it re-lists and delivers only the differences. A watch
 * down for longer than a grace period (5 s) reports DS_WAIT_FOR_DATASTORE
 * with the reason; so does a list that fails.
 */
int ds_syncer_start(struct ds *d, struct loop *l, const struct ds_watch_spec *specs, size_t n,
		    const struct ds_syncer_ops *ops, void *ctx, struct ds_syncer **out) must_check;
void ds_syncer_stop(struct ds_syncer *s);
enum ds_sync_status ds_syncer_status(const struct ds_syncer *s);
/* Why the syncer is not in sync (NULL when it is): for readiness. */
const char *ds_syncer_why(const struct ds_syncer *s);

/*
 * A daemon's health as far as its datastore goes. An outage begins when the
 * syncer, having been in sync, leaves DS_IN_SYNC (the datastore unreachable,
 * or being listed again) and ends when it is back. The daemon stays ready
 * through an outage until it has lasted the grace period, so a datastore
 * restart or a short partition does not flap every node's readiness; what
 * it programmed stays as it is meanwhile. One log line when an outage
 * begins, one when it ends. Before the first sync there is no grace: not
 * ready until in sync.
 */
#define DS_OUTAGE_GRACE_DEFAULT_MS 30000

struct ds_outage {
	uint64_t grace_ms;
	bool ever_in_sync;
	enum ds_sync_status status;
	uint64_t since_ms; /* the outage's start; 0: none */
	char why[256];	   /* the syncer's last word on it */
};

void ds_outage_init(struct ds_outage *o, uint64_t grace_ms);
/* The syncer's status changed (its ops->status). */
void ds_outage_status(struct ds_outage *o, enum ds_sync_status st, const char *why,
		      uint64_t now_ms);
/* Ready as far as the datastore goes: in sync, or in an outage younger than the grace period. */
bool ds_outage_ok(const struct ds_outage *o, uint64_t now_ms);
/* How long the current outage has lasted (0: none). */
uint64_t ds_outage_ms(const struct ds_outage *o, uint64_t now_ms);
/*
 * The readiness line for it: "" when in sync; during the grace period
 * "datastore: unreachable for 12 s (not ready after 30 s): WHY"; after it
 * "datastore: unreachable for 42 s: WHY"; before the first sync
 * "datastore: waiting for the datastore: WHY" or "datastore: not in sync yet: WHY".
 */
void ds_outage_describe(const struct ds_outage *o, uint64_t now_ms, struct strbuf *out);

#endif
