/*
 * ip sets with a kernel, through libipset: one table of backend functions;
 * the kernel backend (lib/sys/ipset_kernel.c) is the only file with libipset
 * headers, and a recording backend (<brindle/testing/ipset_record.h>)
 * simulates the kernel's sets for unit tests. Sets, members and batches are
 * <brindle/core/ipset_batch.h>; the error codes both backends share are
 * listed there.
 */
#ifndef BRINDLE_SYS_IPSET_H
#define BRINDLE_SYS_IPSET_H

#include <brindle/core/ipset_batch.h>

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
	 *
	 * Kernel backend: every operation gets its own result. Consecutive
	 * adds or dels to one set go out together, as many as fit in libipset's
	 * one-page message (about 125 IPv4 hash:net members, 75 IPv6
	 * hash:ip,port ones); the kernel stops such a message at its first
	 * failing member and names it, and the rest of the message is sent
	 * again, so each failure costs one more message. When the kernel
	 * refuses a whole message (the set vanished meanwhile: -ENOENT, or
	 * -EPERM) every member in it fails with that error. Create, flush, swap
	 * and destroy are a message each. Members and names are checked before
	 * anything is sent, and a set the batch writes members to without
	 * creating it costs one lookup (a round trip) per apply.
	 */
	int (*apply)(struct ips *s, struct ips_batch *b, int *errs);
	void (*close)(struct ips *s);
};

struct ips {
	const struct ips_ops *ops;
	struct strbuf err;
};

/*
 * The kernel backend, in the caller's network namespace (ip sets belong to
 * the namespace the netlink socket was opened in). libipset keeps process-wide
 * state (its set type table and a cache of set types), so every kernel
 * backend in the process takes one lock around its libipset calls: handles in
 * different threads are safe; one handle is used by one thread at a time.
 * -EPERM without CAP_NET_ADMIN.
 */
int ips_open_kernel(struct ips **out) must_check;
void ips_close(struct ips *s);
const char *ips_last_error(const struct ips *s);

/* On success *out is replaced (what it held is freed): start from { 0 }. */
int ips_list_sets(struct ips *s, const char *prefix, struct ips_list *out) must_check;
int ips_list_names(struct ips *s, const char *prefix, struct ips_list *out) must_check;
int ips_apply(struct ips *s, struct ips_batch *b, int *errs) must_check;

#endif
