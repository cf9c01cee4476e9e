#!/usr/bin/env python3
"""check-deploy.py BINARY [SEED]: what `make test` can check of the deployment files
without a container engine (scripts/test.sh runs it).

1. scripts/build-release.sh, the Dockerfile's build stage, runs on the host
   into a temporary folder: the installed binary accepts the image's config
   (docker/tagproxy.conf) once a seed is given and refuses it, saying why,
   without one; every runtime package it lists is a real installed package.
2. docker/Dockerfile: bookworm build stage running that script, bookworm-slim
   runtime, a non-root USER, EXPOSE = the config's listen and admin ports,
   the HEALTHCHECK probe and the ENTRYPOINT's config are files the script
   installs; the probe (scripts/healthcheck.sh) is run against a local HTTP
   server answering 200, then 503, then against a closed port.
3. docker/compose.yaml: 6 cluster nodes, a one-shot cluster-create naming
   them all, the proxy's TAGPROXY_* variables accepted by the binary
   (tagproxy -t), address-map mapping each node's fixed address to its
   service name, the published ports the config's, a stop grace period
   above shutdown-timeout-ms.
4. docker/k8s/sidecar.yaml and its kustomization: the proxy is a native
   sidecar (an init container, restartPolicy Always) with the ConfigMap as
   a folder beside the image's layouts; its config loads with a shipped
   rules file (tagproxy -t, the paths mapped to a temporary folder); the
   bot's REDIS_URL is the config's loopback listen address; startup and
   readiness probe /readyz, liveness /healthz, on the admin port (not
   9121); the Secret holds the key the env refers to; the memory limits
   follow the sizing rule the ConfigMap writes; the restricted Pod
   Security level (seccomp RuntimeDefault, non-root as the image's user,
   read-only root, no capabilities); the grace period outlasts the drain.
5. With SEED (host:port of a cluster node): the release binary runs the
   image's config (TAGPROXY_CLUSTER=SEED, its ports moved to free ones) and
   the HEALTHCHECK probe passes against it; after SIGTERM it exits 0 and
   the probe fails.
6. With SEED too: docker/monitoring's alerting rules pass `promtool check
   rules` and their unit tests (`promtool test rules`), the Grafana
   dashboard parses, and every metric either uses is one the release
   binary's /metrics exports.
Prints one line per check; exits 1 if any failed.
"""
import http.server
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
failed = 0


def check(ok, what):
    global failed
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failed += 1
    return ok


def conf_directives(text):
    """{name: [args]} of a tagproxy config text (last line of a name wins)."""
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            words = shlex.split(line)
            out[words[0].lower()] = words[1:]
    return out


def port_of(hostport):
    return int(hostport.rsplit(":", 1)[1])


def run_t(binary, args, env=None):
    """tagproxy -t ARGS: (exit status, output)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("TAGPROXY_")}
    base.update(env or {})
    p = subprocess.run([binary, "-t"] + args, env=base, capture_output=True, text=True)
    return p.returncode, (p.stdout + p.stderr).strip()


def env_as_args(env):
    """TAGPROXY_NAME=value ... as --name word ... (so that an unknown name,
    which the environment would ignore, is an error)."""
    args = []
    for k, v in env.items():
        if k.startswith("TAGPROXY_"):
            args += ["--" + k[len("TAGPROXY_"):].lower().replace("_", "-")] + shlex.split(v)
    return args


# ---- 1. the release build ----

def check_release(dest):
    p = subprocess.run([os.path.join(ROOT, "scripts/build-release.sh"), dest],
                       capture_output=True, text=True)
    if not check(p.returncode == 0, "scripts/build-release.sh builds and installs"):
        print(p.stdout + p.stderr)
        return None
    binary = os.path.join(dest, "usr/local/bin/tagproxy")
    conf = os.path.join(dest, "etc/tagproxy/tagproxy.conf")
    check(os.access(binary, os.X_OK), "the release binary is installed")
    rc, out = run_t(binary, [conf], {"TAGPROXY_CLUSTER": "redis-0:6379"})
    check(rc == 0, "the image's config loads with TAGPROXY_CLUSTER set (%s)" % out)
    rc, out = run_t(binary, [conf])
    check(rc == 1 and "no cluster seed" in out,
          "without a seed the image's config is refused with the reason (%s)" % out)
    pkgs = open(os.path.join(dest, "runtime-packages")).read().split()
    check(len(pkgs) >= 3 and any(p.startswith("libevent") for p in pkgs)
          and "libhiredis0.14" in pkgs, "runtime-packages lists the libraries: %s" % " ".join(pkgs))
    for pkg in pkgs:
        q = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg], capture_output=True, text=True)
        check(q.stdout.endswith("installed"), "runtime package %s exists (installed here)" % pkg)
    return binary


# ---- 2. Dockerfile ----

def dockerfile_instructions(path):
    text = open(path).read().replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def check_dockerfile(dest, image_conf):
    ins = dockerfile_instructions(os.path.join(ROOT, "docker/Dockerfile"))
    froms = [rest for word, rest in ins if word == "FROM"]
    check(len(froms) == 2 and re.fullmatch(r"debian:bookworm\s+AS\s+build", froms[0], re.I)
          and froms[1] == "debian:bookworm-slim", "Dockerfile: bookworm build, bookworm-slim runtime")
    stage = -1
    runs = {0: [], 1: []}
    for word, rest in ins:
        if word == "FROM":
            stage = min(stage + 1, 1)
        if word == "RUN":
            runs[stage].append(rest)
    check(any("scripts/build-release.sh --install-deps" in r for r in runs[0]) and
          any(re.search(r"scripts/build-release\.sh /out\b", r) for r in runs[0]),
          "Dockerfile: the build stage runs scripts/build-release.sh")
    check(any("runtime-packages" in r for r in runs[1]),
          "Dockerfile: the runtime installs the packages the build listed")
    users = [rest for word, rest in ins if word == "USER"]
    check(users and users[-1].split(":")[0] not in ("root", "0"), "Dockerfile: a non-root USER")
    d = conf_directives(image_conf)
    tls = conf_directives(image_conf.replace("\n# tls-listen ", "\ntls-listen "))["tls-listen"]
    want = {port_of(d["listen"][0]), port_of(d["admin-listen"][0]), port_of(tls[0])}
    exposed = {int(p.split("/")[0]) for word, rest in ins if word == "EXPOSE" for p in rest.split()}
    check(exposed == want, "Dockerfile: EXPOSE %s = the config's listen, admin and tls-listen "
          "(commented out) ports %s" % (sorted(exposed), sorted(want)))
    hc = [rest for word, rest in ins if word == "HEALTHCHECK"]
    probe = re.search(r'CMD\s+\["([^"]+)"', hc[0]) if hc else None
    check(probe and os.access(os.path.join(dest, probe.group(1).lstrip("/")), os.X_OK),
          "Dockerfile: the HEALTHCHECK runs a probe the build installs")
    ep = [rest for word, rest in ins if word == "ENTRYPOINT"]
    epv = yaml.safe_load(ep[0]) if ep else []
    check(len(epv) == 2 and epv[1] == "/etc/tagproxy/tagproxy.conf" and
          all(os.path.exists(os.path.join(dest, x.lstrip("/"))) for x in epv),
          "Dockerfile: ENTRYPOINT %s: the binary and config the build installs" % epv)
    for word, rest in ins:
        m = re.match(r"--from=build\s+(\S+)", rest) if word == "COPY" else None
        if m:
            src = m.group(1)
            check(src.startswith("/out/") and os.path.exists(os.path.join(dest, src[5:])),
                  "Dockerfile: COPY --from=build %s exists in the build's output" % src)
    return int(users[-1].split(":")[0]) if users and users[-1].split(":")[0].isdigit() else None


class Health(http.server.BaseHTTPRequestHandler):
    status = 200

    def do_GET(self):
        self.send_response(Health.status if self.path == "/healthz" else 404)
        self.end_headers()

    def log_message(self, *args):
        pass


def check_probe():
    server = http.server.HTTPServer(("127.0.0.1", 0), Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    probe = os.path.join(ROOT, "scripts/healthcheck.sh")
    addr = "127.0.0.1:%d" % server.server_port
    env = {k: v for k, v in os.environ.items() if not k.startswith("TAGPROXY_")}

    def status(args, extra=None):
        return subprocess.run([probe] + args, env=dict(env, **(extra or {})), timeout=10).returncode

    check(status([addr]) == 0, "healthcheck: 0 when /healthz answers 200")
    check(status([], {"TAGPROXY_ADMIN_LISTEN": "0.0.0.0:%d" % server.server_port}) == 0,
          "healthcheck: follows TAGPROXY_ADMIN_LISTEN")
    Health.status = 503
    check(status([addr]) == 1, "healthcheck: 1 when /healthz answers 503")
    server.shutdown()
    server.server_close()
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    closed = s.getsockname()[1]
    s.close()
    check(status(["127.0.0.1:%d" % closed]) == 1, "healthcheck: 1 when nothing listens")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def check_release_runs(dest, seed, tmp):
    binary = os.path.join(dest, "usr/local/bin/tagproxy")
    conf = os.path.join(dest, "etc/tagproxy/tagproxy.conf")
    probe = os.path.join(dest, "usr/local/bin/tagproxy-healthcheck")
    admin = "127.0.0.1:%d" % free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TAGPROXY_")}
    env.update(TAGPROXY_CLUSTER=seed, TAGPROXY_LISTEN="127.0.0.1:%d" % free_port(),
               TAGPROXY_ADMIN_LISTEN=admin)
    log = open(os.path.join(tmp, "release-proxy.log"), "w")
    exposition = ""
    p = subprocess.Popen([binary, conf], env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        ok = False
        for _ in range(100):
            if subprocess.run([probe], env=env).returncode == 0:
                ok = True
                break
            if p.poll() is not None:
                break
            time.sleep(0.1)
        check(ok, "the release binary serves the image's config; HEALTHCHECK passes")
        exposition = http_get("http://%s/metrics" % admin) if ok else ""
        p.terminate()
        check(p.wait(timeout=10) == 0, "the release binary exits 0 on SIGTERM")
        check(subprocess.run([probe], env=env).returncode == 1, "HEALTHCHECK fails once it stopped")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        log.close()
    if failed:
        print(open(os.path.join(tmp, "release-proxy.log")).read()[-2000:])
    return exposition


def http_get(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.read().decode()
    except OSError:
        return ""


# ---- 6. monitoring: alerting rules and the dashboard ----

def metric_names(exposition):
    """The families of /metrics, with a histogram's series names."""
    names = set()
    for line in exposition.splitlines():
        m = re.match(r"# TYPE (\S+) (\S+)", line)
        if m:
            names.add(m.group(1))
            if m.group(2) == "histogram":
                names.update(m.group(1) + s for s in ("_bucket", "_sum", "_count"))
    return names


def used_names(expr):
    return set(re.findall(r"\b((?:tagproxy|process)_[a-z0-9_]+)\b", expr))


def check_monitoring(exposition):
    mon = os.path.join(ROOT, "docker/monitoring")
    rules = os.path.join(mon, "tagproxy-alerts.yaml")
    for args, what in ((["check", "rules", rules], "promtool check rules"),
                       (["test", "rules", os.path.join(mon, "tagproxy-alerts.test.yaml")],
                        "promtool test rules (the alerts' unit tests)")):
        try:
            p = subprocess.run(["promtool"] + args, capture_output=True, text=True, cwd=mon)
            out = (p.stdout + p.stderr).strip()
            check(p.returncode == 0, "monitoring: %s" % what)
            if p.returncode:
                print(out)
        except FileNotFoundError:
            check(False, "monitoring: promtool is installed (make deps: the prometheus package)")
    exprs = {}
    for g in yaml.safe_load(open(rules))["groups"]:
        for r in g["rules"]:
            exprs["alert " + r["alert"]] = r["expr"]
    dash = json.load(open(os.path.join(mon, "tagproxy-dashboard.json")))
    check(dash.get("panels") and all(p.get("targets") for p in dash["panels"]),
          "monitoring: the dashboard parses and every panel has a query")
    for p in dash.get("panels", []):
        for t in p.get("targets", []):
            exprs["panel %s/%s" % (p["title"], t["refId"])] = t["expr"]
    exprs["instance variable"] = dash["templating"]["list"][1]["query"]
    names = metric_names(exposition)
    if not check(len(names) > 20, "monitoring: /metrics of the release binary read (%d families)"
                 % len(names)):
        return
    unknown = {w: sorted(used_names(e) - names) for w, e in exprs.items() if used_names(e) - names}
    check(not unknown, "monitoring: every metric the alerts and the dashboard use is one the "
          "proxy exports%s" % (": %s" % unknown if unknown else ""))


# ---- 3. compose ----

def check_compose(binary, image_conf):
    c = yaml.safe_load(open(os.path.join(ROOT, "docker/compose.yaml")))
    svcs = c["services"]
    nodes = {n: s for n, s in svcs.items() if "cluster-enabled" in " ".join(map(str, s.get("command", [])))}
    check(len(nodes) == 6, "compose: 6 cluster nodes (%s)" % " ".join(sorted(nodes)))
    addr = {}
    for n, s in nodes.items():
        nets = s.get("networks", {})
        ips = [v.get("ipv4_address") for v in nets.values() if isinstance(v, dict)]
        if check(len(ips) == 1 and ips[0], "compose: %s has a fixed address" % n):
            addr[ips[0] + ":6379"] = n
    create = svcs.get("cluster-create", {})
    cmd = " ".join(map(str, create.get("command", [])))
    check("--cluster create" in cmd and all(a in cmd for a in addr) and "--cluster-replicas 1" in cmd,
          "compose: cluster-create makes the cluster of all 6 nodes with replicas")
    check(create.get("restart") == "no" and set(create.get("depends_on", {})) == set(nodes),
          "compose: cluster-create runs once, after the nodes")
    tp = svcs.get("tagproxy", {})
    check(tp.get("build", {}).get("dockerfile") == "docker/Dockerfile", "compose: the proxy is docker/Dockerfile's image")
    check(tp.get("depends_on", {}).get("cluster-create", {}).get("condition") ==
          "service_completed_successfully", "compose: the proxy starts once the cluster exists")
    env = {k: str(v) for k, v in tp.get("environment", {}).items()}
    rc, out = run_t(binary, env_as_args(env))
    check(rc == 0, "compose: the proxy's TAGPROXY_* are directives it accepts (%s)" % out)
    words = env.get("TAGPROXY_ADDRESS_MAP", "").split()
    pairs = dict(zip(words[0::2], words[1::2]))
    check(pairs and all(addr.get(f) == t.split(":")[0] and t.endswith(":6379") for f, t in pairs.items())
          and set(pairs) == set(addr), "compose: address-map maps each node's address to its service name")
    seeds = env.get("TAGPROXY_CLUSTER", "").split()
    check(seeds and all(s.split(":")[0] in nodes for s in seeds), "compose: the seeds are node services")
    d = conf_directives(image_conf)
    published = {int(str(p).rsplit(":", 1)[1]) for p in tp.get("ports", [])}
    want = {port_of(d["listen"][0]), port_of(d["admin-listen"][0])}
    check(published == want, "compose: publishes the config's ports %s" % sorted(want))
    grace = re.fullmatch(r"(\d+)s", str(tp.get("stop_grace_period", "")))
    timeout_s = int(d.get("shutdown-timeout-ms", ["5000"])[0]) / 1000
    check(grace and int(grace.group(1)) > timeout_s, "compose: stop_grace_period above shutdown-timeout-ms")


# ---- 4. Kubernetes sidecar ----

MEMORY_UNITS = {"Ki": 1024, "Mi": 1024 ** 2, "Gi": 1024 ** 3, "k": 1000, "M": 1000 ** 2,
                "G": 1000 ** 3, "": 1}


def k8s_bytes(q):
    m = re.fullmatch(r"(\d+)(Ki|Mi|Gi|k|M|G|)", str(q))
    return int(m.group(1)) * MEMORY_UNITS[m.group(2)] if m else None


def conf_bytes(v):
    """A tagproxy memory size (1gb, 64mb, 1000) in bytes."""
    m = re.fullmatch(r"(\d+)(gb|mb|kb|g|m|k|b|)", v.lower())
    units = {"gb": 1024 ** 3, "mb": 1024 ** 2, "kb": 1024, "g": 1000 ** 3, "m": 1000 ** 2,
             "k": 1000, "b": 1, "": 1}
    return int(m.group(1)) * units[m.group(2)] if m else None


def check_k8s_memory(d, limit):
    """The sizing rule written in the ConfigMap, against the container's limit."""
    size = {k: conf_bytes(d[k][0]) for k in ("maxmemory-clients", "script-cache-max-bytes",
                                             "client-query-buffer-limit", "proto-max-bulk-len")
            if k in d}
    out = conf_bytes(d.get("client-output-buffer-limit", ["0"])[0])
    pubsub = conf_bytes(d.get("client-output-buffer-limit-pubsub", ["0"])[0])
    mem = size.get("maxmemory-clients") or 0
    check(limit and mem and mem + size.get("script-cache-max-bytes", 0) + 64 * 1024 ** 2 <= limit,
          "k8s: maxmemory-clients + script-cache-max-bytes + 64mb <= the memory limit %s" % limit)
    half = mem // 2
    check(0 < size.get("client-query-buffer-limit", 0) <= half and 0 < out <= half and
          0 < pubsub <= half, "k8s: the query and output limits are at most half of "
          "maxmemory-clients")
    check(0 < size.get("proto-max-bulk-len", 0) <= size.get("client-query-buffer-limit", 0),
          "k8s: proto-max-bulk-len <= client-query-buffer-limit")


def check_k8s_security(spec, tp, image_uid):
    """The restricted Pod Security level, and the image's user."""
    pod = spec.get("securityContext", {})
    sc = tp.get("securityContext", {})
    seccomp = (sc.get("seccompProfile") or pod.get("seccompProfile") or {}).get("type")
    check(seccomp == "RuntimeDefault", "k8s: seccompProfile RuntimeDefault")
    check(pod.get("runAsNonRoot") is True and sc.get("runAsUser") == image_uid,
          "k8s: non-root, as the image's user %s" % image_uid)
    check(sc.get("readOnlyRootFilesystem") is True and sc.get("allowPrivilegeEscalation") is False
          and sc.get("capabilities", {}).get("drop") == ["ALL"] and not
          sc.get("capabilities", {}).get("add"),
          "k8s: read-only root filesystem, no privilege escalation, no capabilities")
    for c in spec.get("containers", []):
        csc = c.get("securityContext", {})
        check(csc.get("allowPrivilegeEscalation") is False and
              csc.get("capabilities", {}).get("drop") == ["ALL"],
              "k8s: container %s drops every capability, no privilege escalation" % c["name"])


def check_k8s(binary, image_uid, tmp):
    docs = [d for d in yaml.safe_load_all(open(os.path.join(ROOT, "docker/k8s/sidecar.yaml"))) if d]
    kinds = {d["kind"]: d for d in docs}
    if not check(set(kinds) >= {"Secret", "ConfigMap", "Deployment"}, "k8s: Secret, ConfigMap, Deployment"):
        return
    kust = yaml.safe_load(open(os.path.join(ROOT, "docker/k8s/kustomization.yaml")))
    check(kust.get("kind") == "Kustomization" and kust.get("resources") == ["sidecar.yaml"],
          "k8s: kustomization.yaml renders sidecar.yaml")
    cm, secret, dep = kinds["ConfigMap"], kinds["Secret"], kinds["Deployment"]
    spec = dep["spec"]["template"]["spec"]
    sidecars = {c["name"]: c for c in spec.get("initContainers", [])}
    containers = {c["name"]: c for c in spec["containers"]}
    tp = sidecars.get("tagproxy", {})
    check(tp.get("restartPolicy") == "Always" and "tagproxy" not in containers,
          "k8s: the proxy is a native sidecar (an init container with restartPolicy Always)")
    mounts = {m["name"]: m["mountPath"] for m in tp.get("volumeMounts", [])}
    vols = {v["name"]: v for v in spec.get("volumes", [])}
    mount = [p for n, p in mounts.items() if vols.get(n, {}).get("configMap", {}).get("name") ==
             cm["metadata"]["name"]]
    check(mount == ["/etc/tagproxy/conf.d"], "k8s: the ConfigMap is mounted at /etc/tagproxy/conf.d, "
          "beside the image's layouts (%s)" % mount)
    check(tp.get("args", [None])[0] == "/etc/tagproxy/conf.d/tagproxy.conf" and
          "tagproxy.conf" in cm["data"], "k8s: the proxy runs the ConfigMap's tagproxy.conf")
    conf = cm["data"]["tagproxy.conf"]
    d = conf_directives(conf)
    mapped = os.path.join(tmp, "k8s-etc")
    os.makedirs(os.path.join(mapped, "conf.d"))
    shutil.copytree(os.path.join(ROOT, "conf/layouts"), os.path.join(mapped, "layouts"))
    for name, text in cm["data"].items():
        with open(os.path.join(mapped, "conf.d", name), "w") as f:
            f.write(text.replace("/etc/tagproxy/", mapped + "/"))
    env = {}
    for e in tp.get("env", []):
        env[e["name"]] = e.get("value", "from-a-secret")
    rc, out = run_t(binary, [os.path.join(mapped, "conf.d/tagproxy.conf")] + env_as_args(env))
    check(rc == 0, "k8s: the ConfigMap's config loads with the image's rules and the container's "
          "env (%s)" % out)
    rules = d.get("layout-rules", [""])[0]
    check(rules.startswith("/etc/tagproxy/layouts/") and
          os.path.exists(os.path.join(ROOT, "conf/layouts", os.path.basename(rules))),
          "k8s: layout-rules is a rules file the image ships (%s)" % rules)
    check(d.get("config-watch", ["yes"])[0] == "yes", "k8s: the config reloads when the ConfigMap changes")
    listen = d["listen"][0]
    admin = port_of(d["admin-listen"][0])
    check(admin != 9121, "k8s: the admin port is not redis_exporter's 9121")
    check(listen.startswith("127.0.0.1:"), "k8s: the sidecar listens on loopback only")
    bot_env = {e["name"]: e.get("value") for c in containers.values() for e in c.get("env", [])}
    check(bot_env.get("REDIS_URL") == "redis://" + listen, "k8s: the bot's REDIS_URL is redis://%s" % listen)
    probes = {k: tp.get(k, {}).get("httpGet", {}) for k in ("startupProbe", "livenessProbe",
                                                             "readinessProbe")}
    check(probes["startupProbe"].get("path") == "/readyz" and probes["startupProbe"].get("port") == admin,
          "k8s: startup GET /readyz on the admin port (the bot starts once the proxy is ready)")
    check(probes["livenessProbe"].get("path") == "/healthz" and probes["livenessProbe"].get("port") == admin,
          "k8s: liveness GET /healthz on the admin port")
    check(probes["readinessProbe"].get("path") == "/readyz" and probes["readinessProbe"].get("port") == admin,
          "k8s: readiness GET /readyz on the admin port")
    ports = {p["containerPort"] for p in tp.get("ports", [])}
    check(ports == {port_of(listen), admin}, "k8s: containerPorts are the listen and admin ports")
    ann = dep["spec"]["template"]["metadata"].get("annotations", {})
    check(ann.get("prometheus.io/port") == str(admin), "k8s: the scrape annotation names the admin port")
    pw = [e for e in tp.get("env", []) if e["name"] == "TAGPROXY_CLUSTER_PASSWORD"]
    ref = pw[0].get("valueFrom", {}).get("secretKeyRef", {}) if pw else {}
    check(ref.get("name") == secret["metadata"]["name"] and ref.get("key") in secret.get("stringData", {}),
          "k8s: TAGPROXY_CLUSTER_PASSWORD comes from the Secret's key")
    res = tp.get("resources", {})
    check("cpu" in res.get("requests", {}) and "memory" in res.get("requests", {}),
          "k8s: the sidecar requests cpu and memory")
    check_k8s_memory(d, k8s_bytes(res.get("limits", {}).get("memory", "")))
    check(not tp.get("lifecycle", {}).get("preStop"),
          "k8s: no preStop wait (a native sidecar stops after the bot)")
    grace = spec.get("terminationGracePeriodSeconds", 30)
    timeout_s = int(d.get("shutdown-timeout-ms", ["5000"])[0]) / 1000
    check(grace > timeout_s, "k8s: terminationGracePeriodSeconds %s > shutdown-timeout-ms" % grace)
    check_k8s_security(spec, tp, image_uid)


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build/tagproxy")
    binary = os.path.abspath(binary)
    tmp = tempfile.mkdtemp(prefix="tagproxy-deploy.")
    try:
        image_conf = open(os.path.join(ROOT, "docker/tagproxy.conf")).read()
        dest = os.path.join(tmp, "rel")
        if check_release(dest):
            if len(sys.argv) > 2:
                check_monitoring(check_release_runs(dest, sys.argv[2], tmp))
            uid = check_dockerfile(dest, image_conf)
            check_probe()
            check_compose(binary, image_conf)
            check_k8s(binary, uid, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("check-deploy: %d failed" % failed)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
