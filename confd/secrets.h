/*
 * Where BGP passwords come from, and only from where the operator allows:
 *   secretKeyRef {name, key}  the file <secrets dir>/<name>/<key>, as a kubelet
 *                             mounts a Secret volume (default dir
 *                             /etc/brindle/secrets, BRINDLE_SECRETS_DIR)
 *   file PATH                 a file beneath the secrets dir (PATH relative to
 *                             it, or absolute and inside it)
 *   env NAME                  confd's variable NAME, only when NAME starts with
 *                             the allowed prefix (BRINDLE_PASSWORD_ENV_PREFIX,
 *                             default BRINDLE_BGP_PASSWORD_)
 * A datastore writer picks which allowed secret a session uses, never what
 * confd reads: a path cannot leave the directory (no "..", no symbolic link
 * out of it, no /proc magic links: openat2 RESOLVE_BENEATH), only a regular
 * file is read (opened non-blocking, so a FIFO cannot hang confd), at most
 * SECRET_MAX_BYTES. One trailing line break is dropped from files.
 */
#ifndef BRINDLE_CONFD_SECRETS_H
#define BRINDLE_CONFD_SECRETS_H

#include <brindle/core/arena.h>
#include <brindle/core/model.h>
#include <brindle/core/strbuf.h>

#define SECRETS_DEFAULT_DIR	   "/etc/brindle/secrets"
#define SECRETS_DEFAULT_ENV_PREFIX "BRINDLE_BGP_PASSWORD_"
#define SECRET_MAX_BYTES	   4096

struct secrets {
	const char *dir;
	const char *env_prefix; /* "" or NULL: no passwords from the environment */
};

/* A bgp_password_fn; @ctx is a struct secrets. */
int secrets_password(void *ctx, const struct br_bgp_password *p, struct arena *a, const char **out,
		     struct strbuf *err) must_check;

/*
 * Pure: the path of @file relative to @dir (into @a), or NULL with the reason
 * in @err when it names something outside it (an absolute path elsewhere, a
 * ".." component, an empty name).
 */
const char *secrets_relative(const char *dir, const char *file, struct arena *a,
			     struct strbuf *err);

#endif
