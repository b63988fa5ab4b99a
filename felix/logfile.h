/*
 * The event log's file: lines appended to one file, rate-limited so that a
 * flood of events cannot fill the disk. The file is created 0640 in a
 * directory made 0750 when missing; a symbolic link or anything but a regular
 * file in its place is refused, so nothing in the directory can redirect the
 * writes. The lines are made by calc/eventlog.c.
 */
#ifndef FELIX_LOGFILE_H
#define FELIX_LOGFILE_H

#include <stdbool.h>
#include <stdint.h>

struct logfile;

/*
 * Appends to the file @name in @dir (both created when needed: the file 0640,
 * the directory 0750; a symbolic link or anything but a regular file is
 * refused). @name "-" is standard output.
 */
struct logfile *logfile_open(const char *dir, const char *name, unsigned per_second,
			     unsigned burst);
void logfile_free(struct logfile *l);
/* Write one line; false when the rate limit dropped it. */
bool logfile_write(struct logfile *l, const char *line);
uint64_t logfile_written(const struct logfile *l);
uint64_t logfile_dropped(const struct logfile *l);

#endif
