#include "policy_scenario.h"

#include <brindle/core/util.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define NAMESPACES 50

static int family = AF_INET;

void policy_scenario_family(int af)
{
	family = af;
}

static struct br_object *one(const char *yaml)
{
	struct br_object **objs;
	size_t n;
	struct model_errors errs = { 0 };
	if (model_read("scenario", yaml, strlen(yaml), NULL, &objs, &n, &errs) < 0 || n != 1) {
		fprintf(stderr, "scenario: %s\n%s\n", errs.n ? errs.v[0] : "not one object", yaml);
		exit(1);
	}
	struct br_object *o = objs[0];
	free(objs);
	return o;
}

void policy_scenario_iface(int j, char out[16])
{
	/* hex of a hash, as the CNI plugin names them, so dispatch bins are as even as in life */
	uint64_t x = (uint64_t)j + 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	x ^= x >> 31;
	snprintf(out, 16, "cali%011llx", (unsigned long long)(x & 0xfffffffffffull));
}

/* Endpoint j's network: 10.(64 + j / 65536).(j / 256 % 256).(j % 256)/32, in 10.64.0.0/10
 * (IPv6: fd00:10:(64 + j / 65536)::(j % 65536)/128). */
static void policy_scenario_ip(int j, char out[48])
{
	if (family == AF_INET6)
		snprintf(out, 48, "fd00:10:%x::%x/128", 64 + j / 65536, j % 65536);
	else
		snprintf(out, 48, "10.%d.%d.%d/32", 64 + j / 65536, j / 256 % 256, j % 256);
}

struct br_object *policy_scenario_endpoint(int j, bool local)
{
	char buf[1024], iface[16], ip[48];
	int app = j % 250, ns = app % NAMESPACES;
	policy_scenario_iface(j, iface);
	policy_scenario_ip(j, ip);
	snprintf(buf, sizeof(buf),
		 "apiVersion: projectcalico.org/v3\nkind: WorkloadEndpoint\n"
		 "metadata:\n  name: node%d-k8s-pod%d-eth0\n  namespace: ns%d\n"
		 "  labels: {app: a%d, role: r%d, projectcalico.org/namespace: ns%d, "
		 "projectcalico.org/orchestrator: k8s}\n"
		 "spec: {node: node%d, orchestrator: k8s, pod: pod%d, endpoint: eth0, "
		 "interfaceName: %s, ipNetworks: ['%s'], profiles: [kns.ns%d], "
		 "ports: [{name: http, protocol: TCP, port: 8080}]}\n",
		 local ? 1 : 2 + j % 40, j, ns, app, j % 20, ns, local ? 1 : 2 + j % 40, j, iface,
		 ip, ns);
	return one(buf);
}

struct br_object *policy_scenario_policy(int i, int variant)
{
	char buf[2048], block[96];
	bool v6 = family == AF_INET6;
	if (v6)
		snprintf(block, sizeof(block),
			 "{cidr: 'fd00:172:16:%x::/64', except: "
			 "['fd00:172:16:%x:8000::/65']}",
			 i % 250, i % 250);
	else
		snprintf(block, sizeof(block), "{cidr: 172.16.%d.0/24, except: [172.16.%d.128/25]}",
			 i % 250, i % 250);
	int n = snprintf(buf, sizeof(buf),
			 "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\n"
			 "metadata: {name: p%d, namespace: ns%d}\n"
			 "spec:\n  podSelector: {matchLabels: {app: a%d}}\n"
			 "  ingress:\n  - from:\n"
			 "    - podSelector: {matchLabels: {role: r%d}}\n"
			 "    - namespaceSelector: {matchLabels: {team: t%d}}\n"
			 "    - ipBlock: %s\n"
			 "    ports: [{port: %d}, {port: 443}, {port: http}]\n",
			 i, (i % 250) % NAMESPACES, i % 250, i % 20, i % 10, block, 80 + variant);
	if (i % 5 == 0)
		snprintf(buf + n, sizeof(buf) - (size_t)n,
			 "  egress:\n  - to: [{ipBlock: {cidr: '%s'}}]\n"
			 "  - ports: [{protocol: UDP, port: 53}]\n"
			 "  policyTypes: [Ingress, Egress]\n",
			 v6 ? "fd00:10:96::/108" : "10.96.0.0/12");
	return one(buf);
}

void policy_scenario(int local, int remote, int policies,
		     void (*emit)(struct br_object *o, void *ctx), void *ctx)
{
	char buf[512];
	for (int i = 0; i < NAMESPACES; i++) {
		snprintf(buf, sizeof(buf),
			 "apiVersion: v1\nkind: Namespace\n"
			 "metadata: {name: ns%d, labels: {team: t%d, env: %s}}\n",
			 i, i % 10, i % 3 ? "prod" : "dev");
		emit(one(buf), ctx);
	}
	for (int j = 0; j < local; j++)
		emit(policy_scenario_endpoint(j, true), ctx);
	for (int j = local; j < local + remote; j++)
		emit(policy_scenario_endpoint(j, false), ctx);
	for (int i = 0; i < policies; i++)
		emit(policy_scenario_policy(i, 0), ctx);
}
