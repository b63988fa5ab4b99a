/* The recording sysctl backend (lib/testing/sysctl_record.c), for unit tests. */
#ifndef BRINDLE_TESTING_SYSCTL_RECORD_H
#define BRINDLE_TESTING_SYSCTL_RECORD_H

#include <brindle/sys/sysctl.h>

struct sysctl *sysctl_open_recording(void);
/* The log of writes ("net/ipv4/conf/cali1/proxy_arp=1"). */
size_t sysctl_record_count(const struct sysctl *s);
const char *sysctl_record_entry(const struct sysctl *s, size_t i);
/* Preset a value (as if the kernel had it). */
void sysctl_record_set(struct sysctl *s, const char *path, const char *value);

#endif
