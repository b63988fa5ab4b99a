/*
 * The kernel iptables backend: legacy tables (iptables for AF_INET,
 * ip6tables for AF_INET6) read and written with the kernel's own calls
 * (IPT_SO_GET_INFO and IPT_SO_GET_ENTRIES, IPT_SO_SET_REPLACE and
 * IPT_SO_SET_ADD_COUNTERS), the table edited in place by ipt_blob.
 *
 * Why not libiptc: it holds two or three copies of a table while it writes
 * one (8 MB each at felix's 13,000 rules, most of felix's peak memory); the
 * kernel needs one. What libiptc does besides is kept: the xtables lock,
 * user chains in name order, the counters of the rules that stay.
 *
 * A session holds the xtables lock (flock on /run/xtables.lock, the file
 * iptables, kube-proxy and felix of every namespace on the machine share)
 * from begin to commit or abort, and the whole table in one mapped buffer:
 * edits change the buffer, commit replaces the table in one setsockopt.
 * Rules come from ipt_rule_parse; set names are resolved with the ipset
 * getsockopt interface, cached for the session. Nothing here decides what
 * is ours: the caller reads ids and targets from the state begin returns.
 */
#include <brindle/core/arena.h>
#include <brindle/core/hash.h>
#include <brindle/core/hmap.h>
#include <brindle/core/ipt_blob.h>
#include <brindle/sys/ipt.h>
#include <brindle/sys/clock.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <netinet/in.h>
#include <linux/netfilter_ipv4/ip_tables.h>
#include <linux/netfilter_ipv6/ip6_tables.h>
#include <linux/netfilter/ipset/ip_set.h>

#define DEFAULT_LOCK_PATH "/run/xtables.lock"

/* The two families' calls and entry layouts; their headers and requests are alike. */
struct tc {
	int af, level; /* the sockopt level: IPPROTO_IP or IPPROTO_IPV6 */
	int so_get_info, so_get_entries, so_set_replace, so_set_add_counters;
	/* struct ipt_entry or struct ip6t_entry: its size, where its fields are */
	size_t entry_size, counters_off, next_off;
	size_t at;	  /* where the entries start in struct ipt_replace (ip6t_replace) */
	const char *tool; /* for messages */
};

static const struct tc tc4 = {
	.af = AF_INET,
	.level = IPPROTO_IP,
	.so_get_info = IPT_SO_GET_INFO,
	.so_get_entries = IPT_SO_GET_ENTRIES,
	.so_set_replace = IPT_SO_SET_REPLACE,
	.so_set_add_counters = IPT_SO_SET_ADD_COUNTERS,
	.entry_size = sizeof(struct ipt_entry),
	.counters_off = offsetof(struct ipt_entry, counters),
	.next_off = offsetof(struct ipt_entry, next_offset),
	.at = offsetof(struct ipt_replace, entries),
	.tool = "iptables",
};

static const struct tc tc6 = {
	.af = AF_INET6,
	.level = IPPROTO_IPV6,
	.so_get_info = IP6T_SO_GET_INFO,
	.so_get_entries = IP6T_SO_GET_ENTRIES,
	.so_set_replace = IP6T_SO_SET_REPLACE,
	.so_set_add_counters = IP6T_SO_SET_ADD_COUNTERS,
	.entry_size = sizeof(struct ip6t_entry),
	.counters_off = offsetof(struct ip6t_entry, counters),
	.next_off = offsetof(struct ip6t_entry, next_offset),
	.at = offsetof(struct ip6t_replace, entries),
	.tool = "ip6tables",
};

/* The IPv6 requests' headers are the IPv4 ones' (this file fills them as IPv4's). */
_Static_assert(offsetof(struct ipt_replace, entries) == offsetof(struct ip6t_replace, entries),
	       "replace headers differ");
_Static_assert(offsetof(struct ipt_replace, counters) == offsetof(struct ip6t_replace, counters),
	       "replace headers differ");
_Static_assert(offsetof(struct ipt_get_entries, entrytable) ==
		       offsetof(struct ip6t_get_entries, entrytable),
	       "get_entries headers differ");
_Static_assert(sizeof(struct ipt_getinfo) == sizeof(struct ip6t_getinfo), "getinfo differs");

/* A 16-bit field of an entry, at @off (tc.next_off). */
static uint16_t entry_u16(const void *e, size_t off)
{
	uint16_t v;
	memcpy(&v, (const char *)e + off, sizeof(v));
	return v;
}

struct ipt_kernel {
	struct ipt ipt;
	const struct tc *tc;
	int table_sock; /* a raw socket of the family, for the table calls; -1 until needed */
	char *lock_path;
	unsigned lock_wait_ms;
	int lock_fd; /* held while a session is open; -1 otherwise */
	struct ipt_blob *blob; /* the session's table; NULL outside a session */
	char table[XT_TABLE_MAXNAMELEN];
	struct ipt_sets sets;
	int set_sock; /* for SO_IP_SET; -1 until a set is looked up */
	unsigned set_version;
	struct hmap set_index; /* name → index + 1, for this session */
};

static struct ipt_kernel *kernel_of(struct ipt *t)
{
	return container_of(t, struct ipt_kernel, ipt);
}

printf_like(3, 4) static int fail(struct ipt_kernel *k, int code, const char *fmt, ...)
{
	va_list ap;
	sb_reset(&k->ipt.err);
	va_start(ap, fmt);
	sb_vaddf(&k->ipt.err, fmt, ap);
	va_end(ap);
	return code;
}

/* --- the xtables lock ------------------------------------------------------------ */

static int lock(struct ipt_kernel *k)
{
	int fd = open(k->lock_path, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0)
		return fail(k, -errno, "open %s: %s", k->lock_path, strerror(errno));
	uint64_t deadline = now_ms() + k->lock_wait_ms;
	unsigned sleep_us = 1000;
	for (;;) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			k->lock_fd = fd;
			return 0;
		}
		if (errno != EWOULDBLOCK && errno != EINTR) {
			int e = errno;
			close(fd);
			return fail(k, -e, "flock %s: %s", k->lock_path, strerror(e));
		}
		uint64_t now = now_ms();
		if (now >= deadline)
			break;
		uint64_t left_us = (deadline - now) * 1000;
		struct timespec ts = { 0, (long)MIN(sleep_us, left_us) * 1000 };
		nanosleep(&ts, NULL);
		sleep_us = MIN(sleep_us * 2, 50000u);
	}
	close(fd);
	return fail(k, -EBUSY, "the xtables lock %s is held by another process (waited %u ms)",
		    k->lock_path, k->lock_wait_ms);
}

static void unlock(struct ipt_kernel *k)
{
	if (k->lock_fd >= 0)
		close(k->lock_fd); /* releases the flock */
	k->lock_fd = -1;
}

/* --- ip set names ---------------------------------------------------------------- */

static int set_socket(struct ipt_kernel *k)
{
	if (k->set_sock >= 0)
		return 0;
	int fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
	if (fd < 0)
		return -errno;
	struct ip_set_req_version req = { .op = IP_SET_OP_VERSION };
	socklen_t size = sizeof(req);
	if (getsockopt(fd, SOL_IP, SO_IP_SET, &req, &size) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	k->set_sock = fd;
	k->set_version = req.version;
	return 0;
}

static int kernel_set_index(void *ctx, const char *name, uint16_t *index)
{
	struct ipt_kernel *k = ctx;
	uintptr_t cached = (uintptr_t)hmap_get(&k->set_index, name);
	if (cached) {
		*index = (uint16_t)(cached - 1);
		return 0;
	}
	int e = set_socket(k);
	if (e)
		return e;
	struct ip_set_req_get_set req = { .op = IP_SET_OP_GET_BYNAME, .version = k->set_version };
	socklen_t size = sizeof(req);
	snprintf(req.set.name, sizeof(req.set.name), "%s", name);
	if (getsockopt(k->set_sock, SOL_IP, SO_IP_SET, &req, &size) < 0)
		return -errno;
	if (req.set.index == IPSET_INVALID_ID)
		return -ENOENT;
	hmap_put(&k->set_index, name, (void *)((uintptr_t)req.set.index + 1));
	*index = req.set.index;
	return 0;
}

static int kernel_set_name(void *ctx, uint16_t index, char *name)
{
	struct ipt_kernel *k = ctx;
	int e = set_socket(k);
	if (e)
		return e;
	struct ip_set_req_get_set req = { .op = IP_SET_OP_GET_BYINDEX, .version = k->set_version };
	socklen_t size = sizeof(req);
	req.set.index = index;
	if (getsockopt(k->set_sock, SOL_IP, SO_IP_SET, &req, &size) < 0)
		return -errno;
	if (!req.set.name[0])
		return -ENOENT;
	snprintf(name, IPT_SET_NAME_MAX + 1, "%.*s", IPT_SET_NAME_MAX, req.set.name);
	return 0;
}

/* --- the table's memory and calls ---------------------------------------------- */

/*
 * The session's buffer, mapped on its own: it grows without a copy
 * (mremap) and goes back to the system whole when the session ends, which
 * malloc would not promise for a buffer of megabytes.
 */
static void *map_resize(void *ctx, void *buf, size_t old_cap, size_t new_cap)
{
	(void)ctx;
	if (!new_cap) {
		if (buf)
			munmap(buf, old_cap);
		return NULL;
	}
	void *p = buf ? mremap(buf, old_cap, new_cap, MREMAP_MAYMOVE)
		      : mmap(NULL, new_cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			     0);
	return p == MAP_FAILED ? NULL : p;
}

static int table_socket(struct ipt_kernel *k)
{
	if (k->table_sock >= 0)
		return 0;
	int fd = socket(k->tc->af, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
	if (fd < 0)
		return fail(k, -errno, "raw socket: %s", strerror(errno));
	k->table_sock = fd;
	return 0;
}

static int get_info(struct ipt_kernel *k, const char *table, struct ipt_getinfo *info)
{
	int e = table_socket(k);
	if (e)
		return e;
	memset(info, 0, sizeof(*info));
	if (strlen(table) >= sizeof(info->name))
		return fail(k, -ENOENT, "no table %s", table);
	memcpy(info->name, table, strlen(table));
	socklen_t len = sizeof(*info);
	if (getsockopt(k->table_sock, k->tc->level, k->tc->so_get_info, info, &len) < 0)
		return fail(k, -errno, "%s table %s: %s", k->tc->tool, table, strerror(errno));
	return 0;
}

/* Reads @table into a new blob: its entries where a replace request will want them. */
static int read_table(struct ipt_kernel *k, const char *table)
{
	const struct tc *tc = k->tc;
	const size_t get_at = offsetof(struct ipt_get_entries, entrytable);
	for (int tries = 0;; tries++) {
		struct ipt_getinfo gi;
		int e = get_info(k, table, &gi);
		if (e)
			return e;
		size_t cap = tc->at + gi.size + 65536; /* room for a change's new rules */
		uint8_t *buf = map_resize(NULL, NULL, 0, cap);
		if (!buf)
			return fail(k, -ENOMEM, "no memory for %s table %s (%u bytes)", tc->tool,
				    table, gi.size);
		struct ipt_get_entries *ge = (void *)(buf + tc->at - get_at);
		memcpy(ge->name, gi.name, sizeof(ge->name));
		ge->size = gi.size;
		socklen_t len = (socklen_t)(get_at + gi.size);
		if (getsockopt(k->table_sock, tc->level, tc->so_get_entries, ge, &len) < 0) {
			e = errno;
			map_resize(NULL, buf, cap, 0);
			/* EAGAIN: the table changed size between the two calls. */
			if (e == EAGAIN && tries < 3)
				continue;
			return fail(k, -e, "reading %s table %s: %s", tc->tool, table, strerror(e));
		}
		struct ipt_blob_info info = { .valid_hooks = gi.valid_hooks,
					      .num_entries = gi.num_entries,
					      .size = gi.size };
		memcpy(info.hook_entry, gi.hook_entry, sizeof(info.hook_entry));
		memcpy(info.underflow, gi.underflow, sizeof(info.underflow));
		struct strbuf msg = STRBUF_INIT;
		sb_init(&msg);
		e = ipt_blob_parse(tc->af, map_resize, NULL, buf, cap, tc->at, &info, &k->blob,
				   &msg);
		if (e)
			fail(k, e, "reading %s table %s: %s", tc->tool, table, sb_str(&msg));
		sb_free(&msg);
		return e;
	}
}

/*
 * Replaces the table with the laid-out blob, then gives the rules that
 * stayed their counters back (the kernel hands the old table's counters out
 * with the replace; new entries start from zero), as libiptc does.
 */
static int write_table(struct ipt_kernel *k)
{
	const struct tc *tc = k->tc;
	struct ipt_blob_info info;
	uint32_t *old_of = NULL;
	struct strbuf msg = STRBUF_INIT;
	sb_init(&msg);
	int e = ipt_blob_layout(k->blob, &info, &old_of, &msg);
	if (e) {
		fail(k, e, "committing %s table %s: %s", tc->tool, k->table, sb_str(&msg));
		sb_free(&msg);
		return e;
	}
	sb_free(&msg);
	uint32_t n_old = ipt_blob_entries_read(k->blob);
	struct xt_counters *old = xcalloc(n_old ? n_old : 1, sizeof(*old));
	struct ipt_replace *rp = (void *)ipt_blob_buffer(k->blob);
	memset(rp, 0, tc->at);
	memcpy(rp->name, k->table, strlen(k->table));
	rp->valid_hooks = info.valid_hooks;
	rp->num_entries = info.num_entries;
	rp->size = info.size;
	memcpy(rp->hook_entry, info.hook_entry, sizeof(rp->hook_entry));
	memcpy(rp->underflow, info.underflow, sizeof(rp->underflow));
	rp->num_counters = n_old;
	rp->counters = old;
	if (setsockopt(k->table_sock, tc->level, tc->so_set_replace, rp,
		       (socklen_t)(tc->at + info.size)) < 0) {
		e = errno;
		fail(k, -e, "committing %s table %s: %s", tc->tool, k->table,
		     e == ELOOP	   ? "its jumps make a loop"
		     : e == EAGAIN ? "someone changed the table without the xtables lock"
				   : strerror(e));
		free(old);
		free(old_of);
		return -e;
	}
	size_t size = sizeof(struct xt_counters_info) + (size_t)info.num_entries * sizeof(*old);
	struct xt_counters_info *ci = xcalloc(1, size);
	memcpy(ci->name, k->table, strlen(k->table));
	ci->num_counters = info.num_entries;
	for (size_t i = 0; i < info.num_entries; i++)
		if (old_of[i] < n_old)
			ci->counters[i] = old[old_of[i]];
	if (setsockopt(k->table_sock, tc->level, tc->so_set_add_counters, ci, (socklen_t)size) < 0)
		e = fail(k, -errno, "%s table %s written, its counters not kept: %s", tc->tool,
			 k->table, strerror(errno));
	free(ci);
	free(old);
	free(old_of);
	return e;
}

/* --- sessions -------------------------------------------------------------------- */

static int session(struct ipt_kernel *k)
{
	if (!k->blob)
		return fail(k, -EINVAL, "no session: call begin first");
	return 0;
}

static void end_session(struct ipt_kernel *k)
{
	ipt_blob_free(k->blob);
	k->blob = NULL;
	hmap_clear(&k->set_index);
	unlock(k);
}

static int k_begin(struct ipt *t, const char *table, struct ipt_table_state *out)
{
	struct ipt_kernel *k = kernel_of(t);
	if (k->blob)
		return fail(k, -EINPROGRESS, "a session on table %s is open", k->table);
	if (strlen(table) >= sizeof(k->table))
		return fail(k, -ENOENT, "no table %s", table);
	snprintf(k->table, sizeof(k->table), "%s", table);
	hmap_clear(&k->set_index); /* sets may have been recreated since */
	int e = lock(k);
	if (e)
		return e;
	e = read_table(k, table);
	if (e) {
		unlock(k);
		return e;
	}
	ipt_blob_state(k->blob, out);
	return 0;
}

/* An edit's error: the blob's message, with the rule it was about and the table. */
static int edit_result(struct ipt_kernel *k, int e, const char *rule, struct strbuf *msg)
{
	if (e)
		fail(k, e, "%s%s%s in table %s", rule ? rule : "", rule ? ": " : "", sb_str(msg),
		     k->table);
	sb_free(msg);
	return e;
}

enum k_edit {
	K_NEW_CHAIN,
	K_FLUSH_CHAIN,
	K_DELETE_CHAIN,
	K_DELETE,
};

static int k_chain_edit(struct ipt *t, enum k_edit op, const char *chain, size_t pos)
{
	struct ipt_kernel *k = kernel_of(t);
	int e = session(k);
	if (e)
		return e;
	struct strbuf msg = STRBUF_INIT;
	sb_init(&msg);
	switch (op) {
	case K_NEW_CHAIN:
		e = ipt_blob_new_chain(k->blob, chain, &msg);
		break;
	case K_FLUSH_CHAIN:
		e = ipt_blob_flush_chain(k->blob, chain, &msg);
		break;
	case K_DELETE_CHAIN:
		e = ipt_blob_delete_chain(k->blob, chain, &msg);
		break;
	case K_DELETE:
		e = ipt_blob_delete(k->blob, chain, pos, &msg);
		break;
	}
	return edit_result(k, e, NULL, &msg);
}

static int k_new_chain(struct ipt *t, const char *chain)
{
	return k_chain_edit(t, K_NEW_CHAIN, chain, 0);
}

static int k_flush_chain(struct ipt *t, const char *chain)
{
	return k_chain_edit(t, K_FLUSH_CHAIN, chain, 0);
}

static int k_delete_chain(struct ipt *t, const char *chain)
{
	return k_chain_edit(t, K_DELETE_CHAIN, chain, 0);
}

static int k_delete(struct ipt *t, const char *chain, size_t pos)
{
	return k_chain_edit(t, K_DELETE, chain, pos);
}

/* One rule written into @chain: inserted at @pos, appended, or replacing rule @pos. */
static int k_write(struct ipt *t, enum ipt_blob_write op, const char *chain, size_t pos,
		   const char *rule)
{
	struct ipt_kernel *k = kernel_of(t);
	int e = session(k);
	if (e)
		return e;
	struct strbuf msg = STRBUF_INIT;
	sb_init(&msg);
	void *en = NULL;
	size_t len;
	e = ipt_rule_parse(k->tc->af, rule, &k->sets, &en, &len, &msg);
	if (!e)
		e = ipt_blob_write(k->blob, op, chain, pos, en, len, &msg);
	free(en);
	return edit_result(k, e, rule, &msg);
}

static int k_insert(struct ipt *t, const char *chain, size_t pos, const char *rule)
{
	return k_write(t, IPT_BLOB_INSERT, chain, pos, rule);
}

static int k_append(struct ipt *t, const char *chain, const char *rule)
{
	return k_write(t, IPT_BLOB_APPEND, chain, 0, rule);
}

static int k_replace(struct ipt *t, const char *chain, size_t pos, const char *rule)
{
	return k_write(t, IPT_BLOB_REPLACE, chain, pos, rule);
}

static int k_commit(struct ipt *t)
{
	struct ipt_kernel *k = kernel_of(t);
	int e = session(k);
	if (e)
		return e;
	e = write_table(k);
	end_session(k);
	return e;
}

static void k_abort(struct ipt *t)
{
	end_session(kernel_of(t));
}

/*
 * The table's blob as the kernel hands it out (IPT_SO_GET_INFO, then
 * IPT_SO_GET_ENTRIES; IP6T_ for ip6tables), hashed with every rule's counters
 * zeroed: the same two getsockopts as a session's read, and one pass over
 * the bytes, with nothing parsed.
 */
static int k_fingerprint(struct ipt *t, const char *table, bool rules, uint64_t *out)
{
	struct ipt_kernel *k = kernel_of(t);
	const struct tc *tc = k->tc;
	struct ipt_getinfo info;
	int e = get_info(k, table, &info);
	if (e)
		return e;
	socklen_t len;
	uint64_t head = hash_fnv1a64(info.hook_entry, sizeof(info.hook_entry)) * 31 ^
			hash_fnv1a64(info.underflow, sizeof(info.underflow)) * 131 ^
			((uint64_t)info.size << 24) ^ info.num_entries;
	if (!rules) {
		*out = head;
		return 0;
	}
	for (int tries = 0;; tries++) {
		size_t size = sizeof(struct ipt_get_entries) + info.size;
		struct ipt_get_entries *ents = xcalloc(1, size);
		memcpy(ents->name, info.name, sizeof(ents->name));
		ents->size = info.size;
		len = (socklen_t)size;
		if (getsockopt(k->table_sock, tc->level, tc->so_get_entries, ents, &len) < 0) {
			int err = errno;
			free(ents);
			/* EAGAIN: the table changed size between the two calls. */
			if (err == EAGAIN && tries < 3 &&
			    (len = sizeof(info), getsockopt(k->table_sock, tc->level,
							    tc->so_get_info, &info, &len) == 0))
				continue;
			return fail(k, -err, "reading table %s: %s", table, strerror(err));
		}
		uint8_t *base = (uint8_t *)ents->entrytable;
		for (size_t off = 0; off + tc->entry_size <= ents->size;) {
			uint8_t *ent = base + off;
			memset(ent + tc->counters_off, 0, sizeof(struct xt_counters));
			uint16_t next = entry_u16(ent, tc->next_off);
			if (next < tc->entry_size)
				break;
			off += next;
		}
		/* SHA-1 through libcrypto: several times FNV's speed on megabytes of rules. */
		uint8_t md[32];
		uint64_t h;
		hash_digest(HASH_SHA1, base, ents->size, md);
		memcpy(&h, md, sizeof(h));
		*out = h ^ head;
		free(ents);
		return 0;
	}
}

static void k_close(struct ipt *t)
{
	struct ipt_kernel *k = kernel_of(t);
	end_session(k);
	if (k->set_sock >= 0)
		close(k->set_sock);
	if (k->table_sock >= 0)
		close(k->table_sock);
	hmap_clear(&k->set_index);
	free(k->lock_path);
	sb_free(&k->ipt.err);
	free(k);
}

static const struct ipt_ops kernel_ops = {
	.begin = k_begin,
	.new_chain = k_new_chain,
	.flush_chain = k_flush_chain,
	.delete_chain = k_delete_chain,
	.insert = k_insert,
	.append = k_append,
	.replace = k_replace,
	.delete = k_delete,
	.commit = k_commit,
	.abort = k_abort,
	.fingerprint = k_fingerprint,
	.close = k_close,
};

int ipt_open_kernel(int af, const char *lock_path, unsigned lock_wait_ms, struct ipt **out)
{
	if (af != AF_INET && af != AF_INET6)
		return -EAFNOSUPPORT;
	struct ipt_kernel *k = xcalloc(1, sizeof(*k));
	k->tc = af == AF_INET6 ? &tc6 : &tc4;
	k->table_sock = -1;
	k->ipt.ops = &kernel_ops;
	sb_init(&k->ipt.err);
	k->lock_path = xstrdup(lock_path ? lock_path : DEFAULT_LOCK_PATH);
	k->lock_wait_ms = lock_wait_ms;
	k->lock_fd = -1;
	k->set_sock = -1;
	k->sets.index_of = kernel_set_index;
	k->sets.name_of = kernel_set_name;
	k->sets.ctx = k;
	k->ipt.sets = &k->sets;
	*out = &k->ipt;
	return 0;
}
