/* Reading descriptors and files into a strbuf (strbuf_file.h). */
#include <brindle/sys/strbuf_file.h>

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

int sb_read_fd(struct strbuf *sb, int fd)
{
	for (;;) {
		sb_reserve(sb, 8192);
		ssize_t n = read(fd, sb->buf + sb->len, sb->cap - sb->len - 1);
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

int sb_read_file(struct strbuf *sb, const char *path)
{
	if (!sb->buf)
		sb_init(sb);
	if (streq(path, "-"))
		return sb_read_fd(sb, STDIN_FILENO);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = sb_read_fd(sb, fd);
	close(fd);
	return r;
}
