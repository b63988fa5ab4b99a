/*
 * The kernel iptables backend: legacy tables through libiptc (libip4tc),
 * the only file with libiptc headers.
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
#include <linux/netfilter/ipset/ip_set.h>

#define DEFAULT_LOCK_PATH "/run/xtables.lock"

struct ipt_kernel {
	struct ipt ipt;
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
static int iptc_fail(struct ipt_kernel *k, const char *what, const char *chain)
{
	int e = errno ? errno : EINVAL;
	if (e == E2BIG) /* libiptc's "index of insertion too big" */
		e = ENOENT;
	return fail(k, -e, "%s %s in table %s: %s", what, chain, k->table, iptc_strerror(errno));
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
		iptc_free(k->h);
	k->h = NULL;
	hmap_clear(&k->set_index);
	unlock(k);
}

/* One pass over libiptc's copy; strings go to the state's arena. */
static void read_state(struct ipt_kernel *k, struct ipt_table_state *out)
{
	struct ipt_table_state st = { .mem = arena_new() };
	size_t cap = 0, scratch_cap = 0;
	const struct ipt_entry **scratch = NULL;
	for (const char *name = iptc_first_chain(k->h); name; name = iptc_next_chain(k->h)) {
		GROW(st.chains, cap, st.n + 1);
		struct ipt_chain_state *c = &st.chains[st.n++];
		memset(c, 0, sizeof(*c));
		snprintf(c->name, sizeof(c->name), "%s", name);
		c->builtin = iptc_builtin(name, k->h);
		size_t n = 0;
		for (const struct ipt_entry *e = iptc_first_rule(name, k->h); e;
		     e = iptc_next_rule(e, k->h)) {
			GROW(scratch, scratch_cap, n + 1);
			scratch[n++] = e;
		}
		c->n = n;
		c->ids = arena_alloc(st.mem, sizeof(*c->ids) * (n ? n : 1));
		c->targets = arena_new_array(st.mem, char *, n ? n : 1);
		for (size_t i = 0; i < n; i++) {
			if (!ipt_rule_entry_id(scratch[i], c->ids[i]))
				c->ids[i][0] = 0;
			const char *target = iptc_get_target(scratch[i], k->h);
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
	k->h = iptc_init(table);
	if (!k->h) {
		e = errno ? errno : EINVAL;
		unlock(k);
		return fail(k, -e, "reading table %s: %s", table, iptc_strerror(e));
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
	if (!iptc_create_chain(chain, k->h))
		return iptc_fail(k, "creating chain", chain);
	return 0;
}

static int k_flush_chain(struct ipt *t, const char *chain)
{
	struct ipt_kernel *k = kernel_of(t);
	int e = session(k);
	if (e)
		return e;
	if (!iptc_flush_entries(chain, k->h))
		return iptc_fail(k, "flushing chain", chain);
	return 0;
}

static int k_delete_chain(struct ipt *t, const char *chain)
{
	struct ipt_kernel *k = kernel_of(t);
	int e = session(k);
	if (e)
		return e;
	if (!iptc_delete_chain(chain, k->h))
		return iptc_fail(k, "deleting chain", chain);
	return 0;
}

/* Parses @rule; a jump must name a chain of the table (libiptc would take it for a module). */
static int entry_for(struct ipt_kernel *k, const char *chain, const char *rule,
		     struct ipt_entry **out)
{
	struct strbuf msg = STRBUF_INIT;
	void *v;
	size_t len;
	sb_init(&msg);
	int e = ipt_rule_parse(rule, &k->sets, &v, &len, &msg);
	if (e) {
		e = fail(k, e, "%s: %s", rule, sb_str(&msg));
		sb_free(&msg);
		return e;
	}
	sb_free(&msg);
	struct ipt_entry *en = v;
	const struct xt_entry_target *tg = (const void *)((const char *)v + en->target_offset);
	const char *name = tg->u.user.name;
	if (tg->u.target_size == XT_ALIGN(sizeof(struct xt_standard_target)) &&
	    strcmp(name, "ACCEPT") != 0 && strcmp(name, "DROP") != 0 &&
	    strcmp(name, "RETURN") != 0 && strcmp(name, "MARK") != 0 &&
	    strcmp(name, "REJECT") != 0 && !iptc_is_chain(name, k->h)) {
		e = fail(k, -ENOENT, "%s: no chain %s to jump to in table %s", rule, name,
			 k->table);
		free(v);
		return e;
	}
	if (!iptc_is_chain(chain, k->h)) {
		free(v);
		return fail(k, -ENOENT, "no chain %s in table %s", chain, k->table);
	}
	*out = en;
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
	struct ipt_entry *en = NULL;
	int e = session(k);
	if (!e)
		e = entry_for(k, chain, rule, &en);
	if (e)
		return e;
	errno = 0;
	int ok = op == K_APPEND	    ? iptc_append_entry(chain, en, k->h)
		 : pos > UINT32_MAX ? 0
		 : op == K_INSERT   ? iptc_insert_entry(chain, en, (unsigned)pos, k->h)
				    : iptc_replace_entry(chain, en, (unsigned)pos, k->h);
	free(en);
	if (!ok) {
		if (!errno && op != K_APPEND)
			errno = E2BIG; /* a position past what libiptc can address */
		return iptc_fail(k, what[op], chain);
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
	if (pos > UINT32_MAX || !iptc_delete_num_entry(chain, (unsigned)pos, k->h)) {
		if (!errno)
			errno = E2BIG;
		return iptc_fail(k, "deleting from chain", chain);
	}
	return 0;
}

static int k_commit(struct ipt *t)
{
	struct ipt_kernel *k = kernel_of(t);
	int e = session(k);
	if (e)
		return e;
	if (!iptc_commit(k->h)) {
		e = errno ? errno : EINVAL;
		fail(k, -e, "committing table %s: %s", k->table, iptc_strerror(e));
		end_session(k);
		return -e;
	}
	end_session(k); /* iptc_commit leaves the handle to us */
	return 0;
}

static void k_abort(struct ipt *t)
{
	end_session(kernel_of(t));
}

/*
 * The table's blob as the kernel hands it to libiptc (IPT_SO_GET_INFO, then
 * IPT_SO_GET_ENTRIES), hashed with every rule's counters zeroed. libiptc has
 * no cheaper call than a full iptc_init, which parses the blob into chains;
 * this is the same two getsockopts and one pass over the bytes.
 */
static int k_fingerprint(struct ipt *t, const char *table, bool rules, uint64_t *out)
{
	struct ipt_kernel *k = kernel_of(t);
	int e = set_socket(k);
	if (e < 0 && k->set_sock < 0) {
		/* No ipset support: any raw socket serves. */
		int fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
		if (fd < 0)
			return fail(k, -errno, "raw socket: %s", strerror(errno));
		k->set_sock = fd;
	}
	struct ipt_getinfo info = { 0 };
	if (strlen(table) >= sizeof(info.name))
		return fail(k, -EINVAL, "table name %s too long", table);
	memcpy(info.name, table, strlen(table));
	socklen_t len = sizeof(info);
	if (getsockopt(k->set_sock, IPPROTO_IP, IPT_SO_GET_INFO, &info, &len) < 0)
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
		if (getsockopt(k->set_sock, IPPROTO_IP, IPT_SO_GET_ENTRIES, ents, &len) < 0) {
			int err = errno;
			free(ents);
			/* EAGAIN: the table changed size between the two calls. */
			if (err == EAGAIN && tries < 3 &&
			    (len = sizeof(info), getsockopt(k->set_sock, IPPROTO_IP,
							    IPT_SO_GET_INFO, &info, &len) == 0))
				continue;
			return fail(k, -err, "reading table %s: %s", table, strerror(err));
		}
		uint8_t *base = (uint8_t *)ents->entrytable;
		for (size_t off = 0; off + sizeof(struct ipt_entry) <= ents->size;) {
			struct ipt_entry *ent = (struct ipt_entry *)(base + off);
			memset(&ent->counters, 0, sizeof(ent->counters));
			if (ent->next_offset < sizeof(struct ipt_entry))
				break;
			off += ent->next_offset;
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

int ipt_open_kernel(const char *lock_path, unsigned lock_wait_ms, struct ipt **out)
{
	struct ipt_kernel *k = xcalloc(1, sizeof(*k));
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
