/*
 * A legacy iptables table in the kernel's own layout (what IPT_SO_GET_ENTRIES
 * hands out and IPT_SO_SET_REPLACE takes), edited where it lies.
 *
 * Why not libiptc: the kernel takes a table whole, so a writer needs one copy
 * of it in its memory at the commit, and libiptc keeps two or three (the blob
 * it read, a parsed copy of every rule, the blob it builds). At 13,000 rules
 * that is 8 MB a copy, most of felix's peak. Here the table read stays in one
 * buffer, new rules are appended to it, and the commit moves the entries into
 * their new order in the same buffer; only entries that would have to move
 * backwards past others (a rule inserted into an old chain, a chain created
 * between two old ones) are copied aside first.
 *
 * Pure: no system calls. The buffer's memory comes from the caller's resize
 * function (the kernel backend maps it), so it can be given back whole.
 */
#ifndef BRINDLE_CORE_IPT_BLOB_H
#define BRINDLE_CORE_IPT_BLOB_H

#include <brindle/core/util.h>
#include <brindle/sys/ipt.h>

#include <stddef.h>
#include <stdint.h>

#define IPT_BLOB_HOOKS 5 /* NF_INET_NUMHOOKS */

/* A table's header: struct ipt_getinfo's fields, and struct ipt_replace's. */
struct ipt_blob_info {
	unsigned valid_hooks;
	unsigned hook_entry[IPT_BLOB_HOOKS], underflow[IPT_BLOB_HOOKS];
	unsigned num_entries, size;
};

/* Moves the buffer to @new_cap bytes, keeping its contents; NULL when it cannot. */
typedef void *ipt_blob_resize_fn(void *ctx, void *buf, size_t old_cap, size_t new_cap);

struct ipt_blob;

/*
 * Takes @buf (@cap bytes from @resize), whose entries start at @at and are
 * @info->size bytes, for family @af; the buffer is the blob's from here on,
 * given back through @resize(…, 0) by ipt_blob_free, also on error. Returns
 * -EPROTO with the reason in @err for a table it cannot follow (an entry
 * that overruns the table, a jump to no chain, a chain without its end).
 */
int ipt_blob_parse(int af, ipt_blob_resize_fn *resize, void *ctx, uint8_t *buf, size_t cap,
		   size_t at, const struct ipt_blob_info *info, struct ipt_blob **out,
		   struct strbuf *err) must_check;
void ipt_blob_free(struct ipt_blob *b);

/* The chains as they are now: names, rules' ids and targets. */
void ipt_blob_state(const struct ipt_blob *b, struct ipt_table_state *out);

/*
 * The edits, with ipt.h's errors and positions. A rule is an entry as
 * ipt_rule_parse lays it out (a standard target named by its verdict or
 * chain); it is copied.
 */
int ipt_blob_new_chain(struct ipt_blob *b, const char *chain, struct strbuf *err) must_check;
int ipt_blob_flush_chain(struct ipt_blob *b, const char *chain, struct strbuf *err) must_check;
int ipt_blob_delete_chain(struct ipt_blob *b, const char *chain, struct strbuf *err) must_check;
enum ipt_blob_write {
	IPT_BLOB_INSERT,  /* before rule @pos (@pos the chain's length: at its end) */
	IPT_BLOB_APPEND,  /* at the chain's end (@pos not used) */
	IPT_BLOB_REPLACE, /* rule @pos */
};
int ipt_blob_write(struct ipt_blob *b, enum ipt_blob_write op, const char *chain, size_t pos,
		   const void *entry, size_t len, struct strbuf *err) must_check;
int ipt_blob_delete(struct ipt_blob *b, const char *chain, size_t pos,
		    struct strbuf *err) must_check;

/*
 * Lays the edited table out for IPT_SO_SET_REPLACE: its entries at the
 * buffer's @at, *@info its header, (*@old_of)[i] the index in the table as
 * read of new entry i (UINT32_MAX for a new one), for carrying counters over
 * (malloc'd, the caller frees it). The blob takes no edits after this. -ENOMEM
 * when the buffer could not grow.
 */
int ipt_blob_layout(struct ipt_blob *b, struct ipt_blob_info *info, uint32_t **old_of,
		    struct strbuf *err) must_check;
/* The buffer (its address may change with every edit and with the layout). */
uint8_t *ipt_blob_buffer(const struct ipt_blob *b);
/* The number of entries as read. */
uint32_t ipt_blob_entries_read(const struct ipt_blob *b);

#endif
