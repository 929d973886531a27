/*
 * Host board layer (tabula_board.h): the link is stdin/stdout, ticks are CLOCK_MONOTONIC
 * nanoseconds (TABULA_BOARD_TICK_HZ = 1e9), exit() ends the run.
 * Input is read in chunks (read(2) returns what is available, it never waits for more).
 * Output is buffered and flushed at every '\n', at EOT, and before blocking on input, so a
 * frame is one write(2) and the host never waits for bytes we still hold.
 */
#define _POSIX_C_SOURCE 199309L

#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "tabula_board.h"

static unsigned char out_buf[4096];
static size_t out_len;
static unsigned char in_buf[4096];
static size_t in_len, in_pos;

static void flush_out(void)
{
    size_t done = 0;
    while (done < out_len) {
        ssize_t n = write(STDOUT_FILENO, out_buf + done, out_len - done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;              /* reader gone; nothing sensible left to do with the bytes */
        }
        done += (size_t)n;
    }
    out_len = 0;
}

void tabula_board_init(void)
{
    out_len = 0;
}

void tabula_board_putc(uint8_t c)
{
    out_buf[out_len++] = c;
    if (c == '\n' || c == 0x04u || out_len == sizeof out_buf) {
        flush_out();
    }
}

int tabula_board_getc(void)
{
    ssize_t n;
    if (in_pos == in_len) {
        flush_out();
        do {
            n = read(STDIN_FILENO, in_buf, sizeof in_buf);   /* returns what is available */
        } while (n < 0 && errno == EINTR);
        if (n <= 0) {
            return -1;
        }
        in_len = (size_t)n;
        in_pos = 0;
    }
    return in_buf[in_pos++];
}

uint32_t tabula_board_ticks(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint32_t)((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
}

void tabula_board_exit(int code)
{
    flush_out();
    exit(code);
}
