/* The monotonic clock (lib/sys/clock.c). */
#ifndef BRINDLE_SYS_CLOCK_H
#define BRINDLE_SYS_CLOCK_H

#include <stdint.h>

/* Monotonic clock in nanoseconds / milliseconds. */
uint64_t now_ns(void);
static inline uint64_t now_ms(void)
{
	return now_ns() / 1000000;
}

#endif
