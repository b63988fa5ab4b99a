/*
 * The kubeconfig parser on arbitrary input (a user's file, or one an install
 * step wrote). Beyond not crashing: a refusal says why and names the file;
 * what is accepted keeps the promises of kubeconfig.h (a server URL with its
 * scheme and no trailing slash, paths resolved against the kubeconfig's
 * absolute directory, decoded PEM of the length given, a certificate only
 * with its key, no CA together with insecure-skip-tls-verify). Each input is
 * read with current-context and with an explicit context "x".
 */
#include <brindle/core/kubeconfig.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void must(bool ok, const char *what)
{
	if (ok)
		return;
	fprintf(stderr, "fuzz_kubeconfig: %s\n", what);
	abort();
}

static void path_ok(const char *p)
{
	must(!p || p[0] == '/', "a relative path resolves against the kubeconfig's directory");
}

static void data_ok(const char *d, size_t len)
{
	must(!d || (strlen(d) == len && strstr(d, "-----BEGIN ")), "decoded PEM of its length");
}

static void one(const uint8_t *data, size_t size, const char *context)
{
	struct arena *a = arena_new();
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	struct kubeconfig k;
	if (kubeconfig_parse(a, "/etc/fuzz/config", (const char *)data, size, context, &k, &err) <
	    0) {
		must(str_has_prefix(sb_str(&err), "kubeconfig /etc/fuzz/config: ") &&
			     err.len > strlen("kubeconfig /etc/fuzz/config: "),
		     "a refusal names the file and says why");
	} else {
		must(str_has_prefix(k.server, "https://") || str_has_prefix(k.server, "http://"),
		     "the server has a scheme");
		must(!str_has_suffix(k.server, "/"), "no trailing slash");
		must(k.context && *k.context && k.cluster && *k.cluster && k.user, "names are set");
		must(!context || streq(k.context, context), "the context asked for");
		path_ok(k.ca_file);
		path_ok(k.cert_file);
		path_ok(k.key_file);
		path_ok(k.token_file);
		data_ok(k.ca_data, k.ca_data_len);
		data_ok(k.cert_data, k.cert_data_len);
		data_ok(k.key_data, k.key_data_len);
		must(!(k.ca_file && k.ca_data), "one CA");
		must(!k.insecure || (!k.ca_file && !k.ca_data), "no CA when insecure");
		must(!(k.cert_file && k.cert_data) && !(k.key_file && k.key_data),
		     "a file or its data");
		must(!(k.cert_file || k.cert_data) == !(k.key_file || k.key_data),
		     "a certificate with its key");
		must(!k.token || !strpbrk(k.token, "\r\n"), "a token is one line");
	}
	sb_free(&err);
	arena_free(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 64 * 1024)
		return 0;
	one(data, size, NULL);
	one(data, size, "x");
	return 0;
}
