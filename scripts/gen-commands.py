#!/usr/bin/env python3
"""Generate lib/proto/command_table.c from a real redis-server's COMMAND INFO/DOCS.

Usage:
    scripts/gen-commands.py [-o lib/proto/command_table.c] [--host H --port P]
                            [--redis-server PATH]

Without --port it starts its own redis-server on a free loopback port in a
temporary directory, and always stops it (by PID) and removes the directory,
even on failure.

It sends COMMAND INFO and COMMAND DOCS (all commands) over a raw socket, once
in RESP2 and once on a connection switched to RESP3 by HELLO 3, reads the
replies with the small reader below, which remembers where every element
starts and ends, and writes for every command and subcommand: arity, flags,
ACL categories, tips, legacy key range, key specs, and the exact bytes of its
COMMAND INFO entry and of its COMMAND DOCS entry (name and docs map: two
consecutive elements of the flat COMMAND DOCS array in RESP2, one key and
value of the COMMAND DOCS map in RESP3), in each protocol: RESP3 writes
flags, ACL categories and tips as sets, key specs and docs as maps and an
unknown command as _. The RESP3 replies must describe the same commands as
the RESP2 ones, field by field.
A container's subcommands are put in name order inside its entries (see
sorted_docs), so the output is the same on every run.

Anything it does not recognise (a new flag, tip, key spec type) is an error,
so a new Redis version cannot silently produce a table the proxy misreads.

Each entry also carries the facts the proxy needs that COMMAND does not
give (PROXY_FACTS below: which commands run scripts, where a blocking
command's timeout is, which replies hold key names, ...), so no code of the
proxy's compares command names to find them; a blocking command without a
timeout fact is an error.
Standard library only.
"""

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

# --------------------------------------------------------------------------
# RESP2/RESP3 reader keeping byte spans


class Incomplete(Exception):
    pass


class RespError(Exception):
    pass


# RESP3 aggregates: the number of elements per count in the header
AGGREGATES = {"*": 1, "~": 1, ">": 1, "%": 2}


class Node:
    """One RESP2 or RESP3 element: kind is its type byte, value its payload
    (str for + - $ = ! , (, int for :, bool for #, list of Node for the
    aggregates * ~ > and % (a map's keys and values alternating), None for
    a nil or _), buf[start:end] its exact bytes."""

    __slots__ = ("kind", "value", "start", "end", "buf")

    def __init__(self, kind, value, start, end, buf):
        self.kind, self.value, self.start, self.end, self.buf = kind, value, start, end, buf

    def raw(self):
        return self.buf[self.start:self.end]

    def text(self):
        if self.kind not in "+$" or self.value is None:
            raise RespError("expected a string, got %r" % self.raw()[:60])
        return self.value

    def items(self):
        """The elements of an array or set (or a map's, flat)."""
        if self.kind not in "*~%" or self.value is None:
            raise RespError("expected an array, got %r" % self.raw()[:60])
        return self.value

    def header(self):
        """The bytes of an aggregate's header line: reordering its elements
        keeps their count, so it stays the same."""
        kids = self.items()
        return self.buf[self.start:kids[0].start] if kids else self.raw()


def resp_parse(buf, pos=0):
    """Parse one element at buf[pos:]; return (Node, next_pos).
    Raises Incomplete when buf ends before the element does."""
    eol = buf.find(b"\r\n", pos)
    if eol < 0:
        raise Incomplete()
    kind = chr(buf[pos])
    line = buf[pos + 1:eol].decode("utf-8", "replace")
    nxt = eol + 2
    if kind in "+-,(":
        return Node(kind, line, pos, nxt, buf), nxt
    if kind == ":":
        return Node(kind, int(line), pos, nxt, buf), nxt
    if kind == "_":
        if line:
            raise RespError("bad null at %d" % pos)
        return Node(kind, None, pos, nxt, buf), nxt
    if kind == "#":
        if line not in ("t", "f"):
            raise RespError("bad boolean at %d" % pos)
        return Node(kind, line == "t", pos, nxt, buf), nxt
    if kind in "$=!":
        n = int(line)
        if n < 0:
            return Node(kind, None, pos, nxt, buf), nxt
        if len(buf) < nxt + n + 2:
            raise Incomplete()
        if buf[nxt + n:nxt + n + 2] != b"\r\n":
            raise RespError("bulk not terminated by CRLF at %d" % nxt)
        val = buf[nxt:nxt + n].decode("utf-8", "replace")
        return Node(kind, val, pos, nxt + n + 2, buf), nxt + n + 2
    if kind in AGGREGATES:
        n = int(line)
        if n < 0:
            if kind != "*":
                raise RespError("negative %s count at %d" % (kind, pos))
            return Node(kind, None, pos, nxt, buf), nxt
        kids = []
        for _ in range(n * AGGREGATES[kind]):
            kid, nxt = resp_parse(buf, nxt)
            kids.append(kid)
        return Node(kind, kids, pos, nxt, buf), nxt
    raise RespError("bad RESP type byte %r at %d" % (kind, pos))


class Conn:
    def __init__(self, host, port, timeout=10.0, resp3=False):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buf = b""
        if resp3:
            hello = self.call("HELLO", "3")
            if hello.kind != "%" or pairs(hello)["proto"].value != 3:
                raise RespError("HELLO 3 answered %r" % hello.raw()[:60])

    def call(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a.encode() if isinstance(a, str) else a
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.sock.sendall(b"".join(out))
        while True:
            if self.buf:
                try:
                    node, end = resp_parse(self.buf)
                except Incomplete:
                    node = None
                if node is not None:
                    # keep the node's buffer intact: it holds the spans
                    self.buf = self.buf[end:]
                    if node.kind in "-!":
                        raise RespError("%s: %s" % (args[0], node.value))
                    return node
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise RespError("connection closed by server")
            self.buf += chunk

    def close(self):
        self.sock.close()


# --------------------------------------------------------------------------
# the server we start (if any)


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Server:
    def __init__(self, binary):
        self.binary = binary
        self.proc = None
        self.dir = None
        self.port = None

    def start(self):
        self.dir = tempfile.mkdtemp(prefix="gen-commands.")
        self.port = free_port()
        log = open(os.path.join(self.dir, "redis.log"), "wb")
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1",
             "--dir", self.dir, "--save", "", "--appendonly", "no",
             "--daemonize", "no", "--logfile", ""],
            stdout=log, stderr=subprocess.STDOUT, cwd=self.dir)
        log.close()
        deadline = time.time() + 10
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("redis-server exited early; see its log:\n"
                                   + self.log())
            try:
                c = Conn("127.0.0.1", self.port, timeout=1.0)
                ok = c.call("PING").value == "PONG"
                c.close()
                if ok:
                    return
            except (OSError, RespError):
                time.sleep(0.05)
        raise RuntimeError("redis-server did not answer PING within 10 s")

    def log(self):
        try:
            with open(os.path.join(self.dir, "redis.log"), "rb") as f:
                return f.read().decode("utf-8", "replace")[-2000:]
        except OSError:
            return ""

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)


# --------------------------------------------------------------------------
# model


CMD_FLAGS = {
    "write": "CMD_WRITE", "readonly": "CMD_READONLY", "denyoom": "CMD_DENYOOM",
    "admin": "CMD_ADMIN", "pubsub": "CMD_PUBSUB", "noscript": "CMD_NOSCRIPT",
    "blocking": "CMD_BLOCKING", "loading": "CMD_LOADING", "stale": "CMD_STALE",
    "skip_monitor": "CMD_SKIP_MONITOR", "skip_slowlog": "CMD_SKIP_SLOWLOG",
    "fast": "CMD_FAST", "no_auth": "CMD_NO_AUTH",
    "may_replicate": "CMD_MAY_REPLICATE",
    "no_mandatory_keys": "CMD_NO_MANDATORY_KEYS", "no_multi": "CMD_NO_MULTI",
    "movablekeys": "CMD_MOVABLE_KEYS", "allow_busy": "CMD_ALLOW_BUSY",
    "asking": "CMD_ASKING", "no_async_loading": "CMD_NO_ASYNC_LOADING",
}

KSPEC_FLAGS = {
    "RO": "KSPEC_RO", "RW": "KSPEC_RW", "OW": "KSPEC_OW", "RM": "KSPEC_RM",
    "access": "KSPEC_ACCESS", "update": "KSPEC_UPDATE",
    "insert": "KSPEC_INSERT", "delete": "KSPEC_DELETE",
    "not_key": "KSPEC_NOT_KEY", "incomplete": "KSPEC_INCOMPLETE",
    "variable_flags": "KSPEC_VARIABLE_FLAGS",
}

TIPS = {
    "nondeterministic_output": "CMD_TIP_NONDETERMINISTIC_OUTPUT",
    "nondeterministic_output_order": "CMD_TIP_NONDETERMINISTIC_OUTPUT_ORDER",
    "request_policy:all_nodes": "CMD_TIP_REQUEST_ALL_NODES",
    "request_policy:all_shards": "CMD_TIP_REQUEST_ALL_SHARDS",
    "request_policy:multi_shard": "CMD_TIP_REQUEST_MULTI_SHARD",
    "request_policy:special": "CMD_TIP_REQUEST_SPECIAL",
    "response_policy:one_succeeded": "CMD_TIP_RESPONSE_ONE_SUCCEEDED",
    "response_policy:all_succeeded": "CMD_TIP_RESPONSE_ALL_SUCCEEDED",
    "response_policy:agg_logical_and": "CMD_TIP_RESPONSE_AGG_LOGICAL_AND",
    "response_policy:agg_logical_or": "CMD_TIP_RESPONSE_AGG_LOGICAL_OR",
    "response_policy:agg_min": "CMD_TIP_RESPONSE_AGG_MIN",
    "response_policy:agg_max": "CMD_TIP_RESPONSE_AGG_MAX",
    "response_policy:agg_sum": "CMD_TIP_RESPONSE_AGG_SUM",
    "response_policy:special": "CMD_TIP_RESPONSE_SPECIAL",
}

# Facts of the proxy's own about commands (lib/proto/command.h, CMDP_*).
PROXY_FACTS = {
    "eval": ["CMDP_SCRIPT"],
    "evalsha": ["CMDP_SCRIPT", "CMDP_SCRIPT_SHA"],
    "fcall": ["CMDP_SCRIPT"],
    "eval_ro": ["CMDP_SCRIPT_RO"],
    "evalsha_ro": ["CMDP_SCRIPT_RO", "CMDP_SCRIPT_SHA"],
    "fcall_ro": ["CMDP_SCRIPT_RO"],
    "lpop": ["CMDP_NULL_ARRAY_COUNTED"],
    "rpop": ["CMDP_NULL_ARRAY_COUNTED"],
    "lmpop": ["CMDP_NULL_ARRAY", "CMDP_REPLY_KEY_FIRST"],
    "zmpop": ["CMDP_NULL_ARRAY", "CMDP_REPLY_KEY_FIRST"],
    "blpop": ["CMDP_TIMEOUT_LAST", "CMDP_REPLY_KEY_FIRST"],
    "brpop": ["CMDP_TIMEOUT_LAST", "CMDP_REPLY_KEY_FIRST"],
    "bzpopmin": ["CMDP_TIMEOUT_LAST", "CMDP_REPLY_KEY_FIRST"],
    "bzpopmax": ["CMDP_TIMEOUT_LAST", "CMDP_REPLY_KEY_FIRST"],
    "brpoplpush": ["CMDP_TIMEOUT_LAST"],
    "blmove": ["CMDP_TIMEOUT_LAST"],
    "blmpop": ["CMDP_TIMEOUT_FIRST", "CMDP_REPLY_KEY_FIRST"],
    "bzmpop": ["CMDP_TIMEOUT_FIRST", "CMDP_REPLY_KEY_FIRST"],
    "xread": ["CMDP_TIMEOUT_BLOCK", "CMDP_REPLY_KEY_EACH_FIRST"],
    "xreadgroup": ["CMDP_TIMEOUT_BLOCK", "CMDP_REPLY_KEY_EACH_FIRST"],
    "sort": ["CMDP_PATTERN_KEYS"],
    "sort_ro": ["CMDP_PATTERN_KEYS"],
    "ping": ["CMDP_SUBSCRIBED_OK"],
    "subscribe": ["CMDP_SUBSCRIBED_OK"],
    "ssubscribe": ["CMDP_SUBSCRIBED_OK"],
    "psubscribe": ["CMDP_SUBSCRIBED_OK"],
    "unsubscribe": ["CMDP_SUBSCRIBED_OK"],
    "sunsubscribe": ["CMDP_SUBSCRIBED_OK"],
    "punsubscribe": ["CMDP_SUBSCRIBED_OK"],
    "quit": ["CMDP_SUBSCRIBED_OK"],
    "reset": ["CMDP_SUBSCRIBED_OK"],
    "keys": ["CMDP_PATTERN_FIRST"],
    "scan": ["CMDP_PATTERN_MATCH"],
    "wait": ["CMDP_WAITS"],
    # newer than the table: given to the command once the cluster teaches it
    "waitaof": ["CMDP_WAITS"],
}

TIMEOUT_FACTS = ("CMDP_TIMEOUT_LAST", "CMDP_TIMEOUT_FIRST", "CMDP_TIMEOUT_BLOCK")


def pairs(node):
    """A RESP2 map (flat array k1 v1 k2 v2 ...) or a RESP3 map as a dict of
    str -> Node."""
    if node.kind not in "*%":
        raise RespError("expected a map, got %r" % node.raw()[:60])
    kids = node.items()
    if len(kids) % 2:
        raise RespError("odd-length map")
    return {kids[i].text(): kids[i + 1] for i in range(0, len(kids), 2)}


def int_field(d, key):
    node = d[key]
    if node.kind != ":":
        raise RespError("%s: expected an integer" % key)
    return node.value


class Keyspec:
    def __init__(self, node, where):
        d = pairs(node)
        self.flags = []
        for f in d["flags"].items():
            if f.text() not in KSPEC_FLAGS:
                raise RespError("%s: unknown key spec flag %r" % (where, f.text()))
            self.flags.append(KSPEC_FLAGS[f.text()])
        bs = pairs(d["begin_search"])
        fk = pairs(d["find_keys"])
        self.bs_type = bs["type"].text()
        self.fk_type = fk["type"].text()
        bspec = pairs(bs["spec"]) if self.bs_type != "unknown" else {}
        fspec = pairs(fk["spec"]) if self.fk_type != "unknown" else {}
        if self.bs_type == "index":
            self.bs = (int_field(bspec, "index"),)
        elif self.bs_type == "keyword":
            self.bs = (bspec["keyword"].text(), int_field(bspec, "startfrom"))
        elif self.bs_type == "unknown":
            self.bs = ()
        else:
            raise RespError("%s: unknown begin_search type %r" % (where, self.bs_type))
        if self.fk_type == "range":
            self.fk = tuple(int_field(fspec, k) for k in ("lastkey", "keystep", "limit"))
        elif self.fk_type == "keynum":
            self.fk = tuple(int_field(fspec, k) for k in ("keynumidx", "firstkey", "keystep"))
        elif self.fk_type == "unknown":
            self.fk = ()
        else:
            raise RespError("%s: unknown find_keys type %r" % (where, self.fk_type))


class Command:
    def __init__(self, node, categories, parent=None):
        f = node.items()
        if len(f) != 10:
            raise RespError("COMMAND INFO entry with %d fields, expected 10" % len(f))
        self.fullname = f[0].text().lower()
        self.name = self.fullname.split("|")[-1]
        self.parent = parent
        self.info_raw = node.raw()
        self.arity = f[1].value
        self.flags = []
        for x in f[2].items():
            if x.text() not in CMD_FLAGS:
                raise RespError("%s: unknown command flag %r" % (self.fullname, x.text()))
            self.flags.append(CMD_FLAGS[x.text()])
        self.first_key, self.last_key, self.key_step = f[3].value, f[4].value, f[5].value
        self.acl = 0
        for x in f[6].items():
            cat = x.text().lstrip("@")
            if cat not in categories:
                raise RespError("%s: unknown ACL category %r" % (self.fullname, cat))
            self.acl |= 1 << categories.index(cat)
        self.tips = []
        for x in f[7].items():
            if x.text() not in TIPS:
                raise RespError("%s: unknown tip %r" % (self.fullname, x.text()))
            self.tips.append(TIPS[x.text()])
        self.keyspecs = [Keyspec(k, self.fullname) for k in f[8].items()]
        self.facts = PROXY_FACTS.get(self.fullname, [])
        if "CMD_BLOCKING" in self.flags and not any(t in self.facts for t in TIMEOUT_FACTS):
            raise RuntimeError("%s: a blocking command without a timeout fact in PROXY_FACTS"
                               % self.fullname)
        self.subs = sorted((Command(s, categories, self) for s in f[9].items()),
                           key=lambda c: c.name)
        if self.subs:
            # field 10 again, its elements in name order (see sorted_docs)
            self.info_raw = (node.header() + b"".join(x.raw() for x in f[:9])
                             + f[9].header()
                             + b"".join(c.info_raw for c in self.subs))
        self.docs_raw = None
        self.info_raw3 = None
        self.docs_raw3 = None
        self.index = None

    def model(self):
        """What the table says of the command but for its RESP bytes."""
        ks = tuple((tuple(k.flags), k.bs_type, k.bs, k.fk_type, k.fk) for k in self.keyspecs)
        return (self.fullname, self.arity, tuple(self.flags), self.first_key,
                self.last_key, self.key_step, self.acl, tuple(self.tips), ks,
                tuple(s.model() for s in self.subs))

    def all(self):
        yield self
        for s in self.subs:
            yield from s.all()


def sorted_docs(docs, by_name, attr):
    """The bytes of a docs map, with its "subcommands" map in name order.

    redis-server lists a container's subcommands in the order of its
    subcommand dict, whose hash seed changes with every server process; in
    name order the generated file is the same on every run, and each entry
    is still one that redis-server could have sent."""
    kids = docs.items()
    out = [docs.header()]
    for i in range(0, len(kids), 2):
        out.append(kids[i].raw())
        if kids[i].text() != "subcommands":
            out.append(kids[i + 1].raw())
            continue
        subs = kids[i + 1].items()
        names = sorted(range(0, len(subs), 2), key=lambda j: subs[j].text().lower())
        out.append(kids[i + 1].header())
        out += [getattr(by_name[subs[j].text().lower()], attr) for j in names]
    return b"".join(out)


def attach_docs(cmds, docs_node, attr):
    """Give every command and subcommand the bytes of its name + docs map,
    as its attribute attr (docs_raw in RESP2, docs_raw3 in RESP3)."""
    by_name = {c.fullname: c for top in cmds for c in top.all()}

    def walk(flat):
        kids = flat.items()
        for i in range(0, len(kids), 2):
            name = kids[i].text().lower()
            if name not in by_name:
                raise RespError("COMMAND DOCS names unknown command %r" % name)
            c = by_name[name]
            sub = pairs(kids[i + 1]).get("subcommands")
            if sub is not None:
                walk(sub)
            setattr(c, attr, kids[i].raw() + sorted_docs(kids[i + 1], by_name, attr))

    walk(docs_node)
    missing = [n for n, c in by_name.items() if getattr(c, attr) is None]
    if missing:
        raise RespError("no COMMAND DOCS entry for %s" % ", ".join(sorted(missing)))


# --------------------------------------------------------------------------
# C output


def c_ident(fullname):
    return "".join(ch if ch.isalnum() else "_" for ch in fullname)


def c_string(data, indent="    ", width=76):
    """data (bytes) as adjacent C string literals, one line each.

    Non-printable bytes use 3-digit octal escapes, which cannot swallow a
    following digit the way a \\x escape swallows following hex digits; '?'
    is escaped so that no trigraph can form (-std=c11 enables them).
    Lines end after a "\\n" of the RESP once they are 2/3 of width long, or
    at width."""
    lines, cur = [], []
    cur_len = 0
    for b in data:
        if b == 0x5C:
            e = "\\\\"
        elif b == 0x22:
            e = '\\"'
        elif b == 0x3F:
            e = "\\?"
        elif b == 0x0D:
            e = "\\r"
        elif b == 0x0A:
            e = "\\n"
        elif 0x20 <= b < 0x7F:
            e = chr(b)
        else:
            e = "\\%03o" % b
        cur.append(e)
        cur_len += len(e)
        if (b == 0x0A and cur_len >= width * 2 // 3) or cur_len >= width:
            lines.append("".join(cur))
            cur, cur_len = [], 0
    if cur:
        lines.append("".join(cur))
    return "\n".join('%s"%s"' % (indent, ln) for ln in lines)


def c_flags(names):
    return " | ".join(names) if names else "0"


def emit_keyspecs(out, c):
    if not c.keyspecs:
        return
    out.append("static const struct keyspec ks_%s[] = {" % c_ident(c.fullname))
    for k in c.keyspecs:
        if k.bs_type == "index":
            bs = ".bs = KSPEC_BS_INDEX, .bs_u.index = { %d }" % k.bs
        elif k.bs_type == "keyword":
            bs = ".bs = KSPEC_BS_KEYWORD, .bs_u.keyword = { \"%s\", %d }" % k.bs
        else:
            bs = ".bs = KSPEC_BS_UNKNOWN"
        if k.fk_type == "range":
            fk = ".fk = KSPEC_FK_RANGE, .fk_u.range = { %d, %d, %d }" % k.fk
        elif k.fk_type == "keynum":
            fk = ".fk = KSPEC_FK_KEYNUM, .fk_u.keynum = { %d, %d, %d }" % k.fk
        else:
            fk = ".fk = KSPEC_FK_UNKNOWN"
        out.append("    { .flags = %s,\n      %s,\n      %s }," % (c_flags(k.flags), bs, fk))
    out.append("};")
    out.append("")


def emit_entry(c):
    ident = c_ident(c.fullname)
    lines = [
        "    { .name = \"%s\", .fullname = \"%s\"," % (c.name, c.fullname),
        "      .arity = %d, .flags = %s," % (c.arity, c_flags(c.flags)),
        "      .acl_categories = 0x%xULL, .tips = %s," % (c.acl, c_flags(c.tips)),
        "      .first_key = %d, .last_key = %d, .key_step = %d," % (
            c.first_key, c.last_key, c.key_step),
    ]
    if c.facts:
        lines.append("      .proxy_facts = %s," % c_flags(c.facts))
    if c.keyspecs:
        lines.append("      .keyspecs = ks_%s, .nkeyspecs = %d," % (ident, len(c.keyspecs)))
    if c.subs:
        lines.append("      .subcommands = sub_%s, .nsubcommands = %d," % (ident, len(c.subs)))
    if c.parent is not None:
        lines.append("      .parent = &command_table[%d]," % c.parent.index)
    lines.append("      .info_resp = info_%s, .info_resp_len = sizeof(info_%s) - 1," % (ident, ident))
    lines.append("      .docs_resp = docs_%s, .docs_resp_len = sizeof(docs_%s) - 1," % (ident, ident))
    lines.append("      .info_resp3 = info3_%s, .info_resp3_len = sizeof(info3_%s) - 1," % (ident, ident))
    lines.append("      .docs_resp3 = docs3_%s, .docs_resp3_len = sizeof(docs3_%s) - 1 }," % (ident, ident))
    return "\n".join(lines)


def generate(version, categories, cmds):
    idents = {}
    for top in cmds:
        for c in top.all():
            ident = c_ident(c.fullname)
            if ident in idents:
                raise RuntimeError("C identifier clash: %s / %s" % (idents[ident], c.fullname))
            idents[ident] = c.fullname
    out = [
        "/* generated by scripts/gen-commands.py from redis-server %s; do not edit */" % version,
        "",
        "#include \"lib/proto/command.h\"",
        "",
        "const char *const command_acl_category_names[] = {",
    ]
    out += ["    \"%s\"," % cat for cat in categories]
    out += ["};", "const int command_acl_category_count = %d;" % len(categories), ""]
    for top in cmds:
        for c in top.all():
            ident = c_ident(c.fullname)
            out.append("static const char info_%s[] =" % ident)
            out.append(c_string(c.info_raw) + ";")
            out.append("static const char docs_%s[] =" % ident)
            out.append(c_string(c.docs_raw) + ";")
            out.append("static const char info3_%s[] =" % ident)
            out.append(c_string(c.info_raw3) + ";")
            out.append("static const char docs3_%s[] =" % ident)
            out.append(c_string(c.docs_raw3) + ";")
            emit_keyspecs(out, c)
    for top in cmds:
        if top.subs:
            out.append("static const struct command sub_%s[] = {" % c_ident(top.fullname))
            out += [emit_entry(s) for s in top.subs]
            out += ["};", ""]
    out.append("const struct command command_table[] = {")
    out += [emit_entry(c) for c in cmds]
    out += ["};", "const int command_table_size = %d;" % len(cmds), ""]
    # the same facts by name, for the commands the cluster teaches (cmdinfo.c)
    out.append("const struct command_facts command_facts_named[] = {")
    out += ["    { \"%s\", %s }," % (name, c_flags(PROXY_FACTS[name]))
            for name in sorted(PROXY_FACTS)]
    out += ["};", "const int command_facts_named_count = %d;" % len(PROXY_FACTS), ""]
    return "\n".join(out)


def collect(conn, conn3):
    version = None
    for line in conn.call("INFO", "server").text().splitlines():
        if line.startswith("redis_version:"):
            version = line.split(":", 1)[1].strip()
    if not version:
        raise RespError("INFO server has no redis_version")
    categories = [n.text() for n in conn.call("ACL", "CAT").items()]
    info = conn.call("COMMAND", "INFO")
    cmds = sorted((Command(n, categories) for n in info.items()), key=lambda c: c.name)
    for i, c in enumerate(cmds):
        c.index = i
    names = [c.name for c in cmds]
    if len(set(names)) != len(names):
        raise RespError("duplicate command names in COMMAND INFO")
    count = conn.call("COMMAND", "COUNT").value
    if count != len(cmds):
        raise RespError("COMMAND COUNT %d but COMMAND INFO gave %d" % (count, len(cmds)))
    attach_docs(cmds, conn.call("COMMAND", "DOCS"), "docs_raw")
    # the same commands in RESP3: each one's bytes, the same model
    info3 = conn3.call("COMMAND", "INFO")
    cmds3 = sorted((Command(n, categories) for n in info3.items()), key=lambda c: c.name)
    if [c.model() for c in cmds3] != [c.model() for c in cmds]:
        diff = [c.fullname for c, c3 in zip(cmds, cmds3) if c.model() != c3.model()]
        raise RespError("COMMAND INFO in RESP3 describes other commands than in RESP2: %s"
                        % (", ".join(diff) or "another number of commands"))
    for top, top3 in zip(cmds, cmds3):
        for c, c3 in zip(top.all(), top3.all()):
            c.info_raw3 = c3.info_raw
    attach_docs(cmds, conn3.call("COMMAND", "DOCS"), "docs_raw3")
    return version, categories, cmds


def on_sigterm(signum, frame):
    raise SystemExit("gen-commands: terminated by signal %d" % signum)


def main():
    signal.signal(signal.SIGTERM, on_sigterm)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("-o", "--output",
                    default=os.path.join(here, "..", "lib", "proto", "command_table.c"))
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, help="use this running server instead of starting one")
    ap.add_argument("--redis-server", default="redis-server")
    args = ap.parse_args()

    server = None
    try:
        if args.port is None:
            server = Server(args.redis_server)
            server.start()
            host, port = "127.0.0.1", server.port
        else:
            host, port = args.host, args.port
        conn = Conn(host, port)
        conn3 = Conn(host, port, resp3=True)
        version, categories, cmds = collect(conn, conn3)
        conn.close()
        conn3.close()
    finally:
        if server is not None:
            server.stop()

    text = generate(version, categories, cmds)
    tmp = args.output + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, args.output)
    nsub = sum(len(c.subs) for c in cmds)
    print("%s: %d commands, %d subcommands, from redis-server %s"
          % (os.path.normpath(args.output), len(cmds), nsub, version))


if __name__ == "__main__":
    try:
        main()
    except (RespError, RuntimeError, OSError) as e:
        sys.exit("gen-commands: %s" % e)
