/*
 * Where BGP passwords come from: a file, an environment variable, or a
 * Kubernetes-style secret mounted as files, <secrets dir>/<name>/<key>
 * (as a kubelet mounts a Secret volume; default dir /etc/brindle/secrets,
 * BRINDLE_SECRETS_DIR). One trailing line break is dropped from files.
 */
#ifndef BRINDLE_CONFD_SECRETS_H
#define BRINDLE_CONFD_SECRETS_H

#include <brindle/arena.h>
#include <brindle/model.h>
#include <brindle/strbuf.h>

#define SECRETS_DEFAULT_DIR "/etc/brindle/secrets"
#define SECRET_MAX_BYTES    4096

struct secrets {
	const char *dir;
};

/* A bgp_password_fn; @ctx is a struct secrets. */
int secrets_password(void *ctx, const struct br_bgp_password *p, struct arena *a, const char **out,
		     struct strbuf *err) must_check;

#endif
