/*
 * How a Brindle program finds and authenticates to the Kubernetes API, as
 * kubectl and Calico do: a kubeconfig file (named, or the existing files of
 * $KUBECONFIG's colon-separated list, merged as kubectl merges them), else the in-cluster config of
 * a pod (KUBERNETES_SERVICE_HOST/PORT and the mounted ServiceAccount token
 * and CA). The result is what http_agent_new takes, plus the server's URL
 * and the default namespace. Parsing is lib/core/kubeconfig.c's; this file
 * reads the files and checks that the ones named can be read.
 *
 * Inline certificate-authority-data, client-certificate-data and
 * client-key-data stay in memory (auth.*_pem); nothing is written to disk.
 * A token file (tokenFile, the in-cluster token) is passed as
 * auth.token_file, which the HTTP agent re-reads when it changes, so a
 * rotated ServiceAccount token is picked up without a restart.
 */
#ifndef BRINDLE_KUBE_CONN_H
#define BRINDLE_KUBE_CONN_H

#include <brindle/core/strbuf.h>
#include <brindle/sys/http.h>

struct arena;

struct kube_conn {
	char *server;	       /* "https://10.0.0.1:6443", no trailing slash */
	struct http_auth auth; /* TLS and credentials for http_agent_new
				  (include/brindle/sys/http.h); strings owned by the conn */
	char *namespace;       /* the context's namespace, "default" when none */
	char *source;	       /* for messages: "kubeconfig /path (context ctx)" or "in-cluster" */
	/* anything private you need after this line */
	struct arena *arena; /* owns every string above */
};

/* Where a pod's ServiceAccount is mounted; BRINDLE_KUBE_SA_DIR overrides it (tests). */
#define KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/*
 * @kubeconfig: a path, or NULL for $KUBECONFIG (the files of the colon list that exist, merged) and
 * then in-cluster config (KUBERNETES_SERVICE_HOST/PORT,
 * /var/run/secrets/kubernetes.io/serviceaccount/{token,ca.crt}, paths overridable for tests by
 * BRINDLE_KUBE_SA_DIR). The token file is given as auth.token_file so it is re-read when it
 * rotates.
 *
 * Errors: -ENOENT when nothing is configured (no kubeconfig and not in a
 * cluster), -EINVAL for a kubeconfig that cannot be used, or the errno of a
 * file that cannot be read; the message in @err names the file and field.
 * @out is written only on success.
 */
int kube_conn_load(const char *kubeconfig, struct kube_conn *out, struct strbuf *err) must_check;
/* The same with a context other than current-context (NULL: current-context). */
int kube_conn_load_context(const char *kubeconfig, const char *context, struct kube_conn *out,
			   struct strbuf *err) must_check;
/* Frees what the conn owns and zeroes it. Accepts NULL and a zeroed conn. */
void kube_conn_free(struct kube_conn *c);

#endif
