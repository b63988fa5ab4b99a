/*
 * ip sets (netfilter ipset), pure: set headers, members in canonical form,
 * lists as read back, and batches of operations (lib/core/ipset_util.c).
 * Applying them to a kernel is <brindle/sys/ipset.h>. The prefix is "ips_"
 * because libipset owns "ipset_".
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
 *
 * Both backends answer the same mistakes with the same codes:
 *   -EINVAL        a bad member (not valid for the set's type and family), a
 *                  bad name (empty, spaces or control characters), a create
 *                  with an unknown type or family, a swap between sets of
 *                  different type or family
 *   -ENAMETOOLONG  a name longer than IPS_NAME_MAX
 *   -ENOENT        add/del/flush/swap on a set that does not exist
 *   -EEXIST        create over an existing set with a different header (type,
 *                  family or maxelem); the same header is not an error
 *   -ENOSPC        add of a new member to a set holding maxelem members
 *   -EBUSY         destroy of a set that is in use (an iptables rule or a
 *                  list:set refers to it)
 */
#ifndef BRINDLE_CORE_IPSET_BATCH_H
#define BRINDLE_CORE_IPSET_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <brindle/core/strbuf.h>
#include <brindle/core/util.h>

/* The kernel's limit is 32 bytes with the NUL. */
#define IPS_NAME_MAX 31
/* What maxelem 0 stands for: Felix's default MaxIpsetSize. */
#define IPS_MAXELEM_DEFAULT 1048576u

enum ips_type {
	IPS_HASH_NET,
	IPS_HASH_IP,
	IPS_HASH_IP_PORT,
	/*
	 * Only in what list() returns: a set of another type (list:set,
	 * hash:net,port...) under our prefix, so that it can be destroyed. Its
	 * members are the text `ipset save` prints, as they are.
	 */
	IPS_OTHER,
};

struct ips_info {
	char name[IPS_NAME_MAX + 1];
	enum ips_type type;
	uint8_t family;	  /* AF_INET, AF_INET6 (list: 0 for a set without one) */
	uint32_t maxelem; /* 0: IPS_MAXELEM_DEFAULT; list() reports the kernel's value */
};

/* "hash:net" etc.; NULL for an unknown value (and IPS_OTHER). */
const char *ips_type_name(enum ips_type t);
int ips_type_parse(const char *s, enum ips_type *out) must_check;
/* Same type, family and maxelem (0 and IPS_MAXELEM_DEFAULT are the same): a swap or a
 * create with -exist semantics would accept one for the other. Names are not compared. */
bool ips_info_same_header(const struct ips_info *a, const struct ips_info *b);

/*
 * Put @member of a set of type @t and @family into the form `ipset save`
 * prints (into @out, at least 64 bytes; -ENOSPC if smaller and it does not
 * fit). -EINVAL when it is not a valid member ("10.0.0.300",
 * "10.0.0.1,tcp:99999", a /24 in a hash:ip set...). Accepted, as the kernel
 * stores them:
 *   hash:net      ADDR or ADDR/LEN, LEN 1..32 (1..128); host bits are cleared
 *                 ("10.0.0.5/24" is "10.0.0.0/24"); a full-length prefix
 *                 prints without its length. /0 is refused, as the kernel does.
 *   hash:ip       ADDR, or ADDR/32 (/128); not the all-zero address.
 *   hash:ip,port  ADDR[/32],[PROTO:]PORT, PROTO tcp (the default), udp, sctp
 *                 or udplite (or their numbers 6, 17, 132, 136), PORT
 *                 0..65535 in decimal; not the all-zero address. No ranges,
 *                 service names, icmp types or host names.
 * Addresses are written the way inet_pton reads them (no "010.0.0.1"), and
 * printed the way inet_ntop writes them (lower-case, "::" compressed).
 */
int ips_member_canonical(enum ips_type t, uint8_t family, const char *member, char *out,
			 size_t size) must_check;

/* --- reading -------------------------------------------------------------------- */

struct ips_set {
	struct ips_info info;
	/* canonical, sorted by strcmp; a member the kernel lists with options
	 * (" nomatch", " timeout 5") or that we could not parse is kept as
	 * `ipset save` prints it */
	char **members;
	size_t n;
	/* How many members the kernel says the set has; list_names gives it too, or SIZE_MAX on
	 * a kernel that does not say. */
	size_t entries;
};

struct ips_list {
	struct ips_set *v; /* sorted by name */
	size_t n;
};

void ips_list_free(struct ips_list *l);

/*
 * One message of an ip set header dump (IPSET_CMD_LIST with
 * IPSET_FLAG_LIST_HEADER): the set's name, type, family, maxelem and number
 * of entries, pushed onto @out when its name starts with @prefix (1); 0 for
 * another set; -EINVAL for a message without a name. The callback form is
 * for mnl_cb_run, with a struct ips_header_ctx.
 */
struct nlmsghdr;
int ips_parse_header_msg(const struct nlmsghdr *h, const char *prefix,
			 struct ips_list *out) must_check;
struct ips_header_ctx {
	const char *prefix;
	struct ips_list *out;
};
int ips_header_msg_cb(const struct nlmsghdr *h, void *data);

/* --- writing -------------------------------------------------------------------- */

enum ips_op_kind {
	IPS_OP_CREATE,	/* info (an existing set with the same header is not an error) */
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
/*
 * "add cali40s:abc 10.0.0.1" (ipset restore syntax), for logs; a create
 * names the maxelem it sends ("create NAME hash:net family inet maxelem
 * 1048576"). Valid until the next call on @b.
 */
const char *ips_batch_describe(struct ips_batch *b, size_t i);

#endif
