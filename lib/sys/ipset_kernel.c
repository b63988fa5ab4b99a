/*
 * The kernel ip set backend, through libipset's session API; the only file
 * that includes libipset's headers. Nothing runs the ipset program.
 *
 * Writes use libipset's restore mode (every command carries a line number,
 * here the operation's index + 1): consecutive adds or dels to one set are
 * packed into one netlink message until a page is full, and the kernel
 * answers a failed member with its line number. Members are parsed by us
 * (lib/ipset_util.c) and handed over as binary data, never as text the
 * library would parse (its parser resolves host and service names).
 *
 * libipset reports errors as text only. The errno behind a report is found
 * by asking libipset to word each candidate code (ipset_errcode) for the
 * same command until the words match; the kernel's ipset-specific codes are
 * then mapped to the errnos include/brindle/ipset.h lists.
 *
 * A set's type is looked up once per apply (a HEADER message) unless the
 * batch created it; libipset's own cache of set types is process-wide and
 * goes stale when someone else re-creates a set, so it is emptied at the
 * start of every apply. libipset's process-wide state (types, that cache, a
 * static jmp_buf for print failures) is why one lock guards every call.
 *
 * Reading members uses the library's output function: `ipset save` text for
 * list(), captured and parsed here. list_names() (headers and the number of
 * entries, no members) is one netlink dump of our own (see there why).
 * What counts as ours is decided by the caller's name prefix.
 */
#include "ipset_internal.h"

#include <brindle/sys/ipset.h>

#include <brindle/core/hmap.h>

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>

#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter/nfnetlink.h>

#include <libipset/data.h>
#include <libipset/errcode.h>
#include <libipset/linux_ip_set.h>
#include <libipset/linux_ip_set_hash.h>
#include <libipset/session.h>
#include <libipset/types.h>

static pthread_mutex_t lib_lock = PTHREAD_MUTEX_INITIALIZER;

/* What an apply knows about a set it touched. */
struct known {
	bool missing;
	enum ips_type type;
	uint8_t family;
	const struct ipset_type *lib;
};

struct ips_kernel {
	struct ips ips;
	struct ipset_session *session;
	struct strbuf out; /* output of list commands */
	struct hmap known; /* per apply: set name -> struct known */
	struct strbuf msg; /* the text of the last report */
	struct mnl_socket *nl; /* list_names' own netlink socket, opened at its first use */
	uint32_t nl_seq;
};

static struct ips_kernel *kernel_of(struct ips *s)
{
	return container_of(s, struct ips_kernel, ips);
}

static int printf_like(3, 4) outfn(struct ipset_session *session, void *p, const char *fmt, ...)
{
	struct ips_kernel *k = p;
	va_list ap;
	va_start(ap, fmt);
	if (strcmp(fmt, "%s") == 0) /* how libipset hands over its output buffer */
		sb_adds(&k->out, va_arg(ap, const char *));
	else
		sb_vaddf(&k->out, fmt, ap);
	va_end(ap);
	return 0;
}

/* --- errors --------------------------------------------------------------------- */

static int errno_of(int code)
{
	switch (code) {
	case IPSET_ERR_PROTOCOL:
		return -EPROTO;
	case IPSET_ERR_FIND_TYPE:
		return -EOPNOTSUPP;
	case IPSET_ERR_MAX_SETS:
	case IPSET_ERR_HASH_FULL:
		return -ENOSPC;
	case IPSET_ERR_BUSY:
	case IPSET_ERR_REFERENCED:
		return -EBUSY;
	case IPSET_ERR_EXIST_SETNAME2:
		return -ENOENT;
	case IPSET_ERR_EXIST:
		return -EEXIST;
	case IPSET_ERR_TYPE_MISMATCH:
	case IPSET_ERR_INVALID_CIDR:
	case IPSET_ERR_INVALID_NETMASK:
	case IPSET_ERR_INVALID_FAMILY:
	case IPSET_ERR_TIMEOUT:
	case IPSET_ERR_IPADDR_IPV4:
	case IPSET_ERR_IPADDR_IPV6:
	case IPSET_ERR_COUNTER:
	case IPSET_ERR_COMMENT:
	case IPSET_ERR_INVALID_MARKMASK:
	case IPSET_ERR_SKBINFO:
	case IPSET_ERR_BITMASK_NETMASK_EXCL:
	case IPSET_ERR_HASH_ELEM:
	case IPSET_ERR_INVALID_PROTO:
	case IPSET_ERR_MISSING_PROTO:
	case IPSET_ERR_HASH_RANGE_UNSUPPORTED:
	case IPSET_ERR_HASH_RANGE:
		return -EINVAL;
	default:
		return code > 0 && code < IPSET_ERR_PRIVATE ? -code : -EIO;
	}
}

static bool try_code(struct ips_kernel *k, enum ipset_cmd cmd, int code, const char *report)
{
	ipset_session_report_reset(k->session);
	(void)ipset_errcode(k->session, cmd, code);
	return strcmp(ipset_session_report_msg(k->session), report) == 0;
}

/*
 * The errno behind the session's error report about @cmd; the report's text,
 * without libipset's "Error in line N: " and newline, goes to k->msg. The
 * report is cleared.
 */
static int decode_report(struct ips_kernel *k, enum ipset_cmd cmd)
{
	char *report = xstrdup(ipset_session_report_msg(k->session));
	int err = -EIO;
	for (int c = IPSET_ERR_PROTOCOL; c <= IPSET_ERR_BITMASK_NETMASK_EXCL && err == -EIO; c++)
		if (try_code(k, cmd, c, report))
			err = errno_of(c);
	for (int c = IPSET_ERR_HASH_FULL; c <= IPSET_ERR_HASH_RANGE && err == -EIO; c++)
		if (try_code(k, cmd, c, report))
			err = errno_of(c);
	for (int c = 1; c < 134 && err == -EIO; c++)
		if (try_code(k, cmd, c, report))
			err = -c;
	ipset_session_report_reset(k->session);

	const char *text = report;
	if (str_has_prefix(text, "Error in line ")) {
		const char *colon = strstr(text, ": ");
		if (colon)
			text = colon + 2;
	}
	sb_reset(&k->msg);
	sb_adds(&k->msg, text);
	while (k->msg.len &&
	       (k->msg.buf[k->msg.len - 1] == '\n' || k->msg.buf[k->msg.len - 1] == ' '))
		sb_truncate(&k->msg, k->msg.len - 1);
	if (!k->msg.len)
		sb_adds(&k->msg, "libipset gave no reason");
	free(report);
	return err;
}

/* The line number libipset put in its report (0: none). */
static unsigned report_line(struct ips_kernel *k)
{
	unsigned line = 0;
	if (sscanf(ipset_session_report_msg(k->session), "Error in line %u: ", &line) != 1)
		return 0;
	return line;
}

/* --- apply ---------------------------------------------------------------------- */

struct apply {
	struct ips_kernel *k;
	struct ips_batch *b;
	int *errs;
	size_t n;
	size_t floor; /* operations before it are settled */
};

static enum ipset_cmd cmd_of(enum ips_op_kind kind)
{
	switch (kind) {
	case IPS_OP_CREATE:
		return IPSET_CMD_CREATE;
	case IPS_OP_ADD:
		return IPSET_CMD_ADD;
	case IPS_OP_DEL:
		return IPSET_CMD_DEL;
	case IPS_OP_FLUSH:
		return IPSET_CMD_FLUSH;
	case IPS_OP_SWAP:
		return IPSET_CMD_SWAP;
	case IPS_OP_DESTROY:
		return IPSET_CMD_DESTROY;
	}
	return IPSET_CMD_NONE;
}

static bool is_adt(const struct ips_op *op)
{
	return op->kind == IPS_OP_ADD || op->kind == IPS_OP_DEL;
}

/* Operation @i failed with @err, for the reason in @why. */
static void fail(struct apply *a, size_t i, int err, const char *why)
{
	const struct ips_op *op = ips_batch_op(a->b, i);
	if (op->kind == IPS_OP_DESTROY && err == -ENOENT)
		return;
	a->errs[i] = err;
	struct strbuf *e = &a->k->ips.err;
	if (!e->len)
		sb_addf(e, "%s: %s", ips_batch_describe(a->b, i), why);
}

static void fail_errno(struct apply *a, size_t i, int err)
{
	fail(a, i, err, strerror(-err));
}

static void know(struct ips_kernel *k, const char *name, struct known *kn)
{
	free(hmap_put(&k->known, name, kn));
}

static void know_missing(struct ips_kernel *k, const char *name)
{
	struct known *kn = xcalloc(1, sizeof(*kn));
	kn->missing = true;
	know(k, name, kn);
}

/* The set @name, looked up in the kernel on first use; -ENOENT when it does not exist. */
static int resolve(struct apply *a, const char *name, const struct known **out)
{
	struct ips_kernel *k = a->k;
	struct known *kn = hmap_get(&k->known, name);
	if (!kn) {
		struct ipset_data *d = ipset_session_data(k->session);
		ipset_data_reset(d);
		ipset_data_set(d, IPSET_SETNAME, name);
		const struct ipset_type *t = ipset_type_get(k->session, IPSET_CMD_ADD);
		if (!t) {
			int err = decode_report(k, IPSET_CMD_HEADER);
			if (err != -ENOENT)
				return err;
			know_missing(k, name);
			return -ENOENT;
		}
		kn = xcalloc(1, sizeof(*kn));
		kn->lib = t;
		kn->family = ipset_data_family(d);
		if (ips_type_parse(t->name, &kn->type) < 0)
			kn->type = IPS_OTHER;
		know(k, name, kn);
		ipset_data_reset(d);
	}
	if (kn->missing) {
		sb_reset(&k->msg);
		sb_adds(&k->msg, "The set with the given name does not exist");
		return -ENOENT;
	}
	*out = kn;
	return 0;
}

static int prepare_create(struct apply *a, size_t i, const struct ips_op *op)
{
	struct ips_kernel *k = a->k;
	const struct ips_info *info = op->info;
	int err = ips_info_check(info);
	if (err < 0) {
		fail_errno(a, i, err);
		return err;
	}
	struct ipset_data *d = ipset_session_data(k->session);
	uint8_t family = info->family;
	uint32_t maxelem = ips_maxelem(info);
	ipset_data_set(d, IPSET_SETNAME, info->name);
	ipset_data_set(d, IPSET_OPT_TYPENAME, ips_type_name(info->type));
	ipset_data_set(d, IPSET_OPT_FAMILY, &family);
	if (!ipset_type_get(k->session, IPSET_CMD_CREATE)) {
		err = decode_report(k, IPSET_CMD_TYPE);
		fail(a, i, err, sb_str(&k->msg));
		return err;
	}
	ipset_data_set(d, IPSET_OPT_MAXELEM, &maxelem);
	return 0;
}

static int prepare_adt(struct apply *a, size_t i, const struct ips_op *op)
{
	struct ips_kernel *k = a->k;
	int err = ips_name_check(op->set);
	if (err < 0) {
		fail_errno(a, i, err);
		return err;
	}
	const struct known *kn = NULL;
	err = resolve(a, op->set, &kn);
	if (err < 0 || !kn) {
		fail(a, i, err < 0 ? err : -EIO, sb_str(&k->msg));
		return err < 0 ? err : -EIO;
	}
	struct ips_elem e;
	if (kn->type == IPS_OTHER) {
		sb_reset(&k->msg);
		sb_addf(&k->msg, "the set is a %s: not a type we write members to", kn->lib->name);
		fail(a, i, -EINVAL, sb_str(&k->msg));
		return -EINVAL;
	}
	if (ips_elem_parse(kn->type, kn->family, op->arg, &e) < 0) {
		sb_reset(&k->msg);
		sb_addf(&k->msg, "not a member of a %s set of family %s", ips_type_name(kn->type),
			kn->family == AF_INET6 ? "inet6" : "inet");
		fail(a, i, -EINVAL, sb_str(&k->msg));
		return -EINVAL;
	}
	struct ipset_data *d = ipset_session_data(k->session);
	union nf_inet_addr ip;
	_Static_assert(sizeof(ip) == sizeof(e.ip.a), "an address is 16 bytes");
	memcpy(&ip, e.ip.a, sizeof(ip));
	uint8_t family = kn->family;
	ipset_data_set(d, IPSET_SETNAME, op->set);
	ipset_data_set(d, IPSET_OPT_TYPE, kn->lib);
	ipset_data_set(d, IPSET_OPT_FAMILY, &family);
	ipset_data_set(d, IPSET_OPT_IP, &ip);
	if (kn->type == IPS_HASH_NET)
		ipset_data_set(d, IPSET_OPT_CIDR, &e.cidr);
	if (kn->type == IPS_HASH_IP_PORT) {
		ipset_data_set(d, IPSET_OPT_PORT, &e.port);
		ipset_data_set(d, IPSET_OPT_PROTO, &e.proto);
	}
	return 0;
}

static int prepare(struct apply *a, size_t i, const struct ips_op *op)
{
	struct ipset_data *d = ipset_session_data(a->k->session);
	ipset_data_reset(d);
	int err = 0;
	switch (op->kind) {
	case IPS_OP_CREATE:
		return prepare_create(a, i, op);
	case IPS_OP_ADD:
	case IPS_OP_DEL:
		return prepare_adt(a, i, op);
	case IPS_OP_SWAP:
		err = ips_name_check(op->arg);
		if (err == 0)
			ipset_data_set(d, IPSET_OPT_SETNAME2, op->arg);
		/* fallthrough */
	case IPS_OP_FLUSH:
	case IPS_OP_DESTROY:
		if (err == 0)
			err = ips_name_check(op->set);
		if (err == 0)
			ipset_data_set(d, IPSET_SETNAME, op->set);
		break;
	}
	if (err < 0)
		fail_errno(a, i, err);
	return err;
}

/* Operation @op went through: what the apply knows about its sets follows. */
static void applied(struct apply *a, const struct ips_op *op)
{
	struct ips_kernel *k = a->k;
	switch (op->kind) {
	case IPS_OP_CREATE: {
		struct known *kn = xcalloc(1, sizeof(*kn));
		kn->type = op->info->type;
		kn->family = op->info->family;
		kn->lib = ipset_saved_type(k->session);
		if (kn->lib)
			know(k, op->set, kn);
		else
			free(kn);
		break;
	}
	case IPS_OP_SWAP: {
		struct known *x = hmap_del(&k->known, op->set), *y = hmap_del(&k->known, op->arg);
		if (y)
			know(k, op->set, y);
		if (x)
			know(k, op->arg, x);
		break;
	}
	case IPS_OP_DESTROY:
		know_missing(k, op->set);
		break;
	default:
		break;
	}
}

/*
 * A command failed: either operation @i itself (not an add or del), or the
 * message of queued adds/dels that libipset sent before it (then @i was not
 * sent; @i is the batch's size for the final commit). Returns where to go on.
 */
static size_t failed(struct apply *a, size_t i)
{
	struct ips_kernel *k = a->k;
	unsigned line = report_line(k);
	size_t last = i < a->n ? i : a->n - 1;
	size_t f = line ? line - 1 : last;
	if (f < a->floor || f > last)
		f = last;
	const struct ips_op *op = ips_batch_op(a->b, f);
	int err = decode_report(k, cmd_of(op->kind));
	fail(a, f, err, sb_str(&k->msg));
	size_t resume = f + 1;
	/*
	 * The kernel stops a message at its first failing member; the members
	 * queued after it were not applied and go again. When the whole message
	 * was refused (the set is gone, no permission), they fail with it.
	 */
	if (f < i && is_adt(op) && (err == -ENOENT || err == -EPERM)) {
		for (size_t j = f + 1; j < i; j++) {
			const struct ips_op *q = ips_batch_op(a->b, j);
			if (!a->errs[j] && is_adt(q) && strcmp(q->set, op->set) == 0)
				fail(a, j, err, sb_str(&k->msg));
		}
		if (err == -ENOENT)
			know_missing(k, op->set);
		resume = i;
	}
	if (op->kind == IPS_OP_DESTROY && err == -ENOENT)
		know_missing(k, op->set);
	a->floor = resume;
	return resume;
}

static size_t submit(struct apply *a, size_t i)
{
	const struct ips_op *op = ips_batch_op(a->b, i);
	if (prepare(a, i, op) < 0)
		return i + 1;
	if (ipset_cmd(a->k->session, cmd_of(op->kind), (uint32_t)(i + 1)) < 0)
		return failed(a, i);
	if (!is_adt(op)) {
		applied(a, op);
		a->floor = i + 1;
	}
	return i + 1;
}

static void forget_sets(struct ips_kernel *k)
{
	for (struct hmap_iter it = hmap_iter(&k->known); hmap_next(&it);)
		free(it.value);
	hmap_clear(&k->known);
	ipset_cache_fini();
}

static int k_apply(struct ips *s, struct ips_batch *b, int *errs)
{
	struct ips_kernel *k = kernel_of(s);
	struct apply a = { .k = k, .b = b, .errs = errs, .n = ips_batch_count(b) };
	pthread_mutex_lock(&lib_lock);
	forget_sets(k);
	ipset_session_report_reset(k->session);
	size_t i = 0;
	for (;;) {
		while (i < a.n)
			i = submit(&a, i);
		if (ipset_commit(k->session) == 0)
			break;
		i = failed(&a, a.n);
	}
	ipset_data_reset(ipset_session_data(k->session));
	forget_sets(k);
	pthread_mutex_unlock(&lib_lock);
	int n = 0;
	for (size_t j = 0; j < a.n; j++)
		n += errs[j] != 0;
	return n;
}

/* --- list ----------------------------------------------------------------------- */

static int run_save(struct ips_kernel *k)
{
	struct ipset_session *session = k->session;
	sb_reset(&k->out);
	ipset_data_reset(ipset_session_data(session));
	ipset_session_report_reset(session);
	ipset_session_output(session, IPSET_LIST_SAVE);
	int r = ipset_cmd(session, IPSET_CMD_SAVE, 0);
	ipset_session_output(session, IPSET_LIST_NONE);
	if (r < 0) {
		r = decode_report(k, IPSET_CMD_SAVE);
		sb_addf(&k->ips.err, "save: %s", sb_str(&k->msg));
	}
	return r < 0 ? r : 0;
}

/* "family inet hashsize 1024 maxelem 65536 ..." into @info. */
static void parse_header(const char *s, struct ips_info *info)
{
	char key[32], value[64];
	int used;
	while (sscanf(s, " %31s %63s%n", key, value, &used) == 2) {
		if (strcmp(key, "family") == 0 && strcmp(value, "inet") == 0)
			info->family = AF_INET;
		else if (strcmp(key, "family") == 0 && strcmp(value, "inet6") == 0)
			info->family = AF_INET6;
		else if (strcmp(key, "maxelem") == 0)
			info->maxelem = (uint32_t)strtoul(value, NULL, 10);
		s += used;
	}
}

/* The next line of @text at *pos, NUL-terminated in place; NULL at the end. */
static char *next_line(char *text, size_t len, size_t *pos)
{
	if (*pos >= len)
		return NULL;
	char *line = text + *pos, *nl = memchr(line, '\n', len - *pos);
	if (nl) {
		*nl = '\0';
		*pos = (size_t)(nl - text) + 1;
	} else {
		*pos = len;
	}
	return line;
}

static char *member_text(const struct ips_info *info, const char *text)
{
	char m[IPS_MEMBER_MAX];
	if (info->type != IPS_OTHER &&
	    ips_member_canonical(info->type, info->family, text, m, sizeof(m)) == 0)
		return xstrdup(m);
	return xstrdup(text);
}

/* The next space-separated word of *s (advanced past it and its space); NULL at the end. */
static const char *word(const char **s, size_t *len)
{
	const char *p = *s;
	while (*p == ' ')
		p++;
	if (!*p)
		return NULL;
	const char *end = strchrnul(p, ' ');
	*len = (size_t)(end - p);
	*s = *end ? end + 1 : end;
	return p;
}

static bool word_is(const char *w, size_t len, const char *s)
{
	return strlen(s) == len && memcmp(w, s, len) == 0;
}

/* `ipset save`: "create NAME TYPE OPTIONS" then "add NAME MEMBER [OPTIONS]" lines. */
static void parse_save(struct ips_kernel *k, const char *prefix, struct ips_list *out)
{
	size_t pos = 0, cur = SIZE_MAX, vlen = 0, nlen = 0, tlen = 0;
	char *line;
	while ((line = next_line(k->out.buf, k->out.len, &pos))) {
		const char *rest = line, *verb = word(&rest, &vlen), *name = word(&rest, &nlen);
		if (!verb || !name || nlen > IPS_NAME_MAX)
			continue;
		if (word_is(verb, vlen, "add")) {
			if (cur != SIZE_MAX && strlen(out->v[cur].info.name) == nlen &&
			    memcmp(out->v[cur].info.name, name, nlen) == 0) {
				struct ips_set *set = &out->v[cur];
				ips_set_push_member(set, member_text(&set->info, rest));
			}
			continue;
		}
		if (!word_is(verb, vlen, "create"))
			continue;
		cur = SIZE_MAX;
		struct ips_info info = { 0 };
		memcpy(info.name, name, nlen);
		const char *type = word(&rest, &tlen);
		if (!type || !str_has_prefix(info.name, prefix) || tlen >= 32)
			continue;
		char t[32];
		memcpy(t, type, tlen);
		t[tlen] = '\0';
		if (ips_type_parse(t, &info.type) < 0)
			info.type = IPS_OTHER;
		parse_header(rest, &info);
		ips_list_push(out, &info);
		cur = out->n - 1;
	}
}

static int k_list(struct ips *s, const char *prefix, struct ips_list *out)
{
	struct ips_kernel *k = kernel_of(s);
	pthread_mutex_lock(&lib_lock);
	int r = run_save(k);
	pthread_mutex_unlock(&lib_lock);
	if (r == 0) {
		parse_save(k, prefix, out);
		for (size_t i = 0; i < out->n; i++)
			out->v[i].entries = out->v[i].n;
	}
	sb_reset(&k->out);
	return r;
}

/*
 * The sets' headers (name, type, family, maxelem, number of entries) by one
 * netlink dump of IPSET_CMD_LIST with IPSET_FLAG_LIST_HEADER, over libmnl.
 * Hand-written because libipset offers listings only as text: formatting and
 * re-parsing it cost twice what the kernel's dump does, and felix's drift
 * check reads these sizes every second.
 */
static int k_list_names(struct ips *s, const char *prefix, struct ips_list *out)
{
	struct ips_kernel *k = kernel_of(s);
	if (!k->nl) {
		k->nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
		if (!k->nl || mnl_socket_bind(k->nl, 0, MNL_SOCKET_AUTOPID) < 0) {
			int e = errno;
			if (k->nl)
				mnl_socket_close(k->nl);
			k->nl = NULL;
			sb_reset(&s->err);
			sb_addf(&s->err, "list: netlink socket: %s", strerror(e));
			return -e;
		}
	}
	static __thread uint8_t buf[32768];
	struct nlmsghdr *h = mnl_nlmsg_put_header(buf);
	h->nlmsg_type = (NFNL_SUBSYS_IPSET << 8) | IPSET_CMD_LIST;
	h->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	uint32_t seq = ++k->nl_seq;
	h->nlmsg_seq = seq;
	struct nfgenmsg *nf = mnl_nlmsg_put_extra_header(h, sizeof(*nf));
	nf->nfgen_family = NFPROTO_IPV4;
	nf->version = NFNETLINK_V0;
	nf->res_id = htons(0);
	mnl_attr_put_u8(h, IPSET_ATTR_PROTOCOL, IPSET_PROTOCOL);
	mnl_attr_put_u32(h, IPSET_ATTR_FLAGS | NLA_F_NET_BYTEORDER, htonl(IPSET_FLAG_LIST_HEADER));
	struct ips_header_ctx t = { prefix, out };
	size_t before = out->n;
	int r = mnl_socket_sendto(k->nl, h, h->nlmsg_len) < 0 ? -errno : 0;
	uint32_t portid = mnl_socket_get_portid(k->nl);
	while (r == 0) {
		ssize_t n = mnl_socket_recvfrom(k->nl, buf, sizeof(buf));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			break;
		}
		int cb = mnl_cb_run(buf, (size_t)n, seq, portid, ips_header_msg_cb, &t);
		if (cb == MNL_CB_STOP)
			break;
		if (cb < 0)
			r = -errno;
	}
	if (r < 0) {
		/* A socket left mid-dump would answer the next request with this one's rest. */
		mnl_socket_close(k->nl);
		k->nl = NULL;
		out->n = before; /* headers only: nothing else to free */
		sb_reset(&s->err);
		sb_addf(&s->err, "list: %s", strerror(-r));
	}
	return r;
}

/* --- open and close ------------------------------------------------------------- */

static void k_close(struct ips *s)
{
	struct ips_kernel *k = kernel_of(s);
	pthread_mutex_lock(&lib_lock);
	if (k->session)
		ipset_session_fini(k->session);
	forget_sets(k);
	pthread_mutex_unlock(&lib_lock);
	if (k->nl)
		mnl_socket_close(k->nl);
	sb_free(&k->out);
	sb_free(&k->msg);
	sb_free(&s->err);
	free(k);
}

static const struct ips_ops kernel_ops = {
	.list = k_list,
	.list_names = k_list_names,
	.apply = k_apply,
	.close = k_close,
};

int ips_open_kernel(struct ips **out)
{
	struct ips_kernel *k = xcalloc(1, sizeof(*k));
	k->ips.ops = &kernel_ops;
	sb_init(&k->ips.err);
	sb_init(&k->out);
	sb_init(&k->msg);
	pthread_mutex_lock(&lib_lock);
	ipset_load_types();
	k->session = ipset_session_init(outfn, k);
	int r = k->session ? 0 : -ENOMEM;
	if (r == 0) {
		ipset_envopt_set(k->session, IPSET_ENV_EXIST);
		/* Opens the netlink socket (in this namespace) and checks the protocol version. */
		if (ipset_cmd(k->session, IPSET_CMD_NONE, 0) < 0)
			r = decode_report(k, IPSET_CMD_PROTOCOL);
	}
	pthread_mutex_unlock(&lib_lock);
	if (r < 0) {
		k_close(&k->ips);
		return r;
	}
	*out = &k->ips;
	return 0;
}
