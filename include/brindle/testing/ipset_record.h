/* The recording ip set backend (lib/testing/ipset_record.c), for unit tests. */
#ifndef BRINDLE_TESTING_IPSET_RECORD_H
#define BRINDLE_TESTING_IPSET_RECORD_H

#include <brindle/sys/ipset.h>

/* No sets; every applied operation is logged. */
struct ips *ips_open_recording(void);
/* The log of applied operations (ips_batch_describe form). */
size_t ips_record_count(const struct ips *s);
const char *ips_record_entry(const struct ips *s, size_t i);
void ips_record_clear_log(struct ips *s);
/* Make the next operation whose description contains @what fail with @err. */
void ips_record_fail_next(struct ips *s, const char *what, int err);
/* Mark set @name in use (as an iptables rule using it would): destroy fails with -EBUSY. The mark
 * belongs to the name, as the kernel's reference count does: a swap leaves it where it is. */
void ips_record_set_in_use(struct ips *s, const char *name, bool in_use);

#endif
