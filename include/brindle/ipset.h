/*
 * ip sets (netfilter ipset), through libipset: the kernel backend
 * (lib/ipset_kernel.c) is the only file with libipset headers; a recording
 * backend (lib/ipset_record.c) simulates the kernel's sets for unit tests.
 * The prefix is "ips_" because libipset owns "ipset_".
 *
 * Members are text, in the form `ipset save` prints them, so what felix
 * computes and what the kernel lists compare as strings:
 *   hash:net     "10.0.0.0/24", and a host "10.0.0.1" (no /32)
 *   hash:ip      "10.0.0.1"
 *   hash:ip,port "10.0.0.1,tcp:8080" (udp:, sctp:)
 * ips_member_canonical() puts a member into that form.
 *
 * Writes are batched: a batch is a list of operations applied in order, in
 * as few netlink messages as libipset allows; an operation's failure is
 * reported with its index and the others still run.
 */
#ifndef BRINDLE_IPSET_H
#define BRINDLE_IPSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <brindle/strbuf.h>
#include <brindle/util.h>

/* The kernel's limit is 32 bytes with the NUL. */
#define IPS_NAME_MAX 31

enum ips_type {
	IPS_HASH_NET,
	IPS_HASH_IP,
	IPS_HASH_IP_PORT,
};

struct ips_info {
	char name[IPS_NAME_MAX + 1];
	enum ips_type type;
	uint8_t family;	  /* AF_INET, AF_INET6 */
	uint32_t maxelem; /* 0: the default (1048576, as Felix's MaxIpsetSize) */
};

/* "hash:net" etc.; NULL for an unknown value. */
const char *ips_type_name(enum ips_type t);
int ips_type_parse(const char *s, enum ips_type *out) must_check;

/*
 * Put @member of a set of type @t and @family into the form `ipset save`
 * prints (into @out, at least 64 bytes). -EINVAL when it is not a valid
 * member ("10.0.0.300", "10.0.0.1,tcp:99999", a /24 in a hash:ip set...).
 */
int ips_member_canonical(enum ips_type t, uint8_t family, const char *member, char *out,
			 size_t size) must_check;

/* --- reading -------------------------------------------------------------------- */

struct ips_set {
	struct ips_info info;
	char **members; /* canonical, sorted by strcmp */
	size_t n;
};

struct ips_list {
	struct ips_set *v;
	size_t n;
};

void ips_list_free(struct ips_list *l);

/* --- writing -------------------------------------------------------------------- */

enum ips_op_kind {
	IPS_OP_CREATE,	/* info */
	IPS_OP_ADD,	/* name, member (an existing member is not an error) */
	IPS_OP_DEL,	/* name, member (a missing member is not an error) */
	IPS_OP_FLUSH,	/* name */
	IPS_OP_SWAP,	/* name, name2 */
	IPS_OP_DESTROY, /* name (a missing set is not an error) */
};

struct ips_batch;

struct ips_batch *ips_batch_new(void);
void ips_batch_free(struct ips_batch *b);
void ips_batch_reset(struct ips_batch *b);
size_t ips_batch_count(const struct ips_batch *b);
void ips_batch_create(struct ips_batch *b, const struct ips_info *info);
void ips_batch_add(struct ips_batch *b, const char *set, const char *member);
void ips_batch_del(struct ips_batch *b, const char *set, const char *member);
void ips_batch_flush(struct ips_batch *b, const char *set);
void ips_batch_swap(struct ips_batch *b, const char *set, const char *other);
void ips_batch_destroy(struct ips_batch *b, const char *set);
/* "add cali40s:abc 10.0.0.1" (ipset restore syntax), for logs. */
const char *ips_batch_describe(struct ips_batch *b, size_t i);

/* --- backends ------------------------------------------------------------------- */

struct ips;

struct ips_ops {
	/* Every set whose name starts with @prefix, with its members. */
	int (*list)(struct ips *s, const char *prefix, struct ips_list *out);
	/* Only the names (and headers) of those sets: cheaper, for a quick check. */
	int (*list_names)(struct ips *s, const char *prefix, struct ips_list *out);
	/*
	 * Apply every operation in order. Returns 0 when all succeeded, the
	 * number that failed otherwise (errs[i], when @errs is not NULL, is 0 or
	 * a negative errno for operation i; the first failure's text is in
	 * ips_last_error), or a negative errno when nothing could be sent.
	 */
	int (*apply)(struct ips *s, struct ips_batch *b, int *errs);
	void (*close)(struct ips *s);
};

struct ips {
	const struct ips_ops *ops;
	struct strbuf err;
};

/* The kernel backend, in the caller's network namespace. */
int ips_open_kernel(struct ips **out) must_check;
/* The recording backend: no sets; every applied operation is logged. */
struct ips *ips_open_recording(void);
void ips_close(struct ips *s);
const char *ips_last_error(const struct ips *s);

int ips_list_sets(struct ips *s, const char *prefix, struct ips_list *out) must_check;
int ips_list_names(struct ips *s, const char *prefix, struct ips_list *out) must_check;
int ips_apply(struct ips *s, struct ips_batch *b, int *errs) must_check;

/* Recording backend only: the log of applied operations (ips_batch_describe form). */
size_t ips_record_count(const struct ips *s);
const char *ips_record_entry(const struct ips *s, size_t i);
void ips_record_clear_log(struct ips *s);
/* Make the next operation whose description contains @what fail with @err. */
void ips_record_fail_next(struct ips *s, const char *what, int err);

#endif
