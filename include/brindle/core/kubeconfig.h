/*
 * kubeconfig files, as kubectl reads them, without system calls: the text of
 * one file in, the selected context's cluster, user and namespace out.
 *
 * What is understood: clusters[].cluster.{server, certificate-authority,
 * certificate-authority-data, insecure-skip-tls-verify, tls-server-name},
 * users[].user.{client-certificate, client-certificate-data, client-key,
 * client-key-data, token, tokenFile}, contexts[].context.{cluster, user,
 * namespace}, current-context. Relative file paths resolve against the
 * directory of the kubeconfig itself, as kubectl resolves them. Inline *-data
 * fields are base64 of PEM and come out decoded (never written anywhere).
 *
 * What is refused, with an error naming the file and the field: exec
 * plugins, auth-provider, username/password, impersonation and proxy-url
 * (ways to authenticate or connect that we do not implement: silently
 * ignoring them would connect as somebody else, or anonymously), and what
 * kubectl's own validation refuses (both a file and its -data, a certificate
 * without its key, a CA together with insecure-skip-tls-verify, duplicate
 * names, a context naming a cluster or user that does not exist).
 */
#ifndef BRINDLE_KUBECONFIG_H
#define BRINDLE_KUBECONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <brindle/core/arena.h>
#include <brindle/core/strbuf.h>

/* Everything points into the arena given to kubeconfig_parse. */
struct kubeconfig {
	const char *context; /* the selected context's name */
	const char *cluster; /* its cluster's and user's names (user "" when none) */
	const char *user;
	const char *server; /* "https://host:port[/path]", no trailing slash */
	/* The CA: a file, or decoded PEM (NUL-terminated, length without the NUL); at most one. */
	const char *ca_file;
	const char *ca_data;
	size_t ca_data_len;
	bool insecure;		     /* insecure-skip-tls-verify */
	const char *tls_server_name; /* verify the server as this name; NULL: the URL's host */
	/* The client certificate and its key: each a file or decoded PEM, or neither. */
	const char *cert_file;
	const char *cert_data;
	size_t cert_data_len;
	const char *key_file;
	const char *key_data;
	size_t key_data_len;
	const char *token;	/* bearer token, or NULL */
	const char *token_file; /* bearer token file, or NULL (wins over token: it rotates) */
	const char *namespace;	/* the context's namespace, or NULL */
};

/*
 * Parse @text (@len bytes) read from @path (used for messages and to resolve
 * relative paths) and select @context, or current-context when @context is
 * NULL. On error returns -EINVAL with "kubeconfig PATH: FIELD: problem" in
 * @err, and leaves @out alone.
 */
int kubeconfig_parse(struct arena *a, const char *path, const char *text, size_t len,
		     const char *context, struct kubeconfig *out, struct strbuf *err) must_check;

/*
 * Several files, as kubectl merges KUBECONFIG's list: current-context from
 * the first file that sets it, and each context, cluster and user from the
 * first file that has one of that name (its relative paths resolve against
 * that file's directory). Each file must be valid on its own.
 */
struct kubeconfig_file {
	const char *path;
	const char *text;
	size_t len;
};
int kubeconfig_parse_files(struct arena *a, const struct kubeconfig_file *files, size_t n,
			   const char *context, struct kubeconfig *out,
			   struct strbuf *err) must_check;

#endif
