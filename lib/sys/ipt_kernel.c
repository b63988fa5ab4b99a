/*
 * The kernel iptables backend: legacy tables through libiptc (libip4tc for
 * iptables, libip6tc for ip6tables), the only file with libiptc headers.
 *
 * A session holds the xtables lock (flock on /run/xtables.lock, the file
 * iptables, kube-proxy and felix of every namespace on the machine share)
 * from begin to commit or abort, and a libiptc handle with the whole table:
 * edits change the handle, commit replaces the table in one setsockopt.
 * Rules come from ipt_rule_parse; set names are resolved with the ipset
 * getsockopt interface, cached for the session. Nothing here decides what
 * is ours: the caller reads ids and targets from the state begin returns.
 */
#include <brindle/core/arena.h>
#include <brindle/core/hash.h>
#include <brindle/core/hmap.h>
#include <brindle/sys/ipt.h>
#include <brindle/sys/clock.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <netinet/in.h>
#include <libiptc/libiptc.h>
#include <libiptc/libip6tc.h>
#include <linux/netfilter/ipset/ip_set.h>

#define DEFAULT_LOCK_PATH "/run/xtables.lock"

/*
 * libiptc and libip6tc: the same calls for two entry types. One table per family, with the
 * entry-typed calls wrapped to take untyped entries (ipt_rule_parse's).
 */
struct tc {
	int af, level;			 /* the sockopt level: IPPROTO_IP or IPPROTO_IPV6 */
	int so_get_info, so_get_entries; /* IPT_SO_GET_* or IP6T_SO_GET_* */
	/* struct ipt_entry or struct ip6t_entry: its size, where its fields are */
	size_t entry_size, counters_off, target_off, next_off;
	const char *tool; /* for messages */
	struct xtc_handle *(*init)(const char *table);
	void (*free)(struct xtc_handle *h);
	const char *(*first_chain)(struct xtc_handle *h);
	const char *(*next_chain)(struct xtc_handle *h);
	int (*builtin)(const char *chain, struct xtc_handle *const h);
	int (*is_chain)(const char *chain, struct xtc_handle *const h);
	const void *(*first_rule)(const char *chain, struct xtc_handle *h);
	const void *(*next_rule)(const void *prev, struct xtc_handle *h);
	const char *(*get_target)(const void *e, struct xtc_handle *h);
	int (*create_chain)(const xt_chainlabel chain, struct xtc_handle *h);
	int (*flush_entries)(const xt_chainlabel chain, struct xtc_handle *h);
	int (*delete_chain)(const xt_chainlabel chain, struct xtc_handle *h);
	int (*append)(const xt_chainlabel chain, const void *e, struct xtc_handle *h);
	int (*insert)(const xt_chainlabel chain, const void *e, unsigned pos, struct xtc_handle *h);
	int (*replace)(const xt_chainlabel chain, const void *e, unsigned pos,
		       struct xtc_handle *h);
	int (*delete_num)(const xt_chainlabel chain, unsigned pos, struct xtc_handle *h);
	int (*commit)(struct xtc_handle *h);
	const char *(*strerror)(int err);
};

#define TC_WRAP(pfx, entry)                                                                  \
	static const void *pfx##_first_rule_any(const char *chain, struct xtc_handle *h)     \
	{                                                                                    \
		return pfx##_first_rule(chain, h);                                           \
	}                                                                                    \
	static const void *pfx##_next_rule_any(const void *prev, struct xtc_handle *h)       \
	{                                                                                    \
		return pfx##_next_rule((const struct entry *)prev, h);                       \
	}                                                                                    \
	static const char *pfx##_get_target_any(const void *e, struct xtc_handle *h)         \
	{                                                                                    \
		return pfx##_get_target((const struct entry *)e, h);                         \
	}                                                                                    \
	static int pfx##_append_any(const xt_chainlabel chain, const void *e,                \
				    struct xtc_handle *h)                                    \
	{                                                                                    \
		return pfx##_append_entry(chain, (const struct entry *)e, h);                \
	}                                                                                    \
	static int pfx##_insert_any(const xt_chainlabel chain, const void *e, unsigned pos,  \
				    struct xtc_handle *h)                                    \
	{                                                                                    \
		return pfx##_insert_entry(chain, (const struct entry *)e, pos, h);           \
	}                                                                                    \
	static int pfx##_replace_any(const xt_chainlabel chain, const void *e, unsigned pos, \
				     struct xtc_handle *h)                                   \
	{                                                                                    \
		return pfx##_replace_entry(chain, (const struct entry *)e, pos, h);          \
	}

TC_WRAP(iptc, ipt_entry)
TC_WRAP(ip6tc, ip6t_entry)

#define TC_TABLE(pfx)                                                                         \
	.init = pfx##_init, .free = pfx##_free, .first_chain = pfx##_first_chain,             \
	.next_chain = pfx##_next_chain, .builtin = pfx##_builtin, .is_chain = pfx##_is_chain, \
	.first_rule = pfx##_first_rule_any, .next_rule = pfx##_next_rule_any,                 \
	.get_target = pfx##_get_target_any, .create_chain = pfx##_create_chain,               \
	.flush_entries = pfx##_flush_entries, .delete_chain = pfx##_delete_chain,             \
	.append = pfx##_append_any, .insert = pfx##_insert_any, .replace = pfx##_replace_any, \
	.delete_num = pfx##_delete_num_entry, .commit = pfx##_commit, .strerror = pfx##_strerror

static const struct tc tc4 = {
	.af = AF_INET,
	.level = IPPROTO_IP,
	.so_get_info = IPT_SO_GET_INFO,
	.so_get_entries = IPT_SO_GET_ENTRIES,
	.entry_size = sizeof(struct ipt_entry),
	.counters_off = offsetof(struct ipt_entry, counters),
	.target_off = offsetof(struct ipt_entry, target_offset),
	.next_off = offsetof(struct ipt_entry, next_offset),
	.tool = "iptables",
	TC_TABLE(iptc),
};

static const struct tc tc6 = {
	.af = AF_INET6,
	.level = IPPROTO_IPV6,
	.so_get_info = IP6T_SO_GET_INFO,
	.so_get_entries = IP6T_SO_GET_ENTRIES,
	.entry_size = sizeof(struct ip6t_entry),
	.counters_off = offsetof(struct ip6t_entry, counters),
	.target_off = offsetof(struct ip6t_entry, target_offset),
	.next_off = offsetof(struct ip6t_entry, next_offset),
	.tool = "ip6tables",
	TC_TABLE(ip6tc),
};

/* A 16-bit field of an entry, at @off (tc.target_off, tc.next_off). */
static uint16_t entry_u16(const void *e, size_t off)
{
	uint16_t v;
	memcpy(&v, (const char *)e + off, sizeof(v));
	return v;
}

struct ipt_kernel {
	struct ipt ipt;
	const struct tc *tc;
	int table_sock; /* a raw socket of the family, for reading a table; -1 until needed */
	char *lock_path;
	unsigned lock_wait_ms;
	int lock_fd; /* held while a session is open; -1 otherwise */
	struct xtc_handle *h;
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

/* libiptc's error for the call that just failed, as a negative errno with its text. */
static int tc_fail(struct ipt_kernel *k, const char *what, const char *chain)
{
	int e = errno ? errno : EINVAL;
	if (e == E2BIG) /* libiptc's "index of insertion too big" */
		e = ENOENT;
	return fail(k, -e, "%s %s in table %s: %s", what, chain, k->table, k->tc->strerror(errno));
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

/* --- sessions -------------------------------------------------------------------- */

static int session(struct ipt_kernel *k)
{
	if (!k->h)
		return fail(k, -EINVAL, "no session: call begin first");
	return 0;
}

static void end_session(struct ipt_kernel *k)
{
	if (k->h)
		k->tc->free(k->h);
	k->h = NULL;
	hmap_clear(&k->set_index);
	unlock(k);
}

/* One pass over libiptc's copy; strings go to the state's arena. */
static void read_state(struct ipt_kernel *k, struct ipt_table_state *out)
{
	struct ipt_table_state st = { .mem = arena_new() };
	size_t cap = 0, scratch_cap = 0;
	const void **scratch = NULL;
	const struct tc *tc = k->tc;
	for (const char *name = tc->first_chain(k->h); name; name = tc->next_chain(k->h)) {
		GROW(st.chains, cap, st.n + 1);
		struct ipt_chain_state *c = &st.chains[st.n++];
		memset(c, 0, sizeof(*c));
		snprintf(c->name, sizeof(c->name), "%s", name);
		c->builtin = tc->builtin(name, k->h);
		size_t n = 0;
		for (const void *e = tc->first_rule(name, k->h); e; e = tc->next_rule(e, k->h)) {
			GROW(scratch, scratch_cap, n + 1);
			scratch[n++] = e;
		}
		c->n = n;
		c->ids = arena_alloc(st.mem, sizeof(*c->ids) * (n ? n : 1));
		c->targets = arena_new_array(st.mem, char *, n ? n : 1);
		for (size_t i = 0; i < n; i++) {
			if (!ipt_rule_entry_id(tc->af, scratch[i], c->ids[i]))
				c->ids[i][0] = 0;
			const char *target = tc->get_target(scratch[i], k->h);
			c->targets[i] = arena_strdup(st.mem, target ? target : "");
		}
	}
	free(scratch);
	*out = st;
}

static int k_begin(struct ipt *t, const char *table, struct ipt_table_state *out)
{
	struct ipt_kernel *k = kernel_of(t);
	if (k->h)
		return fail(k, -EINPROGRESS, "a session on table %s is open", k->table);
	if (strlen(table) >= sizeof(k->table))
		return fail(k, -ENOENT, "no table %s", table);
	snprintf(k->table, sizeof(k->table), "%s", table);
	hmap_clear(&k->set_index); /* sets may have been recreated since */
	int e = lock(k);
	if (e)
		return e;
	k->h = k->tc->init(table);
	if (!k->h) {
		e = errno ? errno : EINVAL;
		unlock(k);
		return fail(k, -e, "reading %s table %s: %s", k->tc->tool, table,
			    k->tc->strerror(e));
	}
	read_state(k, out);
	return 0;
}

static int k_new_chain(struct ipt *t, const char *chain)
{
	struct ipt_kernel *k = kernel_of(t);
	int e = session(k);
	if (e)
		return e;
	if (!ipt_chain_name_valid(chain))
		return fail(k, -EINVAL, "not a valid chain name: \"%s\"", chain);
	if (!k->tc->create_chain(chain, k->h))
		return tc_fail(k, "creating chain", chain);
	return 0;
}

static int k_flush_chain(struct ipt *t, const char *chain)
{
	struct ipt_kernel *k = kernel_of(t);
	int e = session(k);
	if (e)
		return e;
	if (!k->tc->flush_entries(chain, k->h))
		return tc_fail(k, "flushing chain", chain);
	return 0;
}

static int k_delete_chain(struct ipt *t, const char *chain)
{
	struct ipt_kernel *k = kernel_of(t);
	int e = session(k);
	if (e)
		return e;
	if (!k->tc->delete_chain(chain, k->h))
		return tc_fail(k, "deleting chain", chain);
	return 0;
}

/* Parses @rule; a jump must name a chain of the table (libiptc would take it for a module). */
static int entry_for(struct ipt_kernel *k, const char *chain, const char *rule, void **out)
{
	struct strbuf msg = STRBUF_INIT;
	void *v;
	size_t len;
	sb_init(&msg);
	int e = ipt_rule_parse(k->tc->af, rule, &k->sets, &v, &len, &msg);
	if (e) {
		e = fail(k, e, "%s: %s", rule, sb_str(&msg));
		sb_free(&msg);
		return e;
	}
	sb_free(&msg);
	const struct xt_entry_target *tg =
		(const void *)((const char *)v + entry_u16(v, k->tc->target_off));
	const char *name = tg->u.user.name;
	if (tg->u.target_size == XT_ALIGN(sizeof(struct xt_standard_target)) &&
	    strcmp(name, "ACCEPT") != 0 && strcmp(name, "DROP") != 0 &&
	    strcmp(name, "RETURN") != 0 && strcmp(name, "MARK") != 0 &&
	    strcmp(name, "REJECT") != 0 && !k->tc->is_chain(name, k->h)) {
		e = fail(k, -ENOENT, "%s: no chain %s to jump to in table %s", rule, name,
			 k->table);
		free(v);
		return e;
	}
	if (!k->tc->is_chain(chain, k->h)) {
		free(v);
		return fail(k, -ENOENT, "no chain %s in table %s", chain, k->table);
	}
	*out = v;
	return 0;
}

enum k_write_op {
	K_INSERT,
	K_APPEND,
	K_REPLACE
};

/* One rule written into @chain: inserted or replacing at @pos, or appended. */
static int k_write(struct ipt *t, enum k_write_op op, const char *chain, size_t pos,
		   const char *rule)
{
	static const char *const what[] = { "inserting into chain", "appending to chain",
					    "replacing in chain" };
	struct ipt_kernel *k = kernel_of(t);
	void *en = NULL;
	int e = session(k);
	if (!e)
		e = entry_for(k, chain, rule, &en);
	if (e)
		return e;
	errno = 0;
	int ok = op == K_APPEND	    ? k->tc->append(chain, en, k->h)
		 : pos > UINT32_MAX ? 0
		 : op == K_INSERT   ? k->tc->insert(chain, en, (unsigned)pos, k->h)
				    : k->tc->replace(chain, en, (unsigned)pos, k->h);
	free(en);
	if (!ok) {
		if (!errno && op != K_APPEND)
			errno = E2BIG; /* a position past what libiptc can address */
		return tc_fail(k, what[op], chain);
	}
	return 0;
}

static int k_insert(struct ipt *t, const char *chain, size_t pos, const char *rule)
{
	return k_write(t, K_INSERT, chain, pos, rule);
}

static int k_append(struct ipt *t, const char *chain, const char *rule)
{
	return k_write(t, K_APPEND, chain, 0, rule);
}

static int k_replace(struct ipt *t, const char *chain, size_t pos, const char *rule)
{
	return k_write(t, K_REPLACE, chain, pos, rule);
}

static int k_delete(struct ipt *t, const char *chain, size_t pos)
{
	struct ipt_kernel *k = kernel_of(t);
	int e = session(k);
	if (e)
		return e;
	errno = 0;
	if (pos > UINT32_MAX || !k->tc->delete_num(chain, (unsigned)pos, k->h)) {
		if (!errno)
			errno = E2BIG;
		return tc_fail(k, "deleting from chain", chain);
	}
	return 0;
}

static int k_commit(struct ipt *t)
{
	struct ipt_kernel *k = kernel_of(t);
	int e = session(k);
	if (e)
		return e;
	if (!k->tc->commit(k->h)) {
		e = errno ? errno : EINVAL;
		fail(k, -e, "committing %s table %s: %s", k->tc->tool, k->table,
		     k->tc->strerror(e));
		end_session(k);
		return -e;
	}
	end_session(k); /* a commit leaves the handle to us */
	return 0;
}

static void k_abort(struct ipt *t)
{
	end_session(kernel_of(t));
}

/*
 * The table's blob as the kernel hands it to libiptc (IPT_SO_GET_INFO, then
 * IPT_SO_GET_ENTRIES; IP6T_ for ip6tables), hashed with every rule's counters
 * zeroed. libiptc has no cheaper call than a full iptc_init, which parses the
 * blob into chains; this is the same two getsockopts and one pass over the
 * bytes. (struct ip6t_getinfo and ip6t_get_entries are the same as IPv4's.)
 */
static int k_fingerprint(struct ipt *t, const char *table, bool rules, uint64_t *out)
{
	struct ipt_kernel *k = kernel_of(t);
	const struct tc *tc = k->tc;
	if (k->table_sock < 0) {
		int fd = socket(tc->af, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
		if (fd < 0)
			return fail(k, -errno, "raw socket: %s", strerror(errno));
		k->table_sock = fd;
	}
	struct ipt_getinfo info = { 0 };
	if (strlen(table) >= sizeof(info.name))
		return fail(k, -EINVAL, "table name %s too long", table);
	memcpy(info.name, table, strlen(table));
	socklen_t len = sizeof(info);
	if (getsockopt(k->table_sock, tc->level, tc->so_get_info, &info, &len) < 0)
		return fail(k, -errno, "table %s: %s", table, strerror(errno));
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
