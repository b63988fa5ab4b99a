/*
 * ip set members: ips_member_canonical over arbitrary text, for every type
 * and family. The first byte picks the type (low two bits, including
 * IPS_OTHER) and the family (bit 2); the rest is the member. Besides not
 * crashing: only -EINVAL is a refusal and leaves the output alone; a
 * canonical member is its own canonical form, fits IPS_MEMBER_MAX, is no
 * member of the other family, and needs exactly its length plus one byte of
 * output. The recording backend stores it as that same text.
 */
#include <brindle/sys/ipset.h>
#include <brindle/testing/ipset_record.h>

#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what, const char *member)
{
	if (ok)
		return;
	fprintf(stderr, "fuzz_ipset_member: %s: \"%s\"\n", what, member);
	abort();
}

static void via_recording(enum ips_type t, uint8_t family, const char *member, const char *canon)
{
	struct ips *s = ips_open_recording();
	struct ips_batch *b = ips_batch_new();
	struct ips_info info = { "cali40s:f", t, family, 0 };
	ips_batch_create(b, &info);
	ips_batch_add(b, info.name, member);
	ips_batch_del(b, member, member); /* any text as a set name */
	int errs[3];
	int r = ips_apply(s, b, errs);
	for (size_t i = 0; i < ips_batch_count(b); i++)
		(void)ips_batch_describe(b, i);
	struct ips_list l = { 0 };
	check(ips_list_sets(s, "", &l) == 0, "recording list failed", member);
	if (!canon) {
		check(t == IPS_OTHER ? errs[0] == -EINVAL : errs[1] == -EINVAL,
		      "recording took a bad member", member);
	} else {
		check(errs[0] == 0 && errs[1] == 0 && l.n == 1 && l.v[0].n == 1 &&
			      strcmp(l.v[0].members[0], canon) == 0,
		      "recording stored something else", member);
	}
	check(r >= 1, "a del from a missing set succeeded", member);
	ips_list_free(&l);
	ips_batch_free(b);
	ips_close(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	enum ips_type t = (enum ips_type)(data[0] & 3);
	uint8_t family = data[0] & 4 ? AF_INET6 : AF_INET;
	char *member = malloc(size);
	memcpy(member, data + 1, size - 1);
	member[size - 1] = '\0';

	char out[64], again[64];
	memset(out, 'x', sizeof(out));
	int r = ips_member_canonical(t, family, member, out, sizeof(out));
	if (r < 0) {
		check(r == -EINVAL, "refused with something other than -EINVAL", member);
		check(out[0] == 'x', "output written on failure", member);
		via_recording(t, family, member, NULL);
		free(member);
		return 0;
	}
	size_t n = strnlen(out, sizeof(out));
	check(n > 0 && n < sizeof(out), "canonical member empty or unterminated", member);
	check(ips_member_canonical(t, family, out, again, sizeof(again)) == 0,
	      "canonical member refused", member);
	check(strcmp(out, again) == 0, "canonical member not a fixed point", member);
	check(ips_member_canonical(t, family == AF_INET ? AF_INET6 : AF_INET, out, again,
				   sizeof(again)) == -EINVAL,
	      "canonical member valid in both families", member);
	memset(again, 'x', sizeof(again));
	check(ips_member_canonical(t, family, member, again, n) == -ENOSPC && again[0] == 'x',
	      "short output not refused", member);
	check(ips_member_canonical(t, family, member, again, n + 1) == 0 && strcmp(out, again) == 0,
	      "exact-size output refused", member);
	via_recording(t, family, member, out);
	free(member);
	return 0;
}
