/* crc32.h — zlib's CRC-32 (reflected polynomial 0xEDB88320), the checksum
 * of every file halflab writes for itself (weights, checkpoints, batch
 * files), so that Python's zlib.crc32 checks the same files. */
#ifndef HL_CRC32_H
#define HL_CRC32_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The CRC of the bytes before data[0..n) (0 to start) extended by them:
 * hl_crc32_update(hl_crc32_update(0, a, na), b, nb) is the CRC of a then b. */
uint32_t hl_crc32_update(uint32_t crc, const void *data, size_t n);

/* A stream writer that keeps the CRC of everything written, for files that
 * end with the CRC of what came before: put the parts, then
 * hl_crc_put_trailer. A failed fwrite clears `ok`; later puts do nothing. */
typedef struct {
  FILE *f;
  uint32_t crc;
  bool ok;
} hl_crc_writer;

static inline hl_crc_writer hl_crc_writer_on(FILE *f) { return (hl_crc_writer){f, 0, true}; }

static inline void hl_crc_put(hl_crc_writer *w, const void *data, size_t n) {
  if (!w->ok) return;
  w->crc = hl_crc32_update(w->crc, data, n);
  if (fwrite(data, 1, n, w->f) != n) w->ok = false;
}

static inline void hl_crc_put_u32(hl_crc_writer *w, uint32_t v) { hl_crc_put(w, &v, sizeof v); }

/* the CRC of everything put so far, as the file's last 4 bytes */
static inline void hl_crc_put_trailer(hl_crc_writer *w) {
  const uint32_t crc = w->crc;
  hl_crc_put(w, &crc, sizeof crc);
}

#ifdef __cplusplus
}
#endif

#endif
