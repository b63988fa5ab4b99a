/*
 * The policy benchmarks' cluster, deterministic: 50 namespaces (team and
 * env labels), LOCAL endpoints on node1 and REMOTE ones on node2..node41,
 * POLICIES Kubernetes NetworkPolicies. Policy i lives in namespace i%50 and
 * selects app a(i%250) there; it admits, on TCP 80, 443 and the named port
 * "http", pods of role r(i%20) of its namespace, any pod of namespaces of
 * team t(i%10), and 172.16.(i%250).0/24 but its .128/25; every fifth also
 * limits egress to 10.96.0.0/12 and DNS. Endpoint j: namespace (j%250)%50,
 * app a(j%250), role r(j%20), port "http" = TCP 8080. So every local
 * endpoint is selected by two policies, and every policy applies to a local
 * endpoint when LOCAL >= 250.
 *
 * In IPv6 (policy_scenario_family(AF_INET6)) the same cluster with IPv6
 * addresses and networks instead: endpoint j fd00:10:(64 + j / 65536)::(j %
 * 65536), the ipBlocks fd00:172:16:(i%250)::/64 but its :8000::/65, egress
 * to fd00:10:96::/108.
 */
#ifndef BENCH_POLICY_SCENARIO_H
#define BENCH_POLICY_SCENARIO_H

#include <brindle/core/model.h>

/* The family of the addresses and networks made from now on (AF_INET, the default, or AF_INET6). */
void policy_scenario_family(int af);

/* Local endpoint j's interface: "cali" + 11 hex digits of a hash of j (as the CNI names them). */
void policy_scenario_iface(int j, char out[16]);

/* Every object of the scenario, to @emit (which owns it). */
void policy_scenario(int local, int remote, int policies,
		     void (*emit)(struct br_object *o, void *ctx), void *ctx);

/* Just policy @i, with its ingress ports shifted by @variant (a changed policy). */
struct br_object *policy_scenario_policy(int i, int variant);
/* Just endpoint @j (local when @local). */
struct br_object *policy_scenario_endpoint(int j, bool local);

#endif
