/*
 * Replays a fuzz target's inputs without libFuzzer: linked with one
 * target's LLVMFuzzerTestOneInput and built with the normal cc, so that
 * `make test` runs every seed and crash reproducer as a unit-level test.
 *
 *   replay [FILE|DIR ...]    each file, and each regular file in each DIR;
 *                            with no argument, REPLAY_DIR (set at build)
 *
 * A target that finds a broken invariant aborts, and so fails the test.
 * Prints how many inputs ran; fails when none did, so that a missing seed
 * directory is not a pass.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Inputs above this are not seeds (libFuzzer's -max_len is well below). */
#define REPLAY_MAX (1u << 20)

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    uint8_t *buf = malloc(REPLAY_MAX);
    if (!buf) {
        fclose(f);
        return -1;
    }
    size_t n = fread(buf, 1, REPLAY_MAX, f);
    int big = !feof(f);
    fclose(f);
    if (big) {
        fprintf(stderr, "%s: larger than %u bytes\n", path, REPLAY_MAX);
        free(buf);
        return -1;
    }
    /* an exact-size copy, so that ASan sees a read past the input */
    uint8_t *in = malloc(n ? n : 1);
    if (!in) {
        free(buf);
        return -1;
    }
    memcpy(in, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(in, n);
    free(in);
    return 0;
}

static int replay_path(const char *path, int *count)
{
    struct stat st;
    if (stat(path, &st) < 0) {
        perror(path);
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        (*count)++;
        return replay_file(path);
    }
    DIR *d = opendir(path);
    if (!d) {
        perror(path);
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char sub[4096];
        struct stat es;
        if (e->d_name[0] == '.')
            continue;
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        if (stat(sub, &es) < 0 || !S_ISREG(es.st_mode))
            continue;
        (*count)++;
        if (replay_file(sub) < 0)
            rc = -1;
    }
    closedir(d);
    return rc;
}

int main(int argc, char **argv)
{
#ifdef REPLAY_DIR
    static char *dflt[] = { NULL, REPLAY_DIR, NULL };
    if (argc < 2) {
        argv = dflt;
        argc = 2;
    }
#endif
    int count = 0, rc = 0;
    for (int i = 1; i < argc; i++)
        if (replay_path(argv[i], &count) < 0)
            rc = 1;
    printf("%s: %d inputs replayed%s\n", argc > 1 ? argv[1] : "replay", count,
           rc ? ", some unreadable" : "");
    return rc || count == 0;
}
