/*
 * libFuzzer harness for key finding (lib/proto/command.h): the numbers in a
 * command (numkeys, STREAMS, KEYS ...) come from the client, and routing,
 * rewriting and indexing all index arguments by what command_keys returns.
 *
 * Input: the command's arguments separated by '\n' (any other byte, NUL
 * included, stays in its argument); the first is the name, looked up as the
 * router does (a container's subcommand by the second). Checked: every key
 * index written is an argument after the name, there are no more keys than
 * arguments, a smaller max writes a prefix of the same list, and the
 * NOT_KEYS variant lists at least the keys.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/proto/command.h"
#include "lib/proto/resp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_ARGS 64

static void check(const struct command *cmd, const char *base, const struct resp_arg *args,
                  int argc)
{
    int keys[FUZZ_MAX_ARGS], few[2], all[FUZZ_MAX_ARGS];
    int n = command_keys(cmd, base, args, argc, keys, FUZZ_MAX_ARGS);
    if (n < -1 || n > argc)
        abort();
    for (int i = 0; i < n && i < FUZZ_MAX_ARGS; i++)
        if (keys[i] < 1 || keys[i] >= argc)
            abort();
    if (command_keys(cmd, base, args, argc, few, 2) != n)
        abort();
    for (int i = 0; i < n && i < 2; i++)
        if (few[i] != keys[i])
            abort();
    int m = command_keys_ex(cmd, base, args, argc, all, FUZZ_MAX_ARGS, COMMAND_KEYS_NOT_KEYS);
    if (m < -1 || m > argc || (n > 0 && m < n))
        abort();
    for (int i = 0; i < m && i < FUZZ_MAX_ARGS; i++)
        if (all[i] < 1 || all[i] >= argc)
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct resp_arg args[FUZZ_MAX_ARGS];
    const char *base = (const char *)data;
    int argc = 0;
    size_t start = 0;
    for (size_t i = 0; i <= size && argc < FUZZ_MAX_ARGS; i++)
        if (i == size || data[i] == '\n') {
            args[argc++] = (struct resp_arg){ (uint32_t)start, (uint32_t)(i - start) };
            start = i + 1;
        }
    const struct command *cmd = command_lookup(base + args[0].off, args[0].len);
    if (!cmd)
        return 0;
    if (argc > 1) {
        const struct command *sub = command_lookup_sub(cmd, base + args[1].off, args[1].len);
        if (sub)
            cmd = sub;
    }
    check(cmd, base, args, argc);
    return 0;
}
