/*
 * NFLOG (nfnetlink_log): packets that an iptables NFLOG rule hands to user
 * space, with the rule's prefix. The reader binds to groups in the caller's
 * network namespace and asks for the first bytes of each packet only (the IP
 * and transport headers). Parsing a message is pure (nflog_parse), for tests
 * and fuzzing.
 */
#ifndef BRINDLE_NFLOG_H
#define BRINDLE_NFLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <brindle/net.h>

struct nflog_event {
	uint16_t group;
	char prefix[65];
	uint32_t indev, outdev; /* ifindex; 0 when none */
	uint64_t time_us;	/* the kernel's timestamp, when it gave one; 0 otherwise */
	uint8_t proto;		/* IP protocol; 0 when the payload was not IPv4/IPv6 */
	struct br_ip src, dst;
	uint16_t sport, dport; /* TCP, UDP, UDPLite, SCTP */
	int icmp_type, icmp_code; /* -1 when not ICMP */
};

struct nlmsghdr;

/*
 * One NFULNL_MSG_PACKET message into @out. Returns 0, -ENOENT for another
 * kind of message, -EINVAL for a malformed one. Never reads past the message.
 */
int nflog_parse(const struct nlmsghdr *h, struct nflog_event *out) must_check;

struct nflog;

/* Bind @groups (copying @copy_bytes of each packet); a non-blocking fd for an event loop. */
int nflog_open(const uint16_t *groups, size_t n, uint16_t copy_bytes, struct nflog **out) must_check;
int nflog_fd(const struct nflog *l);
/* Hand every pending event to @cb; -ENOBUFS when the kernel dropped some (they are lost). */
int nflog_read(struct nflog *l, void (*cb)(const struct nflog_event *ev, void *ctx), void *ctx);
void nflog_close(struct nflog *l);

#endif
