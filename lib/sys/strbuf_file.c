/* Reading descriptors and files into a strbuf, writing files whole (strbuf_file.h). */
#include <brindle/sys/strbuf_file.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* As sb_read_fd, refusing (-EFBIG, having read at most @max + 1 bytes) what is longer. */
static int sb_read_fd_max(struct strbuf *sb, int fd, size_t max)
{
	size_t start = sb->len;
	for (;;) {
		if (sb->len - start > max)
			return -EFBIG;
		sb_reserve(sb, 8192);
		size_t room = sb->cap - sb->len - 1, left = max + 1 - (sb->len - start);
		ssize_t n = read(fd, sb->buf + sb->len, room < left ? room : left);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		sb->len += (size_t)n;
		sb->buf[sb->len] = '\0';
	}
	return 0;
}

int sb_read_fd(struct strbuf *sb, int fd)
{
	return sb_read_fd_max(sb, fd, SIZE_MAX - 1);
}

int sb_read_file(struct strbuf *sb, const char *path)
{
	return sb_read_file_max(sb, path, SIZE_MAX - 1);
}

int sb_read_file_max(struct strbuf *sb, const char *path, size_t max)
{
	if (!sb->buf)
		sb_init(sb);
	if (streq(path, "-"))
		return sb_read_fd_max(sb, STDIN_FILENO, max);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = sb_read_fd_max(sb, fd, max);
	close(fd);
	return r;
}

int file_make_dirs(const char *path)
{
	char *p = xstrdup(path);
	int r = 0;
	for (char *s = p[0] ? strchr(p + 1, '/') : NULL;; s = strchr(s + 1, '/')) {
		if (s)
			*s = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST) {
			r = -errno;
			break;
		}
		if (!s)
			break;
		*s = '/';
	}
	free(p);
	return r;
}

int file_write_whole(const char *path, const void *data, size_t len, mode_t mode)
{
	size_t n = strlen(path) + 5;
	char *tmp = xmalloc(n);
	snprintf(tmp, n, "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	const char *slash = strrchr(path, '/');
	if (fd < 0 && errno == ENOENT && slash && slash != path) {
		char *dir = xstrndup(path, (size_t)(slash - path));
		int d = file_make_dirs(dir);
		free(dir);
		if (d == 0)
			fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	}
	int r = 0;
	if (fd < 0 || write(fd, data, len) != (ssize_t)len || fchmod(fd, mode) < 0 || fsync(fd) < 0)
		r = errno ? -errno : -EIO;
	if (fd >= 0 && close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	free(tmp);
	return r;
}
