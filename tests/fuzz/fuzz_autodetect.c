/*
 * IP_AUTODETECTION_METHOD values (lib/core/autodetect.c): the input is the
 * method text. Parsed for IPv4 and IPv6; when it parses, the choice over a
 * fixed host is made. Besides not crashing: a choice is an address of the
 * host of the family asked, and a refusal says why.
 */
#include <brindle/core/autodetect.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_autodetect: %s\n", what);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096)
		return 0;
	char *text = malloc(size + 1);
	memcpy(text, data, size);
	text[size] = '\0';
	struct br_cidr addrs[4];
	const char *const a[] = { "10.0.0.11/24", "192.168.1.11/24", "fd00::11/64", "127.0.0.1/8" };
	for (size_t i = 0; i < 4; i++)
		check(cidr_parse(a[i], false, &addrs[i]) == 0, "the host's addresses");
	const struct ad_iface ifs[] = { { "lo", true, &addrs[3], 1 },
					{ "ens3", true, &addrs[0], 1 },
					{ "eth1", true, &addrs[1], 2 } };
	for (int pass = 0; pass < 2; pass++) {
		int family = pass ? AF_INET6 : AF_INET;
		struct ad_method m;
		struct strbuf err = STRBUF_INIT;
		sb_init(&err);
		if (ad_method_parse(text, family, &m, &err) == 0) {
			struct br_cidr out;
			sb_reset(&err);
			int r = ad_choose(&m, ifs, 3, family, &addrs[1].ip, &out, &err);
			if (r == 0) {
				bool found = false;
				for (size_t i = 0; i < 4; i++)
					found |= cidr_cmp(&out, &addrs[i]) == 0;
				check(found && out.ip.family == family,
				      "chose an address of no interface");
			} else {
				check(err.len > 0, "a refusal without a reason");
			}
			ad_method_free(&m);
		} else {
			check(err.len > 0, "a bad method without a reason");
		}
		sb_free(&err);
	}
	free(text);
	return 0;
}
