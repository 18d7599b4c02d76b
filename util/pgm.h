/*
util/pgm.h: attention maps as a grayscale PGM picture. Plumbing.
*/
#ifndef UTIL_PGM_H
#define UTIL_PGM_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "io.h"

// probs is (L,NH,T,T): the attention probabilities of every layer and head on one
// sequence. One picture: a grid with a row per layer and a column per head, each tile a
// T x T map (query rows, key columns, white = probability 1, on a square-root scale so
// small weights stay visible), enlarged so short prompts stay visible. Written atomically.
void write_attention_pgm(const char* path, const float* probs, int L, int NH, int T) {
    int zoom = T < 128 ? (256 + T - 1) / T : 1, gap = 4;
    int tile = T * zoom, W = NH * tile + (NH - 1) * gap, H = L * tile + (L - 1) * gap;
    unsigned char* img = callocCheck((size_t)W * H, 1);
    memset(img, 64, (size_t)W * H);  // grey gaps between tiles
    for (int l = 0; l < L; l++)
        for (int h = 0; h < NH; h++)
            for (int y = 0; y < tile; y++)
                for (int x = 0; x < tile; x++) {
                    float p = probs[((size_t)(l * NH + h) * T + y / zoom) * T + x / zoom];
                    size_t pixel = (size_t)(l * (tile + gap) + y) * W + h * (tile + gap) + x;
                    img[pixel] = (unsigned char)(255.0f * sqrtf(p) + 0.5f);
                }
    char tmp[4096];
    FILE* f = atomic_open(path, tmp, sizeof tmp);
    fprintf(f, "P5\n# attention probabilities (sqrt scale): rows = layers, columns = heads\n"
               "%d %d\n255\n", W, H);
    fwrite_check(img, 1, (size_t)W * H, f, tmp);
    atomic_commit(f, tmp, path);
    free(img);
}

#endif
