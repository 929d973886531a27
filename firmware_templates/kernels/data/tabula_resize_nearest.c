/*
 * RESIZE nearest, integer upscaling: one memcpy of a pixel (c elements) per output pixel.  Contract:
 * manifest.toml (data); Python twin: tabula/reference/ops/resize.py.
 */
#include <string.h>

#include "tabula_kernels.h"

tabula_status tabula_resize_nearest(const void *input, int32_t n, int32_t h, int32_t w, int32_t c,
                                    int32_t scale_y, int32_t scale_x, int32_t elem_bytes, void *output)
{
    const uint8_t *src = (const uint8_t *)input;
    uint8_t *dst = (uint8_t *)output;
    int32_t b, y, x;
    size_t pixel;
    if (n < 0 || h < 0 || w < 0 || c < 0 || scale_y < 1 || scale_x < 1 || elem_bytes < 1 || elem_bytes > 8) {
        return TABULA_ERR_ARG;
    }
    pixel = (size_t)c * (size_t)elem_bytes;
    for (b = 0; b < n; ++b) {
        for (y = 0; y < h * scale_y; ++y) {
            const uint8_t *row = src + ((size_t)b * (size_t)h + (size_t)(y / scale_y)) * (size_t)w * pixel;
            for (x = 0; x < w * scale_x; ++x) {
                memcpy(dst, row + (size_t)(x / scale_x) * pixel, pixel);
                dst += pixel;
            }
        }
    }
    return TABULA_OK;
}
