/* BGP passwords from files, the environment, or mounted secrets (see secrets.h). */
#include "secrets.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int read_small(const char *path, struct arena *a, const char **out, struct strbuf *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		sb_addf(err, "%s: %s", path, strerror(e));
		return -e;
	}
	char buf[SECRET_MAX_BYTES + 1];
	size_t len = 0;
	for (;;) {
		ssize_t r = read(fd, buf + len, sizeof(buf) - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			close(fd);
			sb_addf(err, "%s: %s", path, strerror(e));
			return -e;
		}
		if (r == 0)
			break;
		len += (size_t)r;
		if (len == sizeof(buf)) {
			close(fd);
			sb_addf(err, "%s: longer than %d bytes", path, SECRET_MAX_BYTES);
			return -EFBIG;
		}
	}
	close(fd);
	if (len && buf[len - 1] == '\n')
		len--;
	if (len && buf[len - 1] == '\r')
		len--;
	*out = arena_strndup(a, buf, len);
	return 0;
}

static bool path_segment_ok(const char *s)
{
	return s && *s && !strchr(s, '/') && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

int secrets_password(void *ctx, const struct br_bgp_password *p, struct arena *a, const char **out,
		     struct strbuf *err)
{
	const struct secrets *s = ctx;
	if (p->env && *p->env) {
		const char *v = getenv(p->env);
		if (!v) {
			sb_addf(err, "environment variable %s is not set", p->env);
			return -ENOENT;
		}
		*out = arena_strdup(a, v);
		return 0;
	}
	if (p->file && *p->file)
		return read_small(p->file, a, out, err);
	if (p->secret_key_ref) {
		const struct br_secret_key_ref *r = p->secret_key_ref;
		if (!path_segment_ok(r->name) || !path_segment_ok(r->key)) {
			sb_addf(err, "secret \"%s\" key \"%s\" cannot name a file",
				r->name ? r->name : "", r->key ? r->key : "");
			return -EINVAL;
		}
		const char *dir = s && s->dir ? s->dir : SECRETS_DEFAULT_DIR;
		char *path = arena_printf(a, "%s/%s/%s", dir, r->name, r->key);
		return read_small(path, a, out, err);
	}
	sb_adds(err, "no password source");
	return -EINVAL;
}
