/* The recording iptables backend (lib/testing/ipt_record.c), for unit tests. */
#ifndef BRINDLE_TESTING_IPT_RECORD_H
#define BRINDLE_TESTING_IPT_RECORD_H

#include <brindle/sys/ipt.h>

/* Empty built-in chains of the four tables, policy ACCEPT. */
struct ipt *ipt_open_recording(void);
/* The whole table as iptables-save would print it (for tests). */
void ipt_record_save(struct ipt *t, const char *table, struct strbuf *out);
/* Recording backend only: commits so far, per table name (for tests). */
unsigned ipt_record_commits(struct ipt *t, const char *table);

/* An ipt_blob buffer from malloc (the kernel backend maps its own), for tests of ipt_blob. */
void *ipt_blob_malloc_resize(void *ctx, void *buf, size_t old_cap, size_t new_cap);

#endif
