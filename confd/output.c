/* Template directory, staging, `bird -p -c`, atomic install, reload (see output.h). */
#include "output.h"

#include <brindle/sys/bird_ctl.h>
#include <brindle/sys/clock.h>
#include <brindle/sys/strbuf_file.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* "<dir>/<name>", allocated: paths are not cut to a buffer's size. */
static char *path_of(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = xmalloc(n);
	memcpy(p, dir, strlen(dir));
	p[strlen(dir)] = '/';
	memcpy(p + strlen(dir) + 1, name, strlen(name) + 1);
	return p;
}

/* --- templates ----------------------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int templates_load(const char *dir, struct render_templates **out, struct strbuf *err)
{
	DIR *d = opendir(dir);
	if (!d) {
		int e = errno;
		sb_addf(err, "template directory %s: %s", dir, strerror(e));
		return -e;
	}
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || !str_has_suffix(de->d_name, ".mustache"))
			continue;
		GROW(names, cap, n + 1);
		names[n++] = xstrdup(de->d_name);
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), cmp_str);
	struct render_source *src = xcalloc(n + 1, sizeof(*src));
	struct strbuf *texts = xcalloc(n + 1, sizeof(*texts));
	int r = 0;
	for (size_t i = 0; i < n && r == 0; i++) {
		char *path = path_of(dir, names[i]);
		sb_init(&texts[i]);
		r = sb_read_file(&texts[i], path);
		if (r < 0)
			sb_addf(err, "%s: %s", path, strerror(-r));
		free(path);
		src[i] = (struct render_source){ names[i], sb_str(&texts[i]) };
	}
	if (r == 0)
		r = render_templates_compile(src, n, out, err);
	for (size_t i = 0; i < n; i++) {
		sb_free(&texts[i]);
		free(names[i]);
	}
	free(texts);
	free(src);
	free(names);
	return r;
}

/* --- the check ------------------------------------------------------------------------------- */

int bird_check(const char *bird_bin, const char *main_path, int timeout_ms, struct strbuf *err)
{
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 2);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	char *argv[] = { (char *)bird_bin, "-p", "-c", (char *)main_path, NULL };
	pid_t pid;
	int r = posix_spawnp(&pid, bird_bin, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	if (r != 0) {
		close(pfd[0]);
		sb_addf(err, "cannot run %s: %s", bird_bin, strerror(r));
		return -r;
	}
	struct strbuf output = STRBUF_INIT;
	sb_init(&output);
	uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
	bool timed_out = false;
	for (;;) {
		uint64_t now = now_ms();
		if (now >= deadline) {
			timed_out = true;
			break;
		}
		struct pollfd p = { .fd = pfd[0], .events = POLLIN };
		int pr = poll(&p, 1, (int)(deadline - now));
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0) {
			timed_out = pr == 0;
			break;
		}
		char buf[4096];
		ssize_t got = read(pfd[0], buf, sizeof(buf));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		if (output.len < 65536)
			sb_add(&output, buf, (size_t)got);
	}
	close(pfd[0]);
	if (timed_out)
		kill(pid, SIGKILL);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	while (output.len &&
	       (output.buf[output.len - 1] == '\n' || output.buf[output.len - 1] == ' '))
		sb_truncate(&output, output.len - 1);
	if (timed_out) {
		sb_addf(err, "%s -p did not finish within %d ms", bird_bin, timeout_ms);
		r = -ETIMEDOUT;
	} else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		sb_adds(err, output.len ? sb_str(&output) : "bird -p failed without a message");
		r = -EINVAL;
	}
	sb_free(&output);
	return r;
}

/* --- install --------------------------------------------------------------------------------- */

struct output {
	char *dir;
	char *bird_bin;
	int check_timeout_ms;
	char **owned; /* names of the installed set */
	size_t n_owned;
};

struct output *output_new(const char *dir, const char *bird_bin, int check_timeout_ms)
{
	struct output *o = xcalloc(1, sizeof(*o));
	o->dir = xstrdup(dir);
	o->bird_bin = xstrdup(bird_bin);
	o->check_timeout_ms = check_timeout_ms;
	return o;
}

static void forget_owned(struct output *o)
{
	for (size_t i = 0; i < o->n_owned; i++)
		free(o->owned[i]);
	free(o->owned);
	o->owned = NULL;
	o->n_owned = 0;
}

void output_free(struct output *o)
{
	if (!o)
		return;
	forget_owned(o);
	free(o->dir);
	free(o->bird_bin);
	free(o);
}

bool output_installed(const struct output *o, const struct render_output *r)
{
	bool same = true;
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	for (size_t i = 0; same && i < r->n; i++) {
		char *path = path_of(o->dir, r->files[i].name);
		sb_reset(&sb);
		same = sb_read_file(&sb, path) == 0 && sb.len == r->files[i].text.len &&
		       memcmp(sb.buf, r->files[i].text.buf, sb.len) == 0;
		free(path);
	}
	sb_free(&sb);
	return same;
}

static int write_file(const char *path, const struct strbuf *text, struct strbuf *err)
{
	/* 0640: the configuration holds BGP passwords. */
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
	if (fd < 0) {
		int e = errno;
		sb_addf(err, "%s: %s", path, strerror(e));
		return -e;
	}
	size_t off = 0;
	while (off < text->len) {
		ssize_t w = write(fd, text->buf + off, text->len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			int e = errno;
			close(fd);
			sb_addf(err, "%s: %s", path, strerror(e));
			return -e;
		}
		off += (size_t)w;
	}
	if (fsync(fd) < 0 || close(fd) < 0) {
		int e = errno;
		sb_addf(err, "%s: %s", path, strerror(e));
		return -e;
	}
	return 0;
}

static void remove_stage(const char *stage, const struct render_output *r)
{
	for (size_t i = 0; i < r->n; i++) {
		char *path = path_of(stage, r->files[i].name);
		unlink(path);
		free(path);
	}
	rmdir(stage);
}

static int sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = fsync(fd) < 0 ? -errno : 0;
	close(fd);
	return r;
}

int output_install(struct output *o, const struct render_output *r, struct strbuf *err)
{
	char *stage = path_of(o->dir, ".stage-XXXXXX");
	if (!mkdtemp(stage)) {
		int e = errno;
		sb_addf(err, "cannot create a staging directory in %s: %s", o->dir, strerror(e));
		free(stage);
		return -e;
	}
	int ret = 0;
	for (size_t i = 0; i < r->n && ret == 0; i++) {
		char *path = path_of(stage, r->files[i].name);
		ret = write_file(path, &r->files[i].text, err);
		free(path);
	}
	if (ret == 0) {
		char *main_path = path_of(stage, RENDER_MAIN_FILE);
		struct strbuf why = STRBUF_INIT;
		sb_init(&why);
		ret = bird_check(o->bird_bin, main_path, o->check_timeout_ms, &why);
		free(main_path);
		/* Name files as they would be installed: the same error reads the same each time.
		 */
		const char *p = sb_str(&why);
		if (str_has_prefix(p, "bird: "))
			p += strlen("bird: ");
		size_t sl = strlen(stage);
		while (*p) {
			if (strncmp(p, stage, sl) == 0 && p[sl] == '/') {
				p += sl + 1;
				continue;
			}
			sb_addc(err, *p++);
		}
		sb_free(&why);
	}
	/* Includes first, the main file last (render order), so BIRD never reads a
	 * new main file with old includes. */
	for (size_t i = 0; i < r->n && ret == 0; i++) {
		char *from = path_of(stage, r->files[i].name),
		     *to = path_of(o->dir, r->files[i].name);
		if (rename(from, to) < 0) {
			ret = -errno;
			sb_addf(err, "rename %s to %s: %s", from, to, strerror(errno));
		}
		free(from);
		free(to);
	}
	remove_stage(stage, r);
	free(stage);
	if (ret < 0)
		return ret;
	if (sync_dir(o->dir) < 0)
		sb_addf(err, "fsync %s: %s", o->dir, strerror(errno)); /* installed all the same */
	/* Files of the old set that the new one no longer has. */
	for (size_t i = 0; i < o->n_owned; i++) {
		bool kept = false;
		for (size_t j = 0; j < r->n && !kept; j++)
			kept = streq(o->owned[i], r->files[j].name);
		if (!kept) {
			char *path = path_of(o->dir, o->owned[i]);
			unlink(path);
			free(path);
		}
	}
	forget_owned(o);
	o->owned = xcalloc(r->n + 1, sizeof(char *));
	for (size_t i = 0; i < r->n; i++)
		o->owned[o->n_owned++] = xstrdup(r->files[i].name);
	return 0;
}

/* --- reload
 * --------------------------------------------------------------------------------------- */

int bird_reload(const char *socket, int timeout_ms, struct strbuf *err)
{
	struct bird_ctl *c;
	int r = bird_ctl_open(socket, timeout_ms, &c, err);
	if (r < 0)
		return r;
	struct arena *a = arena_new();
	struct bird_reply reply;
	r = bird_ctl_command(c, "configure", a, &reply, err);
	if (r == 0 && !bird_reply_ok(&reply)) {
		sb_addf(err, "BIRD refused the configuration: %s", bird_reply_text(&reply, a));
		r = -EINVAL;
	}
	arena_free(a);
	bird_ctl_close(c);
	return r;
}
