/*
 * NFLOG (nfnetlink_log) packet messages, pure: the packets an iptables NFLOG
 * rule hands to user space, with the rule's prefix, parsed for the event log,
 * tests and fuzzing. Reading them is <brindle/sys/nflog.h>.
 */
#ifndef BRINDLE_CORE_NFLOG_MSG_H
#define BRINDLE_CORE_NFLOG_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <brindle/core/net.h>

struct nflog_event {
	uint16_t group;
	char prefix[65];
	uint32_t indev, outdev; /* ifindex; 0 when none */
	uint64_t time_us;	/* the kernel's timestamp, when it gave one; 0 otherwise */
	uint8_t proto;		/* IP protocol; 0 when the payload was not IPv4/IPv6 */
	struct br_ip src, dst;
	uint16_t sport, dport;	  /* TCP, UDP, UDPLite, SCTP */
	int icmp_type, icmp_code; /* -1 when not ICMP */
};

struct nlmsghdr;

/*
 * One NFULNL_MSG_PACKET message into @out. Returns 0, -ENOENT for another
 * kind of message, -EINVAL for a malformed one. Never reads past the message.
 */
int nflog_parse(const struct nlmsghdr *h, struct nflog_event *out) must_check;

#endif
