/* The recording netlink backend (lib/testing/nl_record.c): a simulated kernel for unit tests. */
#ifndef BRINDLE_TESTING_NL_RECORD_H
#define BRINDLE_TESTING_NL_RECORD_H

#include <brindle/sys/nl.h>

/* A simulated kernel with a loopback device (ifindex 1). */
struct nl *nl_open_recording(void);
/* The log of applied messages. */
size_t nl_record_count(const struct nl *nl);
const char *nl_record_entry(const struct nl *nl, size_t i);
void nl_record_clear_log(struct nl *nl);
/* Simulate a kernel with the ipip module (by default, like this machine's: without). */
void nl_record_allow_ipip(struct nl *nl);
/* Make the next apply of a message matching @what (substring of its description) fail. */
void nl_record_fail_next(struct nl *nl, const char *what, int err);

#endif
