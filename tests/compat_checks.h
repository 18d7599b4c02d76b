/*
tests/compat_checks.h: util/compat.h, the shims of the Windows build, checked wherever the
tests run: under Wine the Windows side of each, on Linux the POSIX side, and compat_glob
(Windows' glob) against glob(3) itself. Included by test_gpt2.c.
*/

// a file holding text, written and closed; 1 on success
static int write_text_file(const char* path, const char* text) {
    FILE* f = fopen(path, "wb");
    if (!f) return 0;
    int ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok;
}

// does the file hold exactly text?
static int file_holds(const char* path, const char* text) {
    char buf[64] = {0};
    FILE* f = fopen(path, "rb");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    return n == strlen(text) && memcmp(buf, text, n) == 0;
}

// compat_glob's matches of dir/pattern, as names joined by ' ' (dir/ left off), or "NOMATCH"
static void compat_glob_names(const char* dir, const char* pattern, int posix, char* out, size_t size) {
    char full[4200];
    snprintf(full, sizeof full, "%s/%s", dir, pattern);
    out[0] = 0;
    size_t dir_len = strlen(dir) + 1;
    if (posix) {  // glob(3) (only where COMPAT_HAS_GLOB)
        glob_t g;
        int rc = glob(full, 0, NULL, &g);
        if (rc == GLOB_NOMATCH) snprintf(out, size, "NOMATCH");
        for (size_t i = 0; rc == 0 && i < g.gl_pathc; i++)
            snprintf(out + strlen(out), size - strlen(out), "%s%s", i ? " " : "", g.gl_pathv[i] + dir_len);
        if (rc == 0) globfree(&g);
        return;
    }
    compat_glob_t g;
    int rc = compat_glob(full, &g);
    if (rc == COMPAT_GLOB_NOMATCH) snprintf(out, size, "NOMATCH");
    for (size_t i = 0; rc == 0 && i < g.gl_pathc; i++)
        snprintf(out + strlen(out), size - strlen(out), "%s%s", i ? " " : "", g.gl_pathv[i] + dir_len);
    compat_globfree(&g);
}

static void test_compat(void) {
    printf("-- util/compat.h: the shims of the Windows build\n");
    char dir[4096], path[4200], other[4200];
    snprintf(dir, sizeof dir, "%s/test_gpt2_compat_%d", compat_temp_dir(), (int)getpid());
    int made = compat_mkdir(dir) == 0, again = compat_mkdir(dir) != 0 && errno == EEXIST;
    check(made && again, "compat_mkdir creates '%s', then says EEXIST", dir);

    // rename over an existing file: what every checkpoint rewrite does (Windows' rename refuses)
    snprintf(path, sizeof path, "%s/target.bin", dir);
    snprintf(other, sizeof other, "%s/new.bin", dir);
    int replaced = write_text_file(path, "old") && write_text_file(other, "new!") && compat_rename(other, path) == 0
                   && file_holds(path, "new!") && !file_holds(other, "new!");
    check(replaced, "compat_rename replaces an existing file (and the source is gone)");
    FILE* fresh = compat_create_new(other);
    int created = fresh && fclose(fresh) == 0;
    FILE* twice = compat_create_new(path);
    check(created && !twice && errno == EEXIST,
          "compat_create_new creates a new file; an existing name it refuses (EEXIST), not writing through");
    if (twice) fclose(twice);
    remove(other);

    // 64-bit offsets, without a large file: a file opened to be read may be sought past its end
    FILE* f = fopen(path, "rb");
    int64_t far = ((int64_t)1 << 32) + 5;
    int far_ok = f && compat_fseek(f, far, SEEK_SET) == 0 && compat_ftell(f) == far;
    int size_ok = f && file_size(f) == 4 && compat_ftell(f) == far;  // file_size keeps the position
    if (f) fclose(f);
    remove(path);
    check(far_ok && size_ok, "compat_fseek, compat_ftell: offset 2^32 + 5 (long is 32 bits on Windows); "
          "file_size 4 bytes, the position kept");

    char exe[4096];
    struct stat sb;
    int exe_ok = compat_exe_path(exe, sizeof exe) == 0 && stat(exe, &sb) == 0 && strstr(exe, "test_gpt2")
                 && !strchr(exe, '\\');
    check(exe_ok, "compat_exe_path: this program's file, with '/' separators (%s)", exe_ok ? exe : "none");

    // glob: the names below in dir, each pattern's matches (sorted; a leading '.' only matched by '.')
    const char* names[] = {"shard_000.bin", "shard_010.bin", "shard_002.bin", ".shard_003.bin", "shard_x.txt",
                           "other.bin", "shard_[1].bin"};
    const char* cases[][2] = {
        {"shard_*.bin", "shard_000.bin shard_002.bin shard_010.bin shard_[1].bin"},
        {"shard_00?.bin", "shard_000.bin shard_002.bin"},
        {"shard_0[!0]*", "shard_010.bin"},
        {"shard_[0-9][0-9][0-9].bin", "shard_000.bin shard_002.bin shard_010.bin"},
        {"*", "other.bin shard_000.bin shard_002.bin shard_010.bin shard_[1].bin shard_x.txt"},
        {".shard*", ".shard_003.bin"},
        {"shard_[[]1].bin", "shard_[1].bin"},
        {"shard_[]x]*", "shard_x.txt"},
        {"*.b?n", "other.bin shard_000.bin shard_002.bin shard_010.bin shard_[1].bin"},
        {"nothing_*", "NOMATCH"},
        {"no_such_dir/*", "NOMATCH"},
    };
    int n_names = (int)(sizeof names / sizeof names[0]), n_cases = (int)(sizeof cases / sizeof cases[0]);
    int written = 0, same = 0, same_posix = 0;
    for (int i = 0; i < n_names; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        written += write_text_file(path, "x");
    }
    char got[512], posix[512], first_bad[700] = "";
    for (int c = 0; c < n_cases; c++) {
        compat_glob_names(dir, cases[c][0], 0, got, sizeof got);
        same += strcmp(got, cases[c][1]) == 0;
        if (COMPAT_HAS_GLOB) compat_glob_names(dir, cases[c][0], 1, posix, sizeof posix);
        same_posix += !COMPAT_HAS_GLOB || strcmp(got, posix) == 0;
        if ((strcmp(got, cases[c][1]) || (COMPAT_HAS_GLOB && strcmp(got, posix))) && !first_bad[0])
            snprintf(first_bad, sizeof first_bad, "; '%s' gives '%s'", cases[c][0], got);
    }
    check(written == n_names && same == n_cases && same_posix == n_cases,
          "compat_glob: %d of %d patterns (* ? [a-z] [!x] []x] [[], a leading '.', no match, no directory) "
          "give the expected sorted names%s%s", same, n_cases,
          COMPAT_HAS_GLOB ? ", the same as glob(3)" : " (glob(3): not on this system)", first_bad);
    compat_glob_t g;
    snprintf(path, sizeof path, "%s/*/x", dir);
    check(compat_glob(path, &g) == COMPAT_GLOB_ABORTED,
          "compat_glob refuses a wildcard outside the file name (a directory pattern)");

    for (int i = 0; i < n_names; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        remove(path);
    }
    rmdir(dir);
}

// util/crc32c.h: the check value of CRC-32C, and 8 bytes a step (slicing by 8) against one at a
// time, whole and in pieces, for every length and alignment up to 100 bytes
static void test_crc32c(void) {
    printf("-- util/crc32c.h: the checksum of our formats\n");
    unsigned char bytes[128];
    uint64_t rng = 38;
    for (int i = 0; i < 128; i++)
        bytes[i] = (unsigned char)random_u64(&rng);
    int same = 1;
    for (int start = 0; start < 8; start++)
        for (int n = 0; n <= 100; n++) {
            uint32_t one = ~0u;
            for (int i = 0; i < n; i++)
                one = (one >> 8) ^ crc32c_table[0][(one ^ bytes[start + i]) & 0xff];
            uint32_t whole = crc32c_update(0, bytes + start, n);
            uint32_t head = crc32c_update(0, bytes + start, n / 3);
            uint32_t pieces = crc32c_update(head, bytes + start + n / 3, n - n / 3);
            same &= whole == ~one && pieces == whole;
        }
    check(crc32c_update(0, "123456789", 9) == 0xE3069283u && same,
          "CRC-32C of \"123456789\" is e3069283 (its check value); 8 bytes a step equal 1 at a time");
}
