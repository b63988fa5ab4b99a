/*
 * nf_tables over netlink (see <brindle/sys/nft.h>): libnftnl builds and
 * parses the messages, libmnl carries them. The only file with libnftnl
 * headers.
 *
 * A batch is every edit of one apply between a batch-begin and a batch-end,
 * sent with one sendmsg (the kernel applies all of it or none), followed by
 * a request for the generation, whose answer says the batch was processed:
 * an edit that fails is answered with its error before that (no edit asks
 * for an acknowledgement, so a batch of 100,000 edits is not answered with
 * 100,000 of them).
 */
#include <brindle/sys/nft.h>

#include <brindle/core/hmap.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <arpa/inet.h>
#include <net/if.h>

#include <libmnl/libmnl.h>
#include <libnftnl/batch.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/expr.h>
#include <libnftnl/gen.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>
#include <libnftnl/udata.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>

/* nft's datatype numbers, kept with a set so that `nft list` shows its elements. */
#define TYPE_IPADDR	  7
#define TYPE_IP6ADDR	  8
#define TYPE_INET_PROTO	  12
#define TYPE_INET_SERVICE 13
#define TYPE_IFNAME	  41
#define TYPE_BITS	  6

struct nft {
	int af; /* AF_INET or AF_INET6: the family of the tables this handle reads and writes */
	uint8_t family; /* NFPROTO_IPV4 or NFPROTO_IPV6 */
	struct mnl_socket *nl;
	uint32_t portid, seq;
	struct strbuf err;
	size_t sndbuf, rcvbuf;
};

static int fail(struct nft *n, int r, const char *fmt, ...) printf_like(3, 4);
static int fail(struct nft *n, int r, const char *fmt, ...)
{
	sb_reset(&n->err);
	va_list ap;
	va_start(ap, fmt);
	sb_vaddf(&n->err, fmt, ap);
	va_end(ap);
	return r;
}

int nft_open(int af, struct nft **out)
{
	if (af != AF_INET && af != AF_INET6)
		return -EAFNOSUPPORT;
	struct nft *n = xcalloc(1, sizeof(*n));
	n->af = af;
	n->family = af == AF_INET6 ? NFPROTO_IPV6 : NFPROTO_IPV4;
	sb_init(&n->err);
	n->nl = mnl_socket_open(NETLINK_NETFILTER);
	if (!n->nl || mnl_socket_bind(n->nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		int r = -errno;
		nft_close(n);
		return r;
	}
	n->portid = mnl_socket_get_portid(n->nl);
	n->seq = (uint32_t)time(NULL);
	*out = n;
	return 0;
}

void nft_close(struct nft *n)
{
	if (!n)
		return;
	if (n->nl)
		mnl_socket_close(n->nl);
	sb_free(&n->err);
	free(n);
}

const char *nft_last_error(const struct nft *n)
{
	return sb_str(&n->err);
}

/* Room for what the kernel sends back (a dump's messages, a batch's errors). */
static void grow_rcvbuf(struct nft *n, size_t want)
{
	if (want <= n->rcvbuf)
		return;
	int v = (int)MIN(want, (size_t)64 << 20);
	if (setsockopt(mnl_socket_get_fd(n->nl), SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)) == 0)
		n->rcvbuf = (size_t)v;
}

/* --- requests and dumps ------------------------------------------------------------- */

typedef int (*msg_cb)(const struct nlmsghdr *h, void *ctx);

/*
 * What an earlier exchange left unread (the rest of a dump cut short by an error or by
 * NLM_F_DUMP_INTR, a batch's late answers): thrown away, so that the next exchange reads its
 * own answers and not those, whose sequence numbers would fail it (EPROTO), and the one after
 * it, for as long as the socket lives.
 */
static void drain(struct nft *n)
{
	static char buf[1 << 16];
	while (recv(mnl_socket_get_fd(n->nl), buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
}

/* Send @h (a get or dump) and run @cb on every answer until it is done. */
static int talk(struct nft *n, struct nlmsghdr *h, msg_cb cb, void *ctx)
{
	drain(n);
	if (mnl_socket_sendto(n->nl, h, h->nlmsg_len) < 0)
		return -errno;
	uint32_t seq = h->nlmsg_seq;
	static char buf[1 << 16];
	for (;;) {
		ssize_t len = mnl_socket_recvfrom(n->nl, buf, sizeof(buf));
		if (len < 0)
			return -errno;
		int r = mnl_cb_run(buf, (size_t)len, seq, n->portid, (mnl_cb_t)cb, ctx);
		if (r < 0)
			return -errno;
		if (r == MNL_CB_STOP)
			return 0;
	}
}

static struct nlmsghdr *request(struct nft *n, char *buf, uint16_t type, uint16_t flags)
{
	return nftnl_nlmsg_build_hdr(buf, type, n->family, flags, ++n->seq);
}

static int gen_cb(const struct nlmsghdr *h, void *ctx)
{
	struct nftnl_gen *g = nftnl_gen_alloc();
	if (!g || nftnl_gen_nlmsg_parse(h, g) < 0) {
		nftnl_gen_free(g);
		return MNL_CB_ERROR;
	}
	*(uint32_t *)ctx = nftnl_gen_get_u32(g, NFTNL_GEN_ID);
	nftnl_gen_free(g);
	return MNL_CB_STOP;
}

int nft_generation(struct nft *n, uint32_t *out)
{
	char buf[256];
	struct nlmsghdr *h = request(n, buf, NFT_MSG_GETGEN, 0);
	int r = talk(n, h, gen_cb, out);
	return r < 0 ? fail(n, r, "reading the nf_tables generation: %s", strerror(-r)) : 0;
}

/* --- reading a table ------------------------------------------------------------------ */

struct reader {
	int af;
	const char *table; /* dumps are filtered here too: the kernel does not filter chains */
	struct nft_table_state *t;
	struct hmap chains; /* name -> index + 1 */
	size_t cap_chains, cap_sets, cap_maps;
	size_t *rule_caps; /* each chain's rules' capacity */
};

static char *dup_str(const char *s)
{
	return xstrdup(s ? s : "");
}

static int chain_cb(const struct nlmsghdr *h, void *ctx)
{
	struct reader *rd = ctx;
	struct nftnl_chain *c = nftnl_chain_alloc();
	if (!c || nftnl_chain_nlmsg_parse(h, c) < 0) {
		nftnl_chain_free(c);
		return MNL_CB_ERROR;
	}
	if (!streq(nftnl_chain_get_str(c, NFTNL_CHAIN_TABLE), rd->table)) {
		nftnl_chain_free(c);
		return MNL_CB_OK;
	}
	struct nft_table_state *t = rd->t;
	size_t had = rd->cap_chains;
	GROW(t->chains, rd->cap_chains, t->n_chains + 1);
	if (rd->cap_chains != had)
		rd->rule_caps = xrealloc(rd->rule_caps, sizeof(*rd->rule_caps) * rd->cap_chains);
	rd->rule_caps[t->n_chains] = 0;
	struct nft_chain_state *cs = &t->chains[t->n_chains++];
	memset(cs, 0, sizeof(*cs));
	cs->name = dup_str(nftnl_chain_get_str(c, NFTNL_CHAIN_NAME));
	cs->base = nftnl_chain_is_set(c, NFTNL_CHAIN_HOOKNUM);
	hmap_put(&rd->chains, cs->name, (void *)(uintptr_t)t->n_chains);
	nftnl_chain_free(c);
	return MNL_CB_OK;
}

static int udata_cb(const struct nftnl_udata *attr, void *data)
{
	if (nftnl_udata_type(attr) == NFTNL_UDATA_RULE_COMMENT)
		*(const struct nftnl_udata **)data = attr;
	return 0;
}

/* The id at the start of a rule's comment, as the rule text has it. */
static void rule_id(const struct nftnl_rule *r, char *id)
{
	id[0] = '\0';
	uint32_t len = 0;
	const void *ud = nftnl_rule_get_data(r, NFTNL_RULE_USERDATA, &len);
	const struct nftnl_udata *c = NULL;
	if (!ud || nftnl_udata_parse(ud, len, udata_cb, &c) < 0 || !c)
		return;
	const char *text = nftnl_udata_get(c);
	size_t n = strnlen(text, nftnl_udata_len(c));
	if (n >= IPT_ID_LEN && strncmp(text, IPT_ID_PREFIX, strlen(IPT_ID_PREFIX)) == 0) {
		memcpy(id, text, IPT_ID_LEN);
		id[IPT_ID_LEN] = '\0';
	}
}

static int rule_cb(const struct nlmsghdr *h, void *ctx)
{
	struct reader *rd = ctx;
	struct nftnl_rule *r = nftnl_rule_alloc();
	if (!r || nftnl_rule_nlmsg_parse(h, r) < 0) {
		nftnl_rule_free(r);
		return MNL_CB_ERROR;
	}
	uintptr_t at = (uintptr_t)hmap_get(&rd->chains, nftnl_rule_get_str(r, NFTNL_RULE_CHAIN));
	if (at && streq(nftnl_rule_get_str(r, NFTNL_RULE_TABLE), rd->table)) {
		struct nft_chain_state *cs = &rd->t->chains[at - 1];
		GROW(cs->rules, rd->rule_caps[at - 1], cs->n + 1);
		struct nft_rule_state *rs = &cs->rules[cs->n++];
		rs->handle = nftnl_rule_get_u64(r, NFTNL_RULE_HANDLE);
		rule_id(r, rs->id);
	}
	nftnl_rule_free(r);
	return MNL_CB_OK;
}

static int set_cb(const struct nlmsghdr *h, void *ctx)
{
	struct reader *rd = ctx;
	struct nftnl_set *s = nftnl_set_alloc();
	if (!s || nftnl_set_nlmsg_parse(h, s) < 0) {
		nftnl_set_free(s);
		return MNL_CB_ERROR;
	}
	uint32_t flags = nftnl_set_get_u32(s, NFTNL_SET_FLAGS);
	struct nft_table_state *t = rd->t;
	bool named = !(flags & NFT_SET_ANONYMOUS) &&
		     streq(nftnl_set_get_str(s, NFTNL_SET_TABLE), rd->table);
	if (named && flags & NFT_SET_MAP) {
		GROW(t->maps, rd->cap_maps, t->n_maps + 1);
		struct nft_map_state *ms = &t->maps[t->n_maps++];
		memset(ms, 0, sizeof(*ms));
		ms->name = dup_str(nftnl_set_get_str(s, NFTNL_SET_NAME));
	} else if (named) {
		GROW(t->sets, rd->cap_sets, t->n_sets + 1);
		struct nft_set_state *ss = &t->sets[t->n_sets++];
		memset(ss, 0, sizeof(*ss));
		ss->name = dup_str(nftnl_set_get_str(s, NFTNL_SET_NAME));
		ss->kind = nftnl_set_get_u32(s, NFTNL_SET_KEY_LEN) ==
					   nft_set_key_len(rd->af, NFT_SET_PORTS)
				   ? NFT_SET_PORTS
				   : NFT_SET_ADDRS;
	}
	nftnl_set_free(s);
	return MNL_CB_OK;
}

/* Big-endian numbers of @len bytes, one up or down; true when it wrapped. */
static bool be_inc(uint8_t *v, unsigned len)
{
	for (unsigned i = len; i-- > 0;)
		if (++v[i] != 0)
			return false;
	return true;
}

static bool be_dec(uint8_t *v, unsigned len)
{
	for (unsigned i = len; i-- > 0;)
		if (v[i]-- != 0)
			return false;
	return true;
}

/* A set's elements as the kernel keeps them: starts and interval ends, or triples. */
struct raw_elem {
	uint8_t key[16]; /* the address, network order */
	bool end;
	uint8_t proto;
	uint16_t port;
};

struct elem_reader {
	struct raw_elem *v;
	size_t n, cap;
	int af;
	enum nft_set_kind kind;
};

static int elem_each(struct nftnl_set_elem *e, void *ctx)
{
	struct elem_reader *er = ctx;
	uint32_t len = 0;
	unsigned alen = nft_addr_len(er->af);
	const uint8_t *k = nftnl_set_elem_get(e, NFTNL_SET_ELEM_KEY, &len);
	if (!k || len < alen)
		return 0;
	GROW(er->v, er->cap, er->n + 1);
	struct raw_elem *re = &er->v[er->n++];
	memset(re, 0, sizeof(*re));
	memcpy(re->key, k, alen);
	uint32_t flags = nftnl_set_elem_is_set(e, NFTNL_SET_ELEM_FLAGS)
				 ? nftnl_set_elem_get_u32(e, NFTNL_SET_ELEM_FLAGS)
				 : 0;
	re->end = flags & NFT_SET_ELEM_INTERVAL_END;
	if (er->kind == NFT_SET_PORTS && len >= nft_set_key_len(er->af, NFT_SET_PORTS)) {
		uint16_t port;
		re->proto = k[alen];
		memcpy(&port, k + alen + 4, 2);
		re->port = ntohs(port);
	}
	return 0;
}

/* A map's elements: an interface name and the chain of its verdict. */
struct map_reader {
	struct nft_map_elem *v;
	size_t n, cap;
};

static int map_elem_each(struct nftnl_set_elem *e, void *ctx)
{
	struct map_reader *mr = ctx;
	uint32_t len = 0;
	const char *k = nftnl_set_elem_get(e, NFTNL_SET_ELEM_KEY, &len);
	const char *chain = nftnl_set_elem_is_set(e, NFTNL_SET_ELEM_CHAIN)
				    ? nftnl_set_elem_get_str(e, NFTNL_SET_ELEM_CHAIN)
				    : "";
	if (!k)
		return 0;
	GROW(mr->v, mr->cap, mr->n + 1);
	struct nft_map_elem *me = &mr->v[mr->n++];
	memset(me, 0, sizeof(*me));
	memcpy(me->iface, k, MIN(len, (uint32_t)sizeof(me->iface) - 1));
	snprintf(me->chain, sizeof(me->chain), "%s", chain);
	return 0;
}

static int cmp_map_elem(const void *a, const void *b)
{
	return strcmp(((const struct nft_map_elem *)a)->iface,
		      ((const struct nft_map_elem *)b)->iface);
}

/* One message of a set's elements: each element to @each (a set's, or a map's). */
struct elems_walk {
	int (*each)(struct nftnl_set_elem *e, void *ctx);
	void *ctx;
};

static int elems_cb(const struct nlmsghdr *h, void *ctx)
{
	const struct elems_walk *w = ctx;
	struct nftnl_set *s = nftnl_set_alloc();
	if (!s || nftnl_set_elems_nlmsg_parse(h, s) < 0) {
		nftnl_set_free(s);
		return MNL_CB_ERROR;
	}
	nftnl_set_elem_foreach(s, w->each, w->ctx);
	nftnl_set_free(s);
	return MNL_CB_OK;
}

static int cmp_raw(const void *a, const void *b)
{
	const struct raw_elem *x = a, *y = b;
	int c = memcmp(x->key, y->key, sizeof(x->key));
	if (c)
		return c < 0 ? -1 : 1;
	/* at one key an interval's end comes first: it closes the interval before, and a start
	 * there opens the next (adjacent intervals) */
	return (int)y->end - (int)x->end;
}

static int cmp_elem(const void *a, const void *b)
{
	return nft_elem_cmp(a, b);
}

/* Intervals from starts and ends: a start runs to the next end (exclusive), else to the top. */
static void elems_from_raw(struct nft_set_state *ss, struct elem_reader *er)
{
	if (er->n)
		qsort(er->v, er->n, sizeof(*er->v), cmp_raw);
	unsigned alen = nft_addr_len(er->af);
	ss->elems = xcalloc(er->n + 1, sizeof(*ss->elems));
	for (size_t i = 0; i < er->n; i++) {
		const struct raw_elem *re = &er->v[i];
		struct nft_elem *e = &ss->elems[ss->n];
		memset(e, 0, sizeof(*e));
		memcpy(e->lo, re->key, alen);
		if (ss->kind == NFT_SET_PORTS) {
			e->proto = re->proto;
			e->port = re->port;
			ss->n++;
			continue;
		}
		if (re->end)
			continue;
		if (i + 1 < er->n && er->v[i + 1].end) {
			memcpy(e->hi, er->v[i + 1].key, alen);
			be_dec(e->hi, alen);
		} else {
			memset(e->hi, 0xff, alen);
		}
		ss->n++;
	}
	qsort(ss->elems, ss->n, sizeof(*ss->elems), cmp_elem);
}

/* Set (or map) @set of @table: to make, delete, ask for or put elements in. */
static struct nftnl_set *named_set(const char *table, const char *set)
{
	struct nftnl_set *s = nftnl_set_alloc();
	nftnl_set_set_str(s, NFTNL_SET_TABLE, table);
	nftnl_set_set_str(s, NFTNL_SET_NAME, set);
	return s;
}

/* The elements of set (or map) @set of @table, each to @w. */
static int dump_elems(struct nft *n, const char *table, const char *set, struct elems_walk *w)
{
	char buf[1024];
	struct nftnl_set *s = named_set(table, set);
	struct nlmsghdr *h = request(n, buf, NFT_MSG_GETSETELEM, NLM_F_DUMP);
	nftnl_set_elems_nlmsg_build_payload(h, s);
	nftnl_set_free(s);
	return talk(n, h, elems_cb, w);
}

static int table_cb(const struct nlmsghdr *h, void *ctx)
{
	(void)h;
	*(bool *)ctx = true;
	return MNL_CB_STOP;
}

static int read_table(struct nft *n, const char *table, struct nft_table_state *out,
		      bool chains_only)
{
	memset(out, 0, sizeof(*out));
	char buf[1024];
	struct nftnl_table *tb = nftnl_table_alloc();
	nftnl_table_set_str(tb, NFTNL_TABLE_NAME, table);
	struct nlmsghdr *h = request(n, buf, NFT_MSG_GETTABLE, 0);
	nftnl_table_nlmsg_build_payload(h, tb);
	nftnl_table_free(tb);
	int r = talk(n, h, table_cb, &out->exists);
	if (r == -ENOENT) {
		out->exists = false;
		return 0;
	}
	if (r < 0)
		return fail(n, r, "reading table %s: %s", table, strerror(-r));
	grow_rcvbuf(n, 4 << 20);
	struct reader rd = { .af = n->af, .table = table, .t = out };
	rd.chains = (struct hmap)HMAP_INIT;
	/* chains */
	struct nftnl_chain *c = nftnl_chain_alloc();
	nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, table);
	h = request(n, buf, NFT_MSG_GETCHAIN, NLM_F_DUMP);
	nftnl_chain_nlmsg_build_payload(h, c);
	nftnl_chain_free(c);
	r = talk(n, h, chain_cb, &rd);
	/* rules, in order, by chain */
	if (r == 0 && !chains_only) {
		struct nftnl_rule *ru = nftnl_rule_alloc();
		nftnl_rule_set_str(ru, NFTNL_RULE_TABLE, table);
		h = request(n, buf, NFT_MSG_GETRULE, NLM_F_DUMP);
		nftnl_rule_nlmsg_build_payload(h, ru);
		nftnl_rule_free(ru);
		r = talk(n, h, rule_cb, &rd);
	}
	/* sets, then each one's elements */
	if (r == 0 && !chains_only) {
		struct nftnl_set *s = nftnl_set_alloc();
		nftnl_set_set_str(s, NFTNL_SET_TABLE, table);
		h = request(n, buf, NFT_MSG_GETSET, NLM_F_DUMP);
		nftnl_set_nlmsg_build_payload(h, s);
		nftnl_set_free(s);
		r = talk(n, h, set_cb, &rd);
	}
	for (size_t i = 0; r == 0 && i < out->n_sets; i++) {
		struct nft_set_state *ss = &out->sets[i];
		struct elem_reader er = { .af = n->af, .kind = ss->kind };
		r = dump_elems(n, table, ss->name, &(struct elems_walk){ elem_each, &er });
		if (r == 0)
			elems_from_raw(ss, &er);
		free(er.v);
	}
	for (size_t i = 0; r == 0 && i < out->n_maps; i++) {
		struct nft_map_state *ms = &out->maps[i];
		struct map_reader mr = { 0 };
		r = dump_elems(n, table, ms->name, &(struct elems_walk){ map_elem_each, &mr });
		if (mr.n)
			qsort(mr.v, mr.n, sizeof(*mr.v), cmp_map_elem);
		ms->elems = mr.v;
		ms->n = mr.n;
	}
	hmap_clear(&rd.chains);
	free(rd.rule_caps);
	if (r < 0) {
		nft_table_state_free(out);
		return fail(n, r, "reading table %s: %s", table, strerror(-r));
	}
	return 0;
}

/* A dump interrupted by someone's commit (EINTR: NLM_F_DUMP_INTR) is read again. */
static int read_table_whole(struct nft *n, const char *table, struct nft_table_state *out,
			    bool chains_only)
{
	int r = -EINTR;
	for (int attempt = 0; attempt < 5 && r == -EINTR; attempt++)
		r = read_table(n, table, out, chains_only);
	return r;
}

int nft_read(struct nft *n, const char *table, struct nft_table_state *out)
{
	return read_table_whole(n, table, out, false);
}

int nft_table_chains(struct nft *n, const char *table, bool *exists, size_t *chains)
{
	struct nft_table_state ts;
	int r = read_table_whole(n, table, &ts, true);
	*exists = r == 0 && ts.exists;
	*chains = r == 0 ? ts.n_chains : 0;
	if (r == 0)
		nft_table_state_free(&ts);
	return r;
}

void nft_table_state_free(struct nft_table_state *t)
{
	for (size_t i = 0; i < t->n_chains; i++) {
		free(t->chains[i].name);
		free(t->chains[i].rules);
	}
	for (size_t i = 0; i < t->n_sets; i++) {
		free(t->sets[i].name);
		free(t->sets[i].elems);
	}
	for (size_t i = 0; i < t->n_maps; i++) {
		free(t->maps[i].name);
		free(t->maps[i].elems);
	}
	free(t->chains);
	free(t->sets);
	free(t->maps);
	memset(t, 0, sizeof(*t));
}

const struct nft_chain_state *nft_table_state_chain(const struct nft_table_state *t,
						    const char *name)
{
	for (size_t i = 0; i < t->n_chains; i++)
		if (streq(t->chains[i].name, name))
			return &t->chains[i];
	return NULL;
}

const struct nft_set_state *nft_table_state_set(const struct nft_table_state *t, const char *name)
{
	for (size_t i = 0; i < t->n_sets; i++)
		if (streq(t->sets[i].name, name))
			return &t->sets[i];
	return NULL;
}

/* --- batches -------------------------------------------------------------------------- */

struct nft_batch {
	struct nft *n;
	struct nftnl_batch *nb;
	uint32_t first_seq;
	/* each message's description, by seq - first_seq - 1: texts + what[i], all in one
	 * buffer (a string each would be 12,000 small blocks in a full program's batch, which
	 * stay as holes in the heap after it) */
	struct strbuf texts;
	size_t *what;
	size_t n_what, cap_what;
	uint32_t anon_id;
	int err;
	struct strbuf errs;
};

#define BATCH_PAGE    (256u << 10)
#define BATCH_OVERRUN (64u << 10)

struct nft_batch *nft_batch_new(struct nft *n)
{
	struct nft_batch *b = xcalloc(1, sizeof(*b));
	b->n = n;
	sb_init(&b->errs);
	sb_init(&b->texts);
	b->nb = nftnl_batch_alloc(BATCH_PAGE, BATCH_OVERRUN);
	if (!b->nb)
		abort();
	b->first_seq = ++n->seq;
	nftnl_batch_begin(nftnl_batch_buffer(b->nb), b->first_seq);
	nftnl_batch_update(b->nb);
	return b;
}

void nft_batch_free(struct nft_batch *b)
{
	if (!b)
		return;
	sb_free(&b->texts);
	free(b->what);
	nftnl_batch_free(b->nb);
	sb_free(&b->errs);
	free(b);
}

size_t nft_batch_size(const struct nft_batch *b)
{
	return b->n_what;
}

/* The next message's header, described as @fmt for a failure. */
static struct nlmsghdr *next_msg(struct nft_batch *b, uint16_t type, uint16_t flags,
				 const char *fmt, ...) printf_like(4, 5);
static struct nlmsghdr *next_msg(struct nft_batch *b, uint16_t type, uint16_t flags,
				 const char *fmt, ...)
{
	GROW(b->what, b->cap_what, b->n_what + 1);
	b->what[b->n_what++] = b->texts.len;
	va_list ap;
	va_start(ap, fmt);
	sb_vaddf(&b->texts, fmt, ap);
	va_end(ap);
	sb_addc(&b->texts, '\0');
	return nftnl_nlmsg_build_hdr(nftnl_batch_buffer(b->nb), type, b->n->family, flags,
				     ++b->n->seq);
}

static void done_msg(struct nft_batch *b)
{
	if (nftnl_batch_update(b->nb) < 0 && !b->err) {
		b->err = -ENOMEM;
		sb_adds(&b->errs, "the batch could not grow");
	}
}

void nft_batch_add_table(struct nft_batch *b, const char *table)
{
	struct nftnl_table *t = nftnl_table_alloc();
	nftnl_table_set_str(t, NFTNL_TABLE_NAME, table);
	nftnl_table_set_u32(t, NFTNL_TABLE_FAMILY, b->n->family);
	struct nlmsghdr *h = next_msg(b, NFT_MSG_NEWTABLE, NLM_F_CREATE, "add table %s", table);
	nftnl_table_nlmsg_build_payload(h, t);
	nftnl_table_free(t);
	done_msg(b);
}

void nft_batch_del_table(struct nft_batch *b, const char *table)
{
	struct nftnl_table *t = nftnl_table_alloc();
	nftnl_table_set_str(t, NFTNL_TABLE_NAME, table);
	struct nlmsghdr *h = next_msg(b, NFT_MSG_DELTABLE, 0, "delete table %s", table);
	nftnl_table_nlmsg_build_payload(h, t);
	nftnl_table_free(t);
	done_msg(b);
}

void nft_batch_add_chain(struct nft_batch *b, const char *table, const char *chain, int hook,
			 int prio, const char *type)
{
	struct nftnl_chain *c = nftnl_chain_alloc();
	nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, table);
	nftnl_chain_set_str(c, NFTNL_CHAIN_NAME, chain);
	if (hook >= 0) {
		nftnl_chain_set_u32(c, NFTNL_CHAIN_HOOKNUM, (uint32_t)hook);
		nftnl_chain_set_s32(c, NFTNL_CHAIN_PRIO, prio);
		nftnl_chain_set_str(c, NFTNL_CHAIN_TYPE, type);
		nftnl_chain_set_u32(c, NFTNL_CHAIN_POLICY, NF_ACCEPT);
	}
	struct nlmsghdr *h =
		next_msg(b, NFT_MSG_NEWCHAIN, NLM_F_CREATE, "add chain %s %s", table, chain);
	nftnl_chain_nlmsg_build_payload(h, c);
	nftnl_chain_free(c);
	done_msg(b);
}

void nft_batch_del_chain(struct nft_batch *b, const char *table, const char *chain)
{
	struct nftnl_chain *c = nftnl_chain_alloc();
	nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, table);
	nftnl_chain_set_str(c, NFTNL_CHAIN_NAME, chain);
	struct nlmsghdr *h = next_msg(b, NFT_MSG_DELCHAIN, 0, "delete chain %s %s", table, chain);
	nftnl_chain_nlmsg_build_payload(h, c);
	nftnl_chain_free(c);
	done_msg(b);
}

/* The element keys of @e: an interval's start and end (exclusive; none at the top), or a
 * triple. Returns how many elements it takes (1 or 2). */
static int elem_keys(int af, enum nft_set_kind kind, const struct nft_elem *e, uint8_t k[2][24],
		     uint32_t *len)
{
	unsigned alen = nft_addr_len(af);
	memset(k, 0, 2 * 24);
	memcpy(k[0], e->lo, alen);
	*len = nft_set_key_len(af, kind);
	if (kind == NFT_SET_PORTS) {
		uint16_t port = htons(e->port);
		k[0][alen] = e->proto;
		memcpy(k[0] + alen + 4, &port, 2);
		return 1;
	}
	memcpy(k[1], e->hi, alen);
	return be_inc(k[1], alen) ? 1 : 2; /* an interval to the top has no end */
}

/* Elements of a set into message @h: the whole list in one message. */
static void put_elems(int af, struct nftnl_set *s, enum nft_set_kind kind, const struct nft_elem *e,
		      size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t k[2][24];
		uint32_t len;
		int m = elem_keys(af, kind, &e[i], k, &len);
		for (int j = 0; j < m; j++) {
			struct nftnl_set_elem *se = nftnl_set_elem_alloc();
			nftnl_set_elem_set(se, NFTNL_SET_ELEM_KEY, k[j], len);
			if (j == 1)
				nftnl_set_elem_set_u32(se, NFTNL_SET_ELEM_FLAGS,
						       NFT_SET_ELEM_INTERVAL_END);
			nftnl_set_elem_add(s, se);
		}
	}
}

void nft_batch_add_set(struct nft_batch *b, const char *table, const char *set,
		       enum nft_set_kind kind)
{
	struct nftnl_set *s = named_set(table, set);
	nftnl_set_set_u32(s, NFTNL_SET_FAMILY, b->n->family);
	nftnl_set_set_u32(s, NFTNL_SET_ID, ++b->anon_id);
	uint32_t addr_type = b->n->af == AF_INET6 ? TYPE_IP6ADDR : TYPE_IPADDR;
	if (kind == NFT_SET_ADDRS) {
		nftnl_set_set_u32(s, NFTNL_SET_FLAGS, NFT_SET_INTERVAL);
		nftnl_set_set_u32(s, NFTNL_SET_KEY_TYPE, addr_type);
	} else {
		nftnl_set_set_u32(s, NFTNL_SET_FLAGS, 0);
		nftnl_set_set_u32(s, NFTNL_SET_KEY_TYPE,
				  ((addr_type << TYPE_BITS) | TYPE_INET_PROTO) << TYPE_BITS |
					  TYPE_INET_SERVICE);
	}
	nftnl_set_set_u32(s, NFTNL_SET_KEY_LEN, nft_set_key_len(b->n->af, kind));
	struct nlmsghdr *h = next_msg(b, NFT_MSG_NEWSET, NLM_F_CREATE, "add set %s %s", table, set);
	nftnl_set_nlmsg_build_payload(h, s);
	nftnl_set_free(s);
	done_msg(b);
}

void nft_batch_del_set(struct nft_batch *b, const char *table, const char *set)
{
	struct nftnl_set *s = named_set(table, set);
	struct nlmsghdr *h = next_msg(b, NFT_MSG_DELSET, 0, "delete set %s %s", table, set);
	nftnl_set_nlmsg_build_payload(h, s);
	nftnl_set_free(s);
	done_msg(b);
}

void nft_batch_flush_set(struct nft_batch *b, const char *table, const char *set)
{
	struct nftnl_set *s = named_set(table, set);
	/* a DELSETELEM with no list of elements takes them all */
	struct nlmsghdr *h = next_msg(b, NFT_MSG_DELSETELEM, 0, "flush set %s %s", table, set);
	nftnl_set_elems_nlmsg_build_payload(h, s);
	nftnl_set_free(s);
	done_msg(b);
}

/* Elements per message: a message must fit the batch's overrun (64 KiB). */
#define ELEMS_PER_MSG 512

/* Elements of @set already in @s, queued as one message adding or deleting them. */
static void queue_elems(struct nft_batch *b, struct nftnl_set *s, bool add, size_t k,
			const char *what, const char *table, const char *set)
{
	struct nlmsghdr *h = next_msg(b, add ? NFT_MSG_NEWSETELEM : NFT_MSG_DELSETELEM,
				      add ? NLM_F_CREATE : 0, "%s %zu elements of %s %s %s",
				      add ? "add" : "delete", k, what, table, set);
	nftnl_set_elems_nlmsg_build_payload(h, s);
	nftnl_set_free(s);
	done_msg(b);
}

void nft_batch_add_ifmap(struct nft_batch *b, const char *table, const char *map)
{
	struct nftnl_set *s = named_set(table, map);
	nftnl_set_set_u32(s, NFTNL_SET_FAMILY, b->n->family);
	nftnl_set_set_u32(s, NFTNL_SET_ID, ++b->anon_id);
	nftnl_set_set_u32(s, NFTNL_SET_FLAGS, NFT_SET_MAP);
	nftnl_set_set_u32(s, NFTNL_SET_KEY_TYPE, TYPE_IFNAME);
	nftnl_set_set_u32(s, NFTNL_SET_KEY_LEN, IFNAMSIZ);
	nftnl_set_set_u32(s, NFTNL_SET_DATA_TYPE, NFT_DATA_VERDICT);
	/* nft reads keys as big-endian numbers unless the set says otherwise: names are in
	 * host order, as nft itself marks an ifname set (else `nft list` shows "") */
	struct nftnl_udata_buf *ud = nftnl_udata_buf_alloc(16);
	nftnl_udata_put_u32(ud, NFTNL_UDATA_SET_KEYBYTEORDER, 1 /* host order */);
	nftnl_set_set_data(s, NFTNL_SET_USERDATA, nftnl_udata_buf_data(ud),
			   nftnl_udata_buf_len(ud));
	nftnl_udata_buf_free(ud);
	struct nlmsghdr *h = next_msg(b, NFT_MSG_NEWSET, NLM_F_CREATE, "add map %s %s", table, map);
	nftnl_set_nlmsg_build_payload(h, s);
	nftnl_set_free(s);
	done_msg(b);
}

void nft_batch_ifmap_elems(struct nft_batch *b, const char *table, const char *map,
			   const struct nft_map_elem *e, size_t n, bool add)
{
	for (size_t at = 0; at < n; at += ELEMS_PER_MSG) {
		size_t k = MIN(n - at, (size_t)ELEMS_PER_MSG);
		struct nftnl_set *s = named_set(table, map);
		for (size_t i = at; i < at + k; i++) {
			char key[IFNAMSIZ] = { 0 };
			snprintf(key, sizeof(key), "%s", e[i].iface);
			struct nftnl_set_elem *se = nftnl_set_elem_alloc();
			nftnl_set_elem_set(se, NFTNL_SET_ELEM_KEY, key, sizeof(key));
			if (add) {
				nftnl_set_elem_set_u32(se, NFTNL_SET_ELEM_VERDICT, NFT_GOTO);
				nftnl_set_elem_set_str(se, NFTNL_SET_ELEM_CHAIN, e[i].chain);
			}
			nftnl_set_elem_add(s, se);
		}
		queue_elems(b, s, add, k, "map", table, map);
	}
}

void nft_batch_elems(struct nft_batch *b, const char *table, const char *set,
		     enum nft_set_kind kind, const struct nft_elem *e, size_t n, bool add)
{
	for (size_t at = 0; at < n; at += ELEMS_PER_MSG) {
		size_t k = MIN(n - at, (size_t)ELEMS_PER_MSG);
		struct nftnl_set *s = named_set(table, set);
		put_elems(b->n->af, s, kind, e + at, k);
		queue_elems(b, s, add, k, "set", table, set);
	}
}

/* --- rules ------------------------------------------------------------------------------ */

static struct nftnl_expr *expr(const char *name)
{
	struct nftnl_expr *e = nftnl_expr_alloc(name);
	if (!e)
		abort();
	return e;
}

/* The rule's anonymous set (a multiport list): its own set in the batch, bound by id. */
static void anon_set(struct nft_batch *b, const char *table, const struct nft_anon_set *a,
		     uint32_t id)
{
	struct nftnl_set *s = nftnl_set_alloc();
	nftnl_set_set_str(s, NFTNL_SET_TABLE, table);
	nftnl_set_set_str(s, NFTNL_SET_NAME, "__set%d");
	nftnl_set_set_u32(s, NFTNL_SET_ID, id);
	nftnl_set_set_u32(s, NFTNL_SET_FAMILY, b->n->family);
	nftnl_set_set_u32(s, NFTNL_SET_FLAGS,
			  NFT_SET_ANONYMOUS | NFT_SET_CONSTANT | NFT_SET_INTERVAL);
	nftnl_set_set_u32(s, NFTNL_SET_KEY_TYPE, TYPE_INET_SERVICE);
	nftnl_set_set_u32(s, NFTNL_SET_KEY_LEN, 2);
	struct nlmsghdr *h = next_msg(b, NFT_MSG_NEWSET, NLM_F_CREATE, "add a port list");
	nftnl_set_nlmsg_build_payload(h, s);
	nftnl_set_free(s);
	done_msg(b);
	s = nftnl_set_alloc();
	nftnl_set_set_str(s, NFTNL_SET_TABLE, table);
	nftnl_set_set_str(s, NFTNL_SET_NAME, "__set%d");
	nftnl_set_set_u32(s, NFTNL_SET_ID, id);
	for (size_t i = 0; i < a->n; i++) {
		uint16_t lo = htons(a->lo[i]);
		struct nftnl_set_elem *se = nftnl_set_elem_alloc();
		nftnl_set_elem_set(se, NFTNL_SET_ELEM_KEY, &lo, 2);
		nftnl_set_elem_add(s, se);
		if (a->hi[i] == 0xffff)
			continue;
		uint16_t end = htons((uint16_t)(a->hi[i] + 1));
		se = nftnl_set_elem_alloc();
		nftnl_set_elem_set(se, NFTNL_SET_ELEM_KEY, &end, 2);
		nftnl_set_elem_set_u32(se, NFTNL_SET_ELEM_FLAGS, NFT_SET_ELEM_INTERVAL_END);
		nftnl_set_elem_add(s, se);
	}
	h = next_msg(b, NFT_MSG_NEWSETELEM, NLM_F_CREATE, "add the ports of a port list");
	nftnl_set_elems_nlmsg_build_payload(h, s);
	nftnl_set_free(s);
	done_msg(b);
}

static void add_exprs(struct nftnl_rule *r, const struct nft_rule_ir *ir, uint32_t anon_id)
{
	for (size_t i = 0; i < ir->n; i++) {
		const struct nftx *x = &ir->x[i];
		struct nftnl_expr *e = NULL;
		switch (x->kind) {
		case NFTX_PAYLOAD:
			e = expr("payload");
			nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_DREG, x->reg);
			nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_BASE, x->a);
			nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_OFFSET, x->b);
			nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_LEN, x->len);
			break;
		case NFTX_META:
			e = expr("meta");
			nftnl_expr_set_u32(e, NFTNL_EXPR_META_KEY, x->a);
			nftnl_expr_set_u32(e, NFTNL_EXPR_META_DREG, x->reg);
			break;
		case NFTX_META_SET:
			e = expr("meta");
			nftnl_expr_set_u32(e, NFTNL_EXPR_META_KEY, x->a);
			nftnl_expr_set_u32(e, NFTNL_EXPR_META_SREG, x->reg);
			break;
		case NFTX_CT:
			e = expr("ct");
			nftnl_expr_set_u32(e, NFTNL_EXPR_CT_KEY, x->a);
			nftnl_expr_set_u32(e, NFTNL_EXPR_CT_DREG, x->reg);
			break;
		case NFTX_FIB:
			e = expr("fib");
			nftnl_expr_set_u32(e, NFTNL_EXPR_FIB_FLAGS, x->a);
			nftnl_expr_set_u32(e, NFTNL_EXPR_FIB_RESULT, x->b);
			nftnl_expr_set_u32(e, NFTNL_EXPR_FIB_DREG, x->reg);
			break;
		case NFTX_CMP:
			e = expr("cmp");
			nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_SREG, x->reg);
			nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_OP, x->op);
			nftnl_expr_set(e, NFTNL_EXPR_CMP_DATA, x->d1, x->len);
			break;
		case NFTX_BITWISE:
			e = expr("bitwise");
			nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_SREG, x->reg);
			nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_DREG, x->reg);
			nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_LEN, x->len);
			nftnl_expr_set(e, NFTNL_EXPR_BITWISE_MASK, x->d1, x->len);
			nftnl_expr_set(e, NFTNL_EXPR_BITWISE_XOR, x->d2, x->len);
			break;
		case NFTX_RANGE:
			e = expr("range");
			nftnl_expr_set_u32(e, NFTNL_EXPR_RANGE_SREG, x->reg);
			nftnl_expr_set_u32(e, NFTNL_EXPR_RANGE_OP, x->op);
			nftnl_expr_set(e, NFTNL_EXPR_RANGE_FROM_DATA, x->d1, x->len);
			nftnl_expr_set(e, NFTNL_EXPR_RANGE_TO_DATA, x->d2, x->len);
			break;
		case NFTX_LOOKUP:
			e = expr("lookup");
			nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_SREG, x->reg);
			if (x->str[0]) {
				nftnl_expr_set_str(e, NFTNL_EXPR_LOOKUP_SET, x->str);
			} else {
				nftnl_expr_set_str(e, NFTNL_EXPR_LOOKUP_SET, "__set%d");
				nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_SET_ID, anon_id);
			}
			if (x->a)
				nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_FLAGS, x->a);
			if (x->b)
				nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_DREG, NFT_REG_VERDICT);
			break;
		case NFTX_IMM:
			e = expr("immediate");
			nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
			nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_VERDICT, (uint32_t)x->verdict);
			if (x->str[0])
				nftnl_expr_set_str(e, NFTNL_EXPR_IMM_CHAIN, x->str);
			break;
		case NFTX_LOG:
			e = expr("log");
			if (x->str[0])
				nftnl_expr_set_str(e, NFTNL_EXPR_LOG_PREFIX, x->str);
			if (x->log_group) {
				nftnl_expr_set_u16(e, NFTNL_EXPR_LOG_GROUP, (uint16_t)x->a);
				if (x->b)
					nftnl_expr_set_u32(e, NFTNL_EXPR_LOG_SNAPLEN, x->b);
				if (x->c)
					nftnl_expr_set_u16(e, NFTNL_EXPR_LOG_QTHRESHOLD,
							   (uint16_t)x->c);
			} else {
				nftnl_expr_set_u32(e, NFTNL_EXPR_LOG_LEVEL, x->a);
			}
			break;
		case NFTX_LIMIT:
			e = expr("limit");
			nftnl_expr_set_u64(e, NFTNL_EXPR_LIMIT_RATE, x->a);
			nftnl_expr_set_u64(e, NFTNL_EXPR_LIMIT_UNIT, x->b);
			nftnl_expr_set_u32(e, NFTNL_EXPR_LIMIT_BURST, x->c);
			nftnl_expr_set_u32(e, NFTNL_EXPR_LIMIT_TYPE, NFT_LIMIT_PKTS);
			break;
		case NFTX_MASQ:
			e = expr("masq");
			if (x->a)
				nftnl_expr_set_u32(e, NFTNL_EXPR_MASQ_FLAGS, x->a);
			break;
		case NFTX_COUNTER:
			e = expr("counter");
			break;
		case NFTX_REJECT:
			e = expr("reject");
			nftnl_expr_set_u32(e, NFTNL_EXPR_REJECT_TYPE, x->a);
			nftnl_expr_set_u8(e, NFTNL_EXPR_REJECT_CODE, (uint8_t)x->b);
			break;
		}
		nftnl_rule_add_expr(r, e);
	}
}

void nft_batch_add_rule(struct nft_batch *b, const char *table, const char *chain,
			const struct nft_rule_ir *ir)
{
	uint32_t anon_id = 0;
	if (ir->has_anon) {
		anon_id = ++b->anon_id;
		anon_set(b, table, &ir->anon, anon_id);
	}
	struct nftnl_rule *r = nftnl_rule_alloc();
	nftnl_rule_set_u32(r, NFTNL_RULE_FAMILY, b->n->family);
	nftnl_rule_set_str(r, NFTNL_RULE_TABLE, table);
	nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, chain);
	add_exprs(r, ir, anon_id);
	if (ir->comment[0]) {
		struct nftnl_udata_buf *u = nftnl_udata_buf_alloc(NFT_USERDATA_MAXLEN);
		nftnl_udata_put_strz(u, NFTNL_UDATA_RULE_COMMENT, ir->comment);
		nftnl_rule_set_data(r, NFTNL_RULE_USERDATA, nftnl_udata_buf_data(u),
				    nftnl_udata_buf_len(u));
		nftnl_udata_buf_free(u);
	}
	/* Not echoed: a rule is known by its id; its handle, by a read (the echoes would cost
	 * a message of some 300 bytes per rule) */
	struct nlmsghdr *h = next_msg(b, NFT_MSG_NEWRULE, NLM_F_CREATE | NLM_F_APPEND,
				      "add rule %s to chain %s %s", ir->id[0] ? ir->id : "(no id)",
				      table, chain);
	nftnl_rule_nlmsg_build_payload(h, r);
	nftnl_rule_free(r);
	done_msg(b);
}

void nft_batch_flush_chain(struct nft_batch *b, const char *table, const char *chain)
{
	struct nftnl_rule *r = nftnl_rule_alloc();
	nftnl_rule_set_str(r, NFTNL_RULE_TABLE, table);
	nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, chain);
	struct nlmsghdr *h = next_msg(b, NFT_MSG_DELRULE, 0, "flush chain %s %s", table, chain);
	nftnl_rule_nlmsg_build_payload(h, r);
	nftnl_rule_free(r);
	done_msg(b);
}

void nft_batch_del_rule(struct nft_batch *b, const char *table, const char *chain, uint64_t handle)
{
	struct nftnl_rule *r = nftnl_rule_alloc();
	nftnl_rule_set_str(r, NFTNL_RULE_TABLE, table);
	nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, chain);
	nftnl_rule_set_u64(r, NFTNL_RULE_HANDLE, handle);
	struct nlmsghdr *h = next_msg(b, NFT_MSG_DELRULE, 0, "delete rule %llu of chain %s %s",
				      (unsigned long long)handle, table, chain);
	nftnl_rule_nlmsg_build_payload(h, r);
	nftnl_rule_free(r);
	done_msg(b);
}

/* --- commit --------------------------------------------------------------------------- */

/* An answer to a batch: an edit's error (kept, the first one), or the generation (done). */
static bool commit_answer(struct nft_batch *b, const struct nlmsghdr *h, uint32_t gen_seq)
{
	size_t at = h->nlmsg_seq - b->first_seq - 1;
	if (h->nlmsg_type == NLMSG_ERROR) {
		const struct nlmsgerr *e = mnl_nlmsg_get_payload(h);
		if (e->error && !b->err) {
			b->err = e->error;
			sb_addf(&b->errs, "%s: %s",
				at < b->n_what ? b->texts.buf + b->what[at] : "the batch",
				strerror(-e->error));
		}
	}
	return h->nlmsg_seq == gen_seq;
}

int nft_batch_commit(struct nft_batch *b)
{
	struct nft *n = b->n;
	if (b->err)
		return fail(n, b->err, "%s", sb_str(&b->errs));
	if (!b->n_what)
		return 0;
	nftnl_batch_end(nftnl_batch_buffer(b->nb), ++n->seq);
	nftnl_batch_update(b->nb);
	int iovlen = nftnl_batch_iovec_len(b->nb);
	struct iovec *iov = xcalloc((size_t)iovlen + 1, sizeof(*iov));
	nftnl_batch_iovec(b->nb, iov, (uint32_t)iovlen);
	/* Then the generation, whose answer comes after every error of the batch. */
	char gbuf[256];
	struct nlmsghdr *g =
		nftnl_nlmsg_build_hdr(gbuf, NFT_MSG_GETGEN, NFPROTO_UNSPEC, 0, ++n->seq);
	size_t total = 0;
	for (int i = 0; i < iovlen; i++)
		total += iov[i].iov_len;
	if (total + 65536 > n->sndbuf) {
		int v = (int)MIN(total + 65536, (size_t)INT32_MAX);
		if (setsockopt(mnl_socket_get_fd(n->nl), SOL_SOCKET, SO_SNDBUFFORCE, &v,
			       sizeof(v)) == 0)
			n->sndbuf = total + 65536;
	}
	/* the answers: the errors of failing edits, then the generation */
	grow_rcvbuf(n, (size_t)1 << 20);
	drain(n);
	struct sockaddr_nl snl = { .nl_family = AF_NETLINK };
	struct msghdr msg = { .msg_name = &snl,
			      .msg_namelen = sizeof(snl),
			      .msg_iov = iov,
			      .msg_iovlen = (size_t)iovlen };
	ssize_t sent = sendmsg(mnl_socket_get_fd(n->nl), &msg, 0);
	free(iov);
	if (sent < 0)
		return fail(n, -errno, "sending a batch of %zu edits (%zu bytes): %s", b->n_what,
			    total, strerror(errno));
	if (mnl_socket_sendto(n->nl, g, g->nlmsg_len) < 0)
		return fail(n, -errno, "asking for the generation: %s", strerror(errno));
	uint32_t gen_seq = g->nlmsg_seq;
	static char buf[1 << 16];
	for (bool done = false; !done;) {
		ssize_t len = mnl_socket_recvfrom(n->nl, buf, sizeof(buf));
		if (len < 0)
			return fail(n, -errno, "reading the batch's answer: %s", strerror(errno));
		int left = (int)len;
		for (const struct nlmsghdr *h = (const void *)buf; mnl_nlmsg_ok(h, left);
		     h = mnl_nlmsg_next(h, &left))
			done |= commit_answer(b, h, gen_seq);
	}
	if (b->err)
		return fail(n, b->err, "%s", sb_str(&b->errs));
	return 0;
}
