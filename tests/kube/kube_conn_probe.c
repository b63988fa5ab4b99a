/*
 * kube_conn_probe: what tests/kube/kube_conn.sh drives. Loads a kube_conn
 * (--kubeconfig PATH, --context NAME, or the environment: KUBECONFIG, then
 * in-cluster), prints where it connects, then runs each step with one
 * blocking HTTP agent, so a token file rewritten between steps shows whether
 * it is read again:
 *   /PATH       GET it: "GET /PATH -> STATUS BODY" (the body's first 200 bytes, one line)
 *   whoami      POST a SelfSubjectReview: "whoami -> USERNAME", or the status and body
 *   wait:FILE   wait (20 s at most) until FILE exists
 * A transport failure prints "STEP: error: WHY". Exit: 0, 1 when the
 * connection cannot be loaded, 2 when a request failed before an answer.
 */
#include <brindle/core/json.h>
#include <brindle/sys/http.h>
#include <brindle/sys/kube_conn.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void one_line(const struct strbuf *body)
{
	for (size_t i = 0; i < body->len && i < 200; i++)
		putchar(body->buf[i] == '\n' || body->buf[i] == '\r' ? ' ' : body->buf[i]);
}

static int step(struct http_agent *agent, const struct kube_conn *c, const char *s)
{
	if (str_has_prefix(s, "wait:")) {
		for (int i = 0; i < 200 && access(s + 5, F_OK) != 0; i++)
			usleep(100 * 1000);
		printf("%s -> %s\n", s, access(s + 5, F_OK) == 0 ? "there" : "timed out");
		return 0;
	}
	bool whoami = streq(s, "whoami");
	static const char review[] =
		"{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"SelfSubjectReview\"}";
	struct strbuf url = STRBUF_INIT;
	sb_init(&url);
	sb_addf(&url, "%s%s", c->server,
		whoami ? "/apis/authentication.k8s.io/v1/selfsubjectreviews" : s);
	struct http_request req = {
		.method = whoami ? "POST" : "GET",
		.url = url.buf,
		.accept = "application/json",
		.content_type = whoami ? "application/json" : NULL,
		.body = whoami ? review : NULL,
		.body_len = whoami ? strlen(review) : 0,
		.timeout_ms = 10000,
	};
	struct http_result res;
	int r = http_agent_perform(agent, &req, &res);
	if (r < 0) {
		printf("%s: error: %s\n", s, res.why);
	} else if (whoami && res.status == 201) {
		struct arena *a = arena_new();
		struct jv *v;
		const char *user = NULL;
		if (json_parse(a, res.body.buf, res.body.len, &v, NULL) == 0)
			user = jv_as_string(
				jv_get(jv_get(jv_get(v, "status"), "userInfo"), "username"));
		printf("whoami -> %s\n", user ? user : "(no username)");
		arena_free(a);
	} else {
		printf("%s %s -> %ld ", req.method, s, res.status);
		one_line(&res.body);
		putchar('\n');
	}
	fflush(stdout);
	http_result_clear(&res);
	sb_free(&url);
	return r < 0 ? 2 : 0;
}

int main(int argc, char **argv)
{
	const char *kubeconfig = NULL, *context = NULL;
	int i = 1;
	for (; i + 1 < argc; i += 2) {
		if (streq(argv[i], "--kubeconfig"))
			kubeconfig = argv[i + 1];
		else if (streq(argv[i], "--context"))
			context = argv[i + 1];
		else
			break;
	}
	struct kube_conn c;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	if (kube_conn_load_context(kubeconfig, context, &c, &err) < 0) {
		printf("error: %s\n", sb_str(&err));
		sb_free(&err);
		return 1;
	}
	printf("source: %s\nserver: %s\nnamespace: %s\n", c.source, c.server, c.namespace);
	fflush(stdout);
	struct http_agent *agent;
	if (http_agent_new(NULL, &c.auth, &agent, &err) < 0) {
		printf("error: %s\n", sb_str(&err));
		sb_free(&err);
		kube_conn_free(&c);
		return 1;
	}
	int rc = 0;
	for (; i < argc; i++)
		rc |= step(agent, &c, argv[i]);
	http_agent_free(agent);
	kube_conn_free(&c);
	sb_free(&err);
	return rc;
}
