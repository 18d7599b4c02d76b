/*
util/crc32c.h: CRC-32C (Castagnoli), the checksum of our own binary formats (the training
state, checkpoint versions 104 and 201: doc/formats.md). Plumbing: a reader of the model may
skip it.

Written here rather than linked: it is 30 lines, and the same bytes must give the same sum
on every platform. CRC-32C rather than a sum of words: it catches every error of up to 3
flipped bits and every burst of up to 32, and it is what iSCSI, ext4 and Parquet use, so
other tools can check a file (Python: the crc32c package; Go: hash/crc32.Castagnoli).
Slicing by 8: eight tables of 256 words turn the byte-at-a-time loop into 8 bytes a step
(the checksum of a GPT-2 124M state file, 1 GB, then takes about a second, not eight).
*/
#ifndef UTIL_CRC32C_H
#define UTIL_CRC32C_H

#include <stddef.h>
#include <stdint.h>

static uint32_t crc32c_table[8][256];

static void crc32c_init_tables(void) {
    for (uint32_t b = 0; b < 256; b++) {  // table 0: one byte, the reflected polynomial 0x82F63B78
        uint32_t c = b;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc32c_table[0][b] = c;
    }
    for (int t = 1; t < 8; t++)  // table t: the same byte followed by t zero bytes
        for (int b = 0; b < 256; b++) {
            uint32_t before = crc32c_table[t - 1][b];
            crc32c_table[t][b] = (before >> 8) ^ crc32c_table[0][before & 0xff];
        }
}

// crc: 0 to start, or the result of the bytes before these (a checksum in pieces)
static uint32_t crc32c_update(uint32_t crc, const void* data, size_t n) {
    const unsigned char* p = data;
    if (!crc32c_table[0][1]) crc32c_init_tables();
    crc = ~crc;
    for (; n >= 8; n -= 8, p += 8) {  // the bytes as they lie in the file, whatever the host's order
        uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                             (uint32_t)p[3] << 24);
        crc = crc32c_table[7][lo & 0xff] ^ crc32c_table[6][(lo >> 8) & 0xff] ^
              crc32c_table[5][(lo >> 16) & 0xff] ^ crc32c_table[4][lo >> 24] ^
              crc32c_table[3][p[4]] ^ crc32c_table[2][p[5]] ^ crc32c_table[1][p[6]] ^ crc32c_table[0][p[7]];
    }
    for (; n > 0; n--, p++)
        crc = (crc >> 8) ^ crc32c_table[0][(crc ^ *p) & 0xff];
    return ~crc;
}

#endif
