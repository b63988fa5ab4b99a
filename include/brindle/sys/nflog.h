/*
 * NFLOG (nfnetlink_log) reading: binds to groups in the caller's network
 * namespace and asks for the first bytes of each packet only (the IP and
 * transport headers); events are <brindle/core/nflog_msg.h>.
 */
#ifndef BRINDLE_SYS_NFLOG_H
#define BRINDLE_SYS_NFLOG_H

#include <brindle/core/nflog_msg.h>

struct nflog;

/* Bind @groups (copying @copy_bytes of each packet); a non-blocking fd for an event loop. */
int nflog_open(const uint16_t *groups, size_t n, uint16_t copy_bytes,
	       struct nflog **out) must_check;
int nflog_fd(const struct nflog *l);
/* Hand every pending event to @cb; -ENOBUFS when the kernel dropped some (they are lost). */
int nflog_read(struct nflog *l, void (*cb)(const struct nflog_event *ev, void *ctx), void *ctx);
void nflog_close(struct nflog *l);

#endif
