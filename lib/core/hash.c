/* libcrypto adapter for digests; base64 by hand (a few lines, no state). */
#include <brindle/core/hash.h>
#include <brindle/core/util.h>

#include <openssl/evp.h>
#include <string.h>

/*
 * The digest, fetched from the provider once: OpenSSL 3 otherwise looks the
 * algorithm up on every call (about 40% of felix's rule-id hashing). The
 * fetched objects live as long as the process.
 */
static const EVP_MD *digest_of(enum hash_alg alg)
{
	static EVP_MD *fetched[3];
	static const char *const names[3] = { "SHA1", "SHA2-224", "SHA2-256" };
	size_t i = alg == HASH_SHA1 ? 0 : alg == HASH_SHA224 ? 1 : 2;
	if (!fetched[i])
		fetched[i] = EVP_MD_fetch(NULL, names[i], NULL);
	if (fetched[i])
		return fetched[i];
	return i == 0 ? EVP_sha1() : i == 1 ? EVP_sha224() : EVP_sha256();
}

size_t hash_digest(enum hash_alg alg, const void *data, size_t len, uint8_t *out)
{
	const EVP_MD *md = digest_of(alg);
	unsigned int n = 0;
	if (!EVP_Digest(data, len, out, &n, md, NULL))
		die_oom();
	return n;
}

void hash_hex(enum hash_alg alg, const char *s, char *out, size_t n)
{
	uint8_t d[64];
	size_t dl = hash_digest(alg, s, strlen(s), d);
	static const char hex[] = "0123456789abcdef";
	size_t i;
	for (i = 0; i < n && i < dl * 2; i++)
		out[i] = hex[(d[i / 2] >> (i % 2 ? 0 : 4)) & 0xf];
	out[i] = '\0';
}

static const char b64std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static size_t b64(const char *alphabet, bool pad, const uint8_t *in, size_t len, char *out)
{
	size_t o = 0;
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16;
		if (i + 1 < len)
			v |= (uint32_t)in[i + 1] << 8;
		if (i + 2 < len)
			v |= in[i + 2];
		out[o++] = alphabet[(v >> 18) & 63];
		out[o++] = alphabet[(v >> 12) & 63];
		if (i + 1 < len)
			out[o++] = alphabet[(v >> 6) & 63];
		else if (pad)
			out[o++] = '=';
		if (i + 2 < len)
			out[o++] = alphabet[v & 63];
		else if (pad)
			out[o++] = '=';
	}
	out[o] = '\0';
	return o;
}

void hash_b64url(enum hash_alg alg, const char *s, char *out, size_t n)
{
	uint8_t d[64];
	char enc[100];
	size_t dl = hash_digest(alg, s, strlen(s), d);
	size_t el = b64(b64url, false, d, dl, enc);
	if (n > el)
		n = el;
	memcpy(out, enc, n);
	out[n] = '\0';
}

char *base64_encode(const void *data, size_t len)
{
	char *out = xmalloc((len + 2) / 3 * 4 + 1);
	b64(b64std, true, data, len, out);
	return out;
}

long base64_decode(const char *s, size_t len, uint8_t *out)
{
	uint32_t acc = 0;
	int bits = 0;
	long o = 0;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		int v;
		if (c >= 'A' && c <= 'Z')
			v = c - 'A';
		else if (c >= 'a' && c <= 'z')
			v = c - 'a' + 26;
		else if (c >= '0' && c <= '9')
			v = c - '0' + 52;
		else if (c == '+' || c == '-')
			v = 62;
		else if (c == '/' || c == '_')
			v = 63;
		else if (c == '=')
			break;
		else
			return -1;
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (uint8_t)(acc >> bits);
		}
	}
	return o;
}

uint64_t hash_fnv1a64(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}
