/*
 * The connection event log: packets that policy rules sent to NFLOG (denied
 * new connections, and allowed ones when configured), written as JSON lines.
 * Decoding a packet and its rule's prefix into a line is this module, pure;
 * felix/logfile.c appends the lines to a file, rate-limited so a flood cannot
 * fill the disk or take the node (the rules themselves are limited in the
 * kernel too: 10 a second per rule, bursts of 20).
 *
 * NFLOG prefixes, as the renderer writes them:
 *   "<V><d>:p:<policy hash>:<rule>"  a policy's rule decided (V: A allow, D deny;
 *                                   d: i to the endpoint, o from it)
 *   "<V><d>:r:<profile hash>:<rule>" a profile's rule decided
 *   "D<d>:e:<iface>"                 policies applied and none allowed
 *   "D<d>:n:<iface>"                 no policy applied and no profile allowed
 *   "D<d>:f:<iface>"                 fail closed: a policy of the endpoint cannot be rendered
 * and the staged preview's, which decide nothing (verdicts "would-allow", ...):
 *   "<V><d>:w:<policy hash>:<rule>"  a rule of a previewed tier's policy would decide (V: A,
 *                                   D or P for pass; rule -1: the policy cannot be rendered)
 *   "D<d>:x:<iface>:<tier hash>"     a previewed tier would drop: none of its policies would
 *                                   allow or pass
 */
#ifndef FELIX_EVENTLOG_H
#define FELIX_EVENTLOG_H

#include "policy.h"

#include <brindle/sys/nflog.h>
#include <brindle/core/strbuf.h>

/*
 * One line (no newline) for @ev. @ifname is the interface the packet came in
 * on or went out of (from the event's ifindex; NULL when unknown).
 */
void eventlog_format(const struct pol *p, const struct nflog_event *ev, const char *in_ifname,
		     const char *out_ifname, uint64_t now_us, struct strbuf *out);

#endif
