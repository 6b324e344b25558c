/*
 * wav_peek.c — what a RIFF WAVE header claims, read from the file's first bytes. libsndfile
 * quietly shortens a WAV whose data chunk claims more bytes than the file holds (it logs it and
 * reads what is there); tessera refuses such a file, so it needs the claim itself. Also names a
 * sample rate of 0, which libsndfile refuses with a message about its own SF_INFO struct.
 */
#include <string.h>

#include "audio/audio.h"

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

ts_wav_header ts_wav_peek(const uint8_t *d, size_t n) {
    ts_wav_header h = {0};
    if (n < 12 || memcmp(d, "RIFF", 4) || memcmp(d + 8, "WAVE", 4)) return h;
    int have_fmt = 0;
    /* chunks: a 4-byte id, a 4-byte size, the body padded to an even size */
    for (size_t at = 12; at + 8 <= n;) {
        uint32_t size = le32(d + at + 4);
        if (!memcmp(d + at, "fmt ", 4) && size >= 16 && at + 8 + 16 <= n) {
            h.channels = le16(d + at + 10);
            h.rate = le32(d + at + 12);
            h.block_align = le16(d + at + 20);
            have_fmt = 1;
        } else if (!memcmp(d + at, "data", 4)) {
            h.has_data = 1;
            h.data_bytes = size;
            break;
        }
        uint64_t next = (uint64_t)at + 8 + size + (size & 1);
        if (next > n) break;
        at = (size_t)next;
    }
    h.is_wav = have_fmt;
    return h;
}
