/*
 * Device side of the tabula result protocol, version 2. See tabula_protocol.h and
 * docs/protocol.md.
 */
#include "tabula_protocol.h"

#include "tabula_board.h"

/* CRC32 (IEEE 802.3, reflected, poly 0xEDB88320), four bits at a time from a 16-entry table. */
static const uint32_t crc_nibble[16] = {
    0x00000000u, 0x1DB71064u, 0x3B6E20C8u, 0x26D930ACu, 0x76DC4190u, 0x6B6B51F4u,
    0x4DB26158u, 0x5005713Cu, 0xEDB88320u, 0xF00F9344u, 0xD6D6A3E8u, 0xCB61B38Cu,
    0x9B64C2B0u, 0x86D3D2D4u, 0xA00AE278u, 0xBDBDF21Cu,
};

uint32_t tabula_crc32(uint32_t crc, const uint8_t *data, uint32_t n)
{
    uint32_t c = ~crc;
    for (uint32_t i = 0; i < n; i++) {
        c ^= data[i];
        c = (c >> 4) ^ crc_nibble[c & 0xFu];
        c = (c >> 4) ^ crc_nibble[c & 0xFu];
    }
    return ~c;
}

static const char hex_digits[16] = {'0', '1', '2', '3', '4', '5', '6', '7',
                                    '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};

static void put_hex_byte(uint8_t b)
{
    tabula_board_putc((uint8_t)hex_digits[b >> 4]);
    tabula_board_putc((uint8_t)hex_digits[b & 0xFu]);
}

void tabula_frame_begin(tabula_frame_writer *w, uint8_t type, uint16_t seq, uint16_t len)
{
    uint8_t header[5] = {type, (uint8_t)(seq >> 8), (uint8_t)seq, (uint8_t)(len >> 8), (uint8_t)len};
    tabula_board_putc('#');
    w->crc = 0u;
    tabula_frame_put(w, header, sizeof header);
}

void tabula_frame_put(tabula_frame_writer *w, const uint8_t *data, uint32_t n)
{
    w->crc = tabula_crc32(w->crc, data, n);
    for (uint32_t i = 0; i < n; i++) {
        put_hex_byte(data[i]);
    }
}

void tabula_frame_put_u32(tabula_frame_writer *w, uint32_t value)
{
    uint8_t le[4] = {(uint8_t)value, (uint8_t)(value >> 8), (uint8_t)(value >> 16),
                     (uint8_t)(value >> 24)};
    tabula_frame_put(w, le, sizeof le);
}

void tabula_frame_end(tabula_frame_writer *w)
{
    put_hex_byte((uint8_t)(w->crc >> 24));
    put_hex_byte((uint8_t)(w->crc >> 16));
    put_hex_byte((uint8_t)(w->crc >> 8));
    put_hex_byte((uint8_t)w->crc);
    tabula_board_putc('\n');
}

void tabula_send_nack(uint16_t seq, uint8_t reason)
{
    tabula_frame_writer w;
    tabula_frame_begin(&w, TABULA_MSG_NACK, seq, 1u);
    tabula_frame_put(&w, &reason, 1u);
    tabula_frame_end(&w);
}

void tabula_send_status(uint16_t seq, int32_t exit_code, uint32_t n_inferences,
                        uint32_t n_rejected, uint32_t n_replayed)
{
    tabula_frame_writer w;
    tabula_frame_begin(&w, TABULA_MSG_STATUS, seq, 16u);
    tabula_frame_put_u32(&w, (uint32_t)exit_code);
    tabula_frame_put_u32(&w, n_inferences);
    tabula_frame_put_u32(&w, n_rejected);
    tabula_frame_put_u32(&w, n_replayed);
    tabula_frame_end(&w);
}

/* ---- receiving ---- */

#define CH_CLOSED (-1)
#define CH_RESYNC (-2)   /* a '#': abandon this frame, the next one starts here */
#define CH_BAD (-3)      /* not a hex digit */

static int hex_value(int c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return CH_BAD;
}

/* Next two hex digits as a byte (0..255), or CH_CLOSED / CH_RESYNC / CH_BAD. */
static int read_hex_byte(void)
{
    int value = 0;
    for (int i = 0; i < 2; i++) {
        int c = tabula_board_getc();
        if (c < 0) {
            return CH_CLOSED;
        }
        if (c == '#') {
            return CH_RESYNC;
        }
        int v = hex_value(c);
        if (v < 0) {
            return CH_BAD;
        }
        value = (value << 4) | v;
    }
    return value;
}

static tabula_rx_result reject(uint8_t *nack_reason, uint16_t *nack_seq, uint8_t reason,
                               uint16_t seq)
{
    *nack_reason = reason;
    *nack_seq = seq;
    return TABULA_RX_REJECTED;
}

tabula_rx_result tabula_frame_read(tabula_frame *frame, uint8_t *nack_reason, uint16_t *nack_seq)
{
    int c;
    do {
        c = tabula_board_getc();
        if (c < 0) {
            return TABULA_RX_CLOSED;
        }
    } while (c != '#');

restart:;
    uint8_t header[5];
    for (uint32_t i = 0; i < sizeof header; i++) {
        c = read_hex_byte();
        if (c == CH_CLOSED) {
            return TABULA_RX_CLOSED;
        }
        if (c == CH_RESYNC) {
            goto restart;
        }
        if (c == CH_BAD) {
            return reject(nack_reason, nack_seq, TABULA_NACK_CRC, TABULA_SEQ_UNKNOWN);
        }
        header[i] = (uint8_t)c;
    }
    frame->type = header[0];
    frame->seq = (uint16_t)((header[1] << 8) | header[2]);
    frame->len = (uint16_t)((header[3] << 8) | header[4]);
    if (frame->len > frame->capacity) {
        return reject(nack_reason, nack_seq, TABULA_NACK_TOO_LONG, frame->seq);
    }

    for (uint32_t i = 0; i < frame->len; i++) {
        c = read_hex_byte();
        if (c == CH_CLOSED) {
            return TABULA_RX_CLOSED;
        }
        if (c == CH_RESYNC) {
            goto restart;
        }
        if (c == CH_BAD) {   /* includes an early '\n': the payload is shorter than LLLL */
            return reject(nack_reason, nack_seq, TABULA_NACK_CRC, frame->seq);
        }
        frame->payload[i] = (uint8_t)c;
    }

    uint32_t crc_rx = 0u;
    for (int i = 0; i < 4; i++) {
        c = read_hex_byte();
        if (c == CH_CLOSED) {
            return TABULA_RX_CLOSED;
        }
        if (c == CH_RESYNC) {
            goto restart;
        }
        if (c == CH_BAD) {
            return reject(nack_reason, nack_seq, TABULA_NACK_CRC, frame->seq);
        }
        crc_rx = (crc_rx << 8) | (uint32_t)c;
    }

    c = tabula_board_getc();
    if (c == '\r') {                 /* tolerate CRLF line endings */
        c = tabula_board_getc();
    }
    if (c < 0) {
        return TABULA_RX_CLOSED;
    }
    if (c == '#') {
        goto restart;
    }
    if (c != '\n') {                 /* payload longer than LLLL, or garbage */
        return reject(nack_reason, nack_seq, TABULA_NACK_CRC, frame->seq);
    }

    uint32_t crc = tabula_crc32(0u, header, sizeof header);
    crc = tabula_crc32(crc, frame->payload, frame->len);
    if (crc != crc_rx) {
        return reject(nack_reason, nack_seq, TABULA_NACK_CRC, frame->seq);
    }
    frame->crc = crc;
    return TABULA_RX_OK;
}
