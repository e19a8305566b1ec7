/* crc32.h — zlib's CRC-32 (reflected polynomial 0xEDB88320), the checksum
 * of every file halflab writes for itself (weights, checkpoints, batch
 * files), so that Python's zlib.crc32 checks the same files. */
#ifndef HL_CRC32_H
#define HL_CRC32_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The CRC of the bytes before data[0..n) (0 to start) extended by them:
 * hl_crc32_update(hl_crc32_update(0, a, na), b, nb) is the CRC of a then b. */
uint32_t hl_crc32_update(uint32_t crc, const void *data, size_t n);

#ifdef __cplusplus
}
#endif

#endif
