/*
 * The validators of the trust boundaries, fuzzed against their contracts:
 * the first byte picks one, the rest is its input.
 *   0 community_valid: accepted text is exactly "a:b" (each <= 65535) or
 *     "a:b:c" (each <= 4294967295) in plain decimal, as BIRD reads it
 *   1 secrets_relative: an accepted path stays inside the secrets directory
 *     (relative, no "." or ".." component, nothing empty)
 *   2 bgp_password_problem: an accepted password is 1-80 bytes, no '"' and
 *     no control character (BIRD's string, the kernel's MD5 key)
 *   3 calc_wep_refused: an admitted local endpoint has a workload interface
 *     that is not reserved, and only host routes (default configuration)
 */
#include "bgp_view.h"
#include "calc/calc.h"
#include "secrets.h"

#include <brindle/core/arena.h>
#include <brindle/core/model.h>
#include <brindle/core/net.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what, const char *text)
{
	if (ok)
		return;
	fprintf(stderr, "fuzz_trust: %s: \"%s\"\n", what, text);
	abort();
}

static void community(const char *s)
{
	if (!community_valid(s))
		return;
	unsigned long long v[4];
	int end = 0, n = sscanf(s, "%llu:%llu:%llu%n", &v[0], &v[1], &v[2], &end);
	if (n < 3) {
		end = 0;
		n = sscanf(s, "%llu:%llu%n", &v[0], &v[1], &end);
		check(n == 2 && (size_t)end == strlen(s), "accepted but not a:b", s);
		check(v[0] <= 65535 && v[1] <= 65535, "standard part over 16 bits", s);
	} else {
		check((size_t)end == strlen(s), "accepted with trailing text", s);
		for (int i = 0; i < 3; i++)
			check(v[i] <= 4294967295ull, "large part over 32 bits", s);
	}
	for (const char *p = s; *p; p++)
		check((*p >= '0' && *p <= '9') || *p == ':', "accepted a character BIRD does not",
		      s);
}

static void relative(const char *s)
{
	struct arena *a = arena_new();
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	const char *rel = secrets_relative("/etc/brindle/secrets", s, a, &err);
	if (rel) {
		check(rel[0] != '/' && rel[0], "accepted an absolute or empty path", s);
		for (const char *p = rel; p; p = strchr(p, '/') ? strchr(p, '/') + 1 : NULL) {
			size_t n = strchr(p, '/') ? (size_t)(strchr(p, '/') - p) : strlen(p);
			check(n > 0, "accepted an empty component", s);
			check(!(n == 1 && p[0] == '.'), "accepted '.'", s);
			check(!(n == 2 && p[0] == '.' && p[1] == '.'), "accepted '..'", s);
		}
	} else {
		check(err.len > 0, "refused without a reason", s);
	}
	sb_free(&err);
	arena_free(a);
}

static void password(const char *s)
{
	if (bgp_password_problem(s))
		return;
	size_t n = strlen(s);
	check(n >= 1 && n <= BGP_PASSWORD_MAX, "accepted a length MD5 cannot take", s);
	for (const char *p = s; *p; p++)
		check((unsigned char)*p >= 0x20 && *p != 0x7f && *p != '"',
		      "accepted a character BIRD cannot write", s);
}

/* "iface\nnet\nnet..." as one local endpoint, under the default configuration. */
static void endpoint(char *s)
{
	const char *nets[8];
	size_t n = 0;
	char *iface = s, *nl = strchr(s, '\n');
	while (nl && n < 8) {
		*nl = '\0';
		nets[n++] = nl + 1;
		nl = strchr(nl + 1, '\n');
	}
	struct br_workloadendpoint w = { .spec = { .node = "n",
						   .interface_name = iface,
						   .ip_networks = nets,
						   .n_ip_networks = n } };
	struct felix_config cfg;
	felix_config_defaults(&cfg);
	char why[300];
	if (calc_wep_refused(&cfg, &w, true, why, sizeof(why))) {
		check(why[0] != '\0', "refused without a reason", iface);
		return;
	}
	check(strncmp(iface, "cali", 4) == 0, "admitted a non-workload interface", iface);
	check(!iface_reserved(iface), "admitted a reserved interface", iface);
	for (size_t i = 0; i < n; i++) {
		struct br_cidr c;
		if (cidr_parse(nets[i], true, &c) == 0)
			check(c.len == ip_bits(&c.ip), "admitted a network wider than a host",
			      nets[i]);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 4096)
		return 0;
	char *s = malloc(size);
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	switch (data[0] % 4) {
	case 0:
		community(s);
		break;
	case 1:
		relative(s);
		break;
	case 2:
		password(s);
		break;
	default:
		endpoint(s);
		break;
	}
	free(s);
	return 0;
}
