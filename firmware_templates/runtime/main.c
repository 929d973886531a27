/*
 * tabula device runtime: announce the model (HELLO), answer every INPUT with an OUTPUT, answer END
 * with STATUS, and on EXIT write EOT and exit. docs/protocol.md (version 2) is the contract.
 *
 * Every host request is idempotent, so the host can simply ask again when a frame is lost or
 * damaged on the link: an INPUT with the seq and CRC of the last one run, or a RESEND of that seq,
 * replays the stored OUTPUT (the model's output buffers and the stored ticks and status; nothing
 * is recomputed, n_inferences does not move); END may come any number of times (STATUS each
 * time); a HELLO request repeats HELLO with the request's seq (the boot HELLO has seq 0, which
 * is how the host recognises a reset). Damaged frames are NACKed and counted.
 *
 * Exit code (in STATUS and of the process): 0 when every inference returned TABULA_OK, else the
 * first non-zero status tabula_model_run() returned; TABULA_EXIT_LINK_CLOSED when the link closed
 * before END (a link closed after END ends the run normally, with that exit code).
 *
 * Build-time defines (set by the toolchain tool from board.toml): TABULA_BOARD_NAME (a C string)
 * and TABULA_BOARD_TICK_HZ.
 *
 * Profiling (codegen profile=1: model.h defines TABULA_MODEL_N_PROFILED_OPS and the model fills
 * tabula_model_op_ticks[]): HELLO's flags byte has TABULA_HELLO_PROFILE set and every OUTPUT carries
 * u32 n_ops and the n_ops per-op tick counts after the outputs. Without it nothing changes.
 *
 * Debug (codegen debug=1: model.h defines TABULA_MODEL_N_DEBUG_OPS, tabula_model_run_until() and
 * tabula_model_op_output()): HELLO's flags byte has TABULA_HELLO_DEBUG set, the last INPUT is kept, and a
 * TENSOR request runs it again up to the op asked for and sends that op's output (docs/protocol.md,
 * TENSOR). Without it a TENSOR request is an unknown type (NACK 3), as before.
 */
#include <stdint.h>
#include <string.h>

#include "model.h"
#include "tabula_board.h"
#include "tabula_protocol.h"

#ifndef TABULA_BOARD_NAME
#define TABULA_BOARD_NAME "unknown"
#endif
#ifndef TABULA_BOARD_TICK_HZ
#define TABULA_BOARD_TICK_HZ 0u
#endif

#define TABULA_EXIT_LINK_CLOSED 64

/* The receive buffer holds one INPUT (every model input) -- sized from model.h, at least 64 bytes
 * so short control frames always fit. A hand-written model.h without the totals gets 4 KiB. */
#ifndef TABULA_MODEL_INPUT_TOTAL_BYTES
#define TABULA_MODEL_INPUT_TOTAL_BYTES 4096u
#endif
#ifdef TABULA_MODEL_N_PROFILED_OPS
#define TABULA_HELLO_PROFILE 1u  /* bit 0: OUTPUT carries per-op ticks (docs/protocol.md) */
#define PROFILE_BYTES (4u + 4u * TABULA_MODEL_N_PROFILED_OPS)
#else
#define TABULA_HELLO_PROFILE 0u
#define PROFILE_BYTES 0u
#endif
#ifdef TABULA_MODEL_N_DEBUG_OPS
#define TABULA_HELLO_DEBUG 2u    /* bit 1: the device answers TENSOR requests (docs/protocol.md) */
#else
#define TABULA_HELLO_DEBUG 0u
#endif
#define TABULA_HELLO_FLAGS (TABULA_HELLO_PROFILE | TABULA_HELLO_DEBUG)
#if defined(TABULA_MODEL_OUTPUT_TOTAL_BYTES) && (TABULA_MODEL_OUTPUT_TOTAL_BYTES + 8u + PROFILE_BYTES > TABULA_FRAME_MAX_PAYLOAD)
#error "the model's outputs (and, profiling, its per-op ticks) do not fit one OUTPUT frame (65527 bytes)"
#endif
#if TABULA_MODEL_INPUT_TOTAL_BYTES > TABULA_FRAME_MAX_PAYLOAD
#error "the model's inputs do not fit one INPUT frame (65535 bytes)"
#endif
#define RX_CAPACITY (TABULA_MODEL_INPUT_TOTAL_BYTES > 64u ? TABULA_MODEL_INPUT_TOTAL_BYTES : 64u)

static uint8_t rx_payload[RX_CAPACITY];   /* static, not on the stack */
static tabula_frame rx = {0u, 0u, 0u, rx_payload, RX_CAPACITY, 0u};

static uint32_t total_bytes(const uint32_t *sizes, int n)
{
    uint32_t total = 0u;
    for (int i = 0; i < n; i++) {
        total += sizes[i];
    }
    return total;
}

/* The last OUTPUT sent, to replay it for a repeated INPUT or a RESEND. Its output bytes stay in
 * the model's output buffers until the next new INPUT is copied in. */
static struct {
    int valid;
    uint16_t seq;
    uint32_t input_crc;   /* CRC32 of the INPUT frame it answered */
    uint32_t ticks;
    int32_t status;
} last;

#ifdef TABULA_MODEL_N_DEBUG_OPS
/* The last INPUT's bytes: a TENSOR request runs them again (the arena reuses the input buffers). */
static uint8_t dbg_input[TABULA_MODEL_INPUT_TOTAL_BYTES > 0u ? TABULA_MODEL_INPUT_TOTAL_BYTES : 1u];
static int dbg_have_input;
#define TENSOR_HEAD_BYTES 14u    /* u16 op, u32 offset, u32 total bytes, i32 status */
#endif

static void send_hello(uint16_t seq)
{
    static const char board[] = TABULA_BOARD_NAME;
    const uint8_t head[4] = {(uint8_t)TABULA_PROTOCOL_VERSION, (uint8_t)TABULA_MODEL_N_INPUTS,
                             (uint8_t)TABULA_MODEL_N_OUTPUTS, (uint8_t)TABULA_HELLO_FLAGS};
    uint32_t name_len = (uint32_t)strlen(board);
    uint32_t len = 4u + 4u * (TABULA_MODEL_N_INPUTS + TABULA_MODEL_N_OUTPUTS) + 4u + name_len;
    tabula_frame_writer w;

    tabula_frame_begin(&w, TABULA_MSG_HELLO, seq, (uint16_t)len);
    tabula_frame_put(&w, head, sizeof head);
    for (int i = 0; i < TABULA_MODEL_N_INPUTS; i++) {
        tabula_frame_put_u32(&w, tabula_model_input_bytes[i]);
    }
    for (int i = 0; i < TABULA_MODEL_N_OUTPUTS; i++) {
        tabula_frame_put_u32(&w, tabula_model_output_bytes[i]);
    }
    tabula_frame_put_u32(&w, (uint32_t)(TABULA_BOARD_TICK_HZ));
    tabula_frame_put(&w, (const uint8_t *)board, name_len);
    tabula_frame_end(&w);
}

/* OUTPUT for `last`: ticks, status, then the model's output buffers (then, profiling, the per-op
 * ticks of that run: they stay in tabula_model_op_ticks until the next run, like the outputs). */
static void send_last_output(void)
{
    uint32_t out_len = 8u + total_bytes(tabula_model_output_bytes, TABULA_MODEL_N_OUTPUTS) + PROFILE_BYTES;
    tabula_frame_writer w;
    tabula_frame_begin(&w, TABULA_MSG_OUTPUT, last.seq, (uint16_t)out_len);
    tabula_frame_put_u32(&w, last.ticks);
    tabula_frame_put_u32(&w, (uint32_t)last.status);
    for (int i = 0; i < TABULA_MODEL_N_OUTPUTS; i++) {
        tabula_frame_put(&w, tabula_model_output(i), tabula_model_output_bytes[i]);
    }
#ifdef TABULA_MODEL_N_PROFILED_OPS
    tabula_frame_put_u32(&w, (uint32_t)TABULA_MODEL_N_PROFILED_OPS);
    for (uint32_t i = 0u; i < TABULA_MODEL_N_PROFILED_OPS; i++) {
        tabula_frame_put_u32(&w, tabula_model_op_ticks[i]);
    }
#endif
    tabula_frame_end(&w);
}

/* Copy the INPUT payload into the model inputs, run, remember the result in `last`, answer with
 * OUTPUT. Returns the model's status. */
static int32_t run_one(const tabula_frame *in)
{
    const uint8_t *src = in->payload;
    last.valid = 0;   /* copying the inputs may overwrite the previous outputs (shared arena) */
#ifdef TABULA_MODEL_N_DEBUG_OPS
    memcpy(dbg_input, in->payload, in->len);
    dbg_have_input = 1;
#endif
    for (int i = 0; i < TABULA_MODEL_N_INPUTS; i++) {
        memcpy(tabula_model_input(i), src, tabula_model_input_bytes[i]);
        src += tabula_model_input_bytes[i];
    }

    uint32_t t0 = tabula_board_ticks();
    int32_t status = (int32_t)tabula_model_run();
    uint32_t ticks = tabula_board_ticks() - t0;

    last.valid = 1;
    last.seq = in->seq;
    last.input_crc = in->crc;
    last.ticks = ticks;
    last.status = status;
    send_last_output();
    return status;
}

#ifdef TABULA_MODEL_N_DEBUG_OPS
/* TENSOR request (payload u16 op, u32 offset): run the last INPUT up to op `op` and answer with TENSOR:
 * u16 op, u32 offset, u32 the op output's total bytes, i32 the partial run's status, then the output's
 * bytes from `offset` (as many as fit one frame). The model's buffers then hold a partial run: the stored
 * OUTPUT is no longer available (a RESEND gets NACK 5; the host sends INPUT again). */
static void answer_tensor(const tabula_frame *in)
{
    const uint8_t *p = in->payload;
    const uint8_t *src = dbg_input;
    uint32_t op, offset, total = 0u, n;
    int32_t status;
    const uint8_t *out;
    tabula_frame_writer w;

    if (in->len != 6u) {
        tabula_send_nack(in->seq, TABULA_NACK_LENGTH);
        return;
    }
    op = (uint32_t)p[0] | ((uint32_t)p[1] << 8);
    offset = (uint32_t)p[2] | ((uint32_t)p[3] << 8) | ((uint32_t)p[4] << 16) | ((uint32_t)p[5] << 24);
    if (!dbg_have_input) {
        tabula_send_nack(in->seq, TABULA_NACK_NOT_AVAILABLE);
        return;
    }
    if (op >= TABULA_MODEL_N_DEBUG_OPS) {
        tabula_send_nack(in->seq, TABULA_NACK_OUT_OF_RANGE);
        return;
    }
    last.valid = 0;
    for (int i = 0; i < TABULA_MODEL_N_INPUTS; i++) {
        memcpy(tabula_model_input(i), src, tabula_model_input_bytes[i]);
        src += tabula_model_input_bytes[i];
    }
    status = (int32_t)tabula_model_run_until((int)op);
    out = tabula_model_op_output((int)op, &total);
    if (offset > total || (offset == total && total != 0u)) {
        tabula_send_nack(in->seq, TABULA_NACK_OUT_OF_RANGE);
        return;
    }
    n = total - offset;
    if (n > TABULA_FRAME_MAX_PAYLOAD - TENSOR_HEAD_BYTES) {
        n = TABULA_FRAME_MAX_PAYLOAD - TENSOR_HEAD_BYTES;
    }
    tabula_frame_begin(&w, TABULA_MSG_TENSOR, in->seq, (uint16_t)(TENSOR_HEAD_BYTES + n));
    tabula_frame_put(&w, p, 6u);   /* op and offset, as asked */
    tabula_frame_put_u32(&w, total);
    tabula_frame_put_u32(&w, (uint32_t)status);
    tabula_frame_put(&w, out + offset, n);
    tabula_frame_end(&w);
}
#endif

static void finish(int32_t exit_code)
{
    tabula_board_putc(TABULA_EOT);
    tabula_board_exit((int)exit_code);
}

int main(void)
{
    static const char banner[] = "tabula " TABULA_BOARD_NAME "\n";
    const uint32_t in_total = total_bytes(tabula_model_input_bytes, TABULA_MODEL_N_INPUTS);
    int32_t exit_code = 0;
    uint32_t n_inferences = 0u, n_rejected = 0u, n_replayed = 0u;
    int ended = 0;   /* END received: a closed link is now a normal end */

    tabula_board_init();
    for (const char *p = banner; *p; p++) {   /* ignored by the host: outside any frame */
        tabula_board_putc((uint8_t)*p);
    }
    send_hello(0u);

    for (;;) {
        uint8_t reason = 0u;
        uint16_t bad_seq = TABULA_SEQ_UNKNOWN;
        tabula_rx_result r = tabula_frame_read(&rx, &reason, &bad_seq);

        if (r == TABULA_RX_CLOSED) {
            int32_t code = ended ? exit_code : TABULA_EXIT_LINK_CLOSED;
            tabula_send_status(TABULA_SEQ_UNKNOWN, code, n_inferences, n_rejected, n_replayed);
            finish(code);
        } else if (r == TABULA_RX_REJECTED) {
            n_rejected++;
            tabula_send_nack(bad_seq, reason);
        } else if (rx.type == TABULA_MSG_INPUT) {
            if (rx.len != in_total) {
                tabula_send_nack(rx.seq, TABULA_NACK_LENGTH);
            } else if (last.valid && rx.seq == last.seq && rx.crc == last.input_crc) {
                n_replayed++;          /* the host did not get our OUTPUT: the same again */
                send_last_output();
            } else {
                int32_t status = run_one(&rx);
                n_inferences++;
                if (status != 0 && exit_code == 0) {
                    exit_code = status;
                }
            }
        } else if (rx.type == TABULA_MSG_RESEND) {
            if (last.valid && rx.seq == last.seq) {
                n_replayed++;
                send_last_output();
            } else {
                tabula_send_nack(rx.seq, TABULA_NACK_NOT_AVAILABLE);
            }
        } else if (rx.type == TABULA_MSG_HELLO) {
            send_hello(rx.seq);
        } else if (rx.type == TABULA_MSG_END) {
            ended = 1;
            tabula_send_status(rx.seq, exit_code, n_inferences, n_rejected, n_replayed);
        } else if (rx.type == TABULA_MSG_EXIT) {
            finish(exit_code);
#ifdef TABULA_MODEL_N_DEBUG_OPS
        } else if (rx.type == TABULA_MSG_TENSOR) {
            answer_tensor(&rx);
#endif
        } else {
            tabula_send_nack(rx.seq, TABULA_NACK_TYPE);
        }
    }
}
