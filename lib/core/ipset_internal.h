/* Shared by the ip set backends (lib/ipset_*.c): parsed members and the batch's operations. */
#ifndef BRINDLE_IPSET_INTERNAL_H
#define BRINDLE_IPSET_INTERNAL_H

#include <brindle/core/ipset_batch.h>
#include <brindle/core/net.h>

/* Sort a list by name, and each set's members (ipset_util.c). */
void ips_list_sort(struct ips_list *l);

/* One member as the kernel stores it. */
struct ips_elem {
	struct br_ip ip; /* hash:net: host bits cleared */
	uint8_t cidr;	 /* hash:net: the prefix length; others: full length */
	uint8_t proto;	 /* hash:ip,port: IPPROTO_TCP ... */
	uint16_t port;	 /* hash:ip,port, host order */
};

/* Parse @member of a set of type @t and @family; -EINVAL as ips_member_canonical. */
int ips_elem_parse(enum ips_type t, uint8_t family, const char *member,
		   struct ips_elem *out) must_check;
/* The canonical text of a member is at most IPS_MEMBER_MAX bytes. */
#define IPS_MEMBER_MAX 64

/* 0, -EINVAL (NULL, empty, spaces or control characters) or -ENAMETOOLONG. */
int ips_name_check(const char *name) must_check;
/* ips_name_check of the name, a type we create, AF_INET or AF_INET6. */
int ips_info_check(const struct ips_info *info) must_check;
static inline uint32_t ips_maxelem(const struct ips_info *info)
{
	return info->maxelem ? info->maxelem : IPS_MAXELEM_DEFAULT;
}

struct ips_op {
	enum ips_op_kind kind;
	const char *set;
	const char *arg;	     /* add/del: the member; swap: the other set */
	const struct ips_info *info; /* create */
};

const struct ips_op *ips_batch_op(const struct ips_batch *b, size_t i);

/*
 * Backends: list() fills an empty list (the caller sorts it and frees it on
 * failure); apply() gets @errs zeroed, one per operation, never NULL, and a
 * batch of at least one operation; ips->err is empty on entry.
 */

/* Appends one set to @l and returns it (empty, with @info). */
struct ips_set *ips_list_push(struct ips_list *l, const struct ips_info *info);
/* Appends @member (malloc'd; the set takes ownership). */
void ips_set_push_member(struct ips_set *s, char *member);

#endif
