/*
 * A legacy table as the kernel hands it out (lib/core/ipt_blob.c), from
 * untrusted bytes: 48 bytes of header (valid hooks, five hook entries, five
 * underflows, the number of entries, little-endian u32 each), then the
 * entries, read as IPv4's and, again, as IPv6's. Besides not crashing,
 * checks the layout's contract: a table that was read, edited and laid out
 * reads back, with the same chains.
 */
#include <brindle/core/ipt_blob.h>
#include <brindle/testing/ipt_record.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/socket.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define AT     96
#define HEADER 48

static void check(bool ok, const char *what, const char *detail)
{
	if (ok)
		return;
	fprintf(stderr, "fuzz_ipt_blob: %s: %s\n", what, detail);
	abort();
}

static size_t chains(const struct ipt_blob *b)
{
	struct ipt_table_state st;
	ipt_blob_state(b, &st);
	size_t n = st.n;
	ipt_table_state_free(&st);
	return n;
}

static void one(int af, const uint8_t *data, size_t size)
{
	struct ipt_blob_info info = { 0 };
	uint32_t h[12];
	memcpy(h, data, sizeof(h));
	info.valid_hooks = h[0] & 0x1f;
	memcpy(info.hook_entry, h + 1, sizeof(info.hook_entry));
	memcpy(info.underflow, h + 6, sizeof(info.underflow));
	info.num_entries = h[11];
	info.size = (unsigned)(size - HEADER);
	size_t cap = AT + info.size;
	uint8_t *buf = calloc(1, cap);
	memcpy(buf + AT, data + HEADER, info.size);
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	struct ipt_blob *b = NULL;
	if (ipt_blob_parse(af, ipt_blob_malloc_resize, NULL, buf, cap, AT, &info, &b, &err) == 0) {
		size_t n = chains(b);
		int r = ipt_blob_new_chain(b, "cali-fuzz", &err);
		uint32_t *old_of = NULL;
		r = ipt_blob_layout(b, &info, &old_of, &err);
		check(r == 0, "layout", sb_str(&err));
		free(old_of);
		size_t cap2 = AT + info.size;
		uint8_t *copy = malloc(cap2);
		memcpy(copy, ipt_blob_buffer(b), cap2);
		struct ipt_blob *again = NULL;
		r = ipt_blob_parse(af, ipt_blob_malloc_resize, NULL, copy, cap2, AT, &info, &again,
				   &err);
		check(r == 0, "the layout does not read back", sb_str(&err));
		check(chains(again) == n + 1 || (n && chains(again) == n), "chains lost", "");
		ipt_blob_free(again);
	}
	ipt_blob_free(b);
	sb_free(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < HEADER || size > HEADER + 65536)
		return 0;
	one(AF_INET, data, size);
	one(AF_INET6, data, size);
	return 0;
}
