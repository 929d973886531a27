/*
 * Device side of the tabula result protocol, version 2 (docs/protocol.md is the source of truth).
 * Frames: '#' TT SSSS LLLL <2L hex> CCCCCCCC '\n', CRC32 (zlib) over type|seq|len|payload.
 * Uses only tabula_board_putc/getc.
 *
 * Version 2 keeps version 1's frames and adds what a noisy link needs: every host request is
 * idempotent (a repeated INPUT or a RESEND replays the stored OUTPUT, a repeated END repeats
 * STATUS, a HELLO request repeats HELLO) and the device exits only on EXIT, after the host has
 * its STATUS.
 */
#ifndef TABULA_PROTOCOL_H
#define TABULA_PROTOCOL_H

#include <stdint.h>

#define TABULA_PROTOCOL_VERSION 2u
/* The length field's limit; a device accepts frames up to its receive buffer's capacity. */
#define TABULA_FRAME_MAX_PAYLOAD 65535u
#define TABULA_SEQ_UNKNOWN 0xFFFFu
#define TABULA_EOT 0x04u

enum {
    TABULA_MSG_HELLO = 0x01,   /* device -> host (seq 0 at boot); host -> device: "say HELLO again" */
    TABULA_MSG_INPUT = 0x02,   /* host -> device */
    TABULA_MSG_OUTPUT = 0x03,  /* device -> host */
    TABULA_MSG_END = 0x04,     /* host -> device */
    TABULA_MSG_STATUS = 0x05,  /* device -> host */
    TABULA_MSG_NACK = 0x06,    /* device -> host */
    TABULA_MSG_RESEND = 0x07,  /* host -> device: "send OUTPUT <seq> again" (version 2) */
    TABULA_MSG_EXIT = 0x08,    /* host -> device: "I have STATUS: write EOT and exit" (version 2) */
    TABULA_MSG_TENSOR = 0x09,  /* host -> device: "run the last INPUT up to op k, send its output"; device -> host:
                                * the answer (a debug firmware only, HELLO flags bit 1) */
};

/* NACK reasons. A frame rejected for a non-hex character or a missing '\n' is reported as
 * TABULA_NACK_CRC: to the host all three mean "the bytes arrived damaged, resend". */
enum {
    TABULA_NACK_CRC = 1,
    TABULA_NACK_LENGTH = 2,    /* wrong payload size for an INPUT */
    TABULA_NACK_TYPE = 3,
    TABULA_NACK_TOO_LONG = 4,
    TABULA_NACK_NOT_AVAILABLE = 5,   /* RESEND for a seq whose OUTPUT the device does not hold; TENSOR before any INPUT */
    TABULA_NACK_OUT_OF_RANGE = 6,    /* TENSOR for an op the model does not have, or an offset past its output */
};

/* Running CRC32 with zlib.crc32 semantics: crc = tabula_crc32(0, a); crc = tabula_crc32(crc, b)
 * equals zlib.crc32(a + b). */
uint32_t tabula_crc32(uint32_t crc, const uint8_t *data, uint32_t n);

/* Streaming frame writer: begin, any number of put calls totalling `len` bytes, end.
 * Nothing is buffered; the CRC is computed on the fly. */
typedef struct {
    uint32_t crc;
} tabula_frame_writer;

void tabula_frame_begin(tabula_frame_writer *w, uint8_t type, uint16_t seq, uint16_t len);
void tabula_frame_put(tabula_frame_writer *w, const uint8_t *data, uint32_t n);
void tabula_frame_put_u32(tabula_frame_writer *w, uint32_t value);   /* little-endian */
void tabula_frame_end(tabula_frame_writer *w);

/* One received frame. The owner provides the payload buffer and its capacity in bytes; a longer
 * frame is rejected with TABULA_NACK_TOO_LONG. */
typedef struct {
    uint8_t type;
    uint16_t seq;
    uint16_t len;
    uint8_t *payload;
    uint32_t capacity;
    uint32_t crc;              /* the frame's CRC32 once read; equal CRCs + seqs = a repeated frame */
} tabula_frame;

typedef enum {
    TABULA_RX_CLOSED = -1,     /* tabula_board_getc() reported the link closed */
    TABULA_RX_REJECTED = 0,    /* bad frame: *nack_reason and *nack_seq say what to NACK */
    TABULA_RX_OK = 1,          /* *frame holds a frame whose CRC matched */
} tabula_rx_result;

/* Skip to the next '#', read one frame (resynchronising on any '#' inside it). Blocking. */
tabula_rx_result tabula_frame_read(tabula_frame *frame, uint8_t *nack_reason, uint16_t *nack_seq);

/* Convenience senders. */
void tabula_send_nack(uint16_t seq, uint8_t reason);
/* STATUS: exit code, inferences run, and the link counters: frames the device rejected as
 * damaged (NACKed), OUTPUTs it replayed for a repeated INPUT or a RESEND. */
void tabula_send_status(uint16_t seq, int32_t exit_code, uint32_t n_inferences,
                        uint32_t n_rejected, uint32_t n_replayed);

#endif /* TABULA_PROTOCOL_H */
