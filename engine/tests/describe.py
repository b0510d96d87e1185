"""The shape of `cnfperf-engine --describe` (engine/README.md, --describe):
every key with its type, and the same version, apis and NF kinds as --version.
Run by `meson test` against both engines: python3 describe.py ENGINE."""
import json
import subprocess
import sys

BOOLS = {
    "roles": ("generates", "end", "rx", "tx", "latency", "two_ports", "forwards", "path",
              "threads", "peer_stamps", "queues"),
    "apis": ("l2", "needs_iface", "queues"),
    "nfs": ("next_hop", "routed"),
    "polls": ("spins", "sleeps", "paced", "interrupts"),
}
TYPES = {"flag", "word", "integer", "seconds", "rate", "name", "mac", "ipv4", "bucket", "route", "cpus"}
RANGED = {"integer", "seconds", "rate", "cpus"}


def check(ok, what):
    if not ok:
        sys.exit(f"describe: {what}")


def main(engine):
    out = subprocess.run([engine, "--describe"], capture_output=True, text=True, check=True)
    check(out.stdout.count("\n") == 1 and not out.stderr, "one line on stdout, nothing on stderr")
    d = json.loads(out.stdout)
    version = json.loads(subprocess.run([engine, "--version"], capture_output=True, text=True,
                                        check=True).stdout)
    check(list(d) == ["version", "roles", "apis", "known_apis", "nfs", "polls", "options"],
          f"its keys, in order: {list(d)}")
    check(d["version"] == version["version"], "the version --version says")
    check([a["name"] for a in d["apis"]] == version["apis"], "the apis --version says")
    check([k["name"] for k in d["nfs"]] == version["nfs"], "the NF kinds --version says")
    check(set(version["apis"]) <= set(d["known_apis"]), "every api built in is known")
    for key, flags in BOOLS.items():
        check(d[key] and all(isinstance(row["name"], str) for row in d[key]), f"{key}: named")
        for row in d[key]:
            check(all(isinstance(row[f], bool) for f in flags), f"{key} {row['name']}: {flags}")
    check(all(k["ports"] in (1, 2) for k in d["nfs"]), "each NF kind takes 1 or 2 ports")
    for api in d["apis"]:
        for o in api["options"]:
            check(o["type"] in ("flag", "value") and (o["value"] is None) == (o["type"] == "flag")
                  and isinstance(o["egress"], bool) and o["help"], f"--{o['name']} of {api['name']}")
    names = [o["name"] for o in d["options"]]
    check(len(set(names)) == len(names) and "describe" in names, "each option once")
    polls = [m["name"] for m in d["polls"]]
    for o in d["options"]:
        t, name = o["type"], o["name"]
        check(t in TYPES, f"--{name}: type {t}")
        check(("words" in o) == (t == "word"), f"--{name}: words for a word")
        check(("min" in o and "max" in o) == (t in RANGED), f"--{name}: a range for a number")
        if t in RANGED:
            check(o["min"] <= o["max"], f"--{name}: min <= max")
            check(o["default"] is None or o["min"] <= o["default"] <= o["max"],
                  f"--{name}: its default in its range")
        check(("parts" in o) == (t == "bucket"), f"--{name}: parts for a bucket")
        if t == "bucket":
            check(len(o["parts"]) == o["value"].count(",") + 1, f"--{name}: a part per {o['value']}")
            for part in o["parts"]:
                check(part["type"] in RANGED and part["min"] < part["max"] and
                      isinstance(part["above_min"], bool), f"--{name}: {part['name']}")
        if t == "word":
            check(o["default"] in o["words"], f"--{name}: its default is one of its words")
        if t == "flag" and not o["ends"]:
            check(o["default"] is False, f"--{name}: a flag is off unless given")
        check(isinstance(o["help"], str) and o["help"], f"--{name}: help")
    poll = next(o for o in d["options"] if o["name"] == "poll")
    check(poll["words"] == polls, "--poll takes the poll modes")
    nf = next(o for o in d["options"] if o["name"] == "nf")
    check(nf["words"] == [k["name"] for k in d["nfs"]], "--nf takes the NF kinds")


if __name__ == "__main__":
    main(sys.argv[1])
