"""The inventory of hosts: a good file loads into its model; every bad one is
refused with one line naming the file, the entry and what is wrong."""
from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from cnfperf import UserError
from cnfperf.remote import inventory
from cnfperf.remote.inventory import End, Host, Wire, load
from harness import REPO

AGENT = {"SSH_AUTH_SOCK": "/run/user/0/agent.sock"}


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A home with a private key (0600) and a known_hosts file, for ~ paths."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    key = home / ".ssh" / "id_ed25519"
    key.write_text("not a real key: nothing here reads it\n")
    key.chmod(0o600)
    (home / ".ssh" / "known_hosts").write_text("")
    monkeypatch.setenv("HOME", str(home))
    return home


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "hosts.toml"
    path.write_text(text)
    return path


def refused(tmp_path: Path, text: str, environ=AGENT) -> str:
    with pytest.raises(UserError) as e:
        load(write(tmp_path, text), environ)
    message = str(e.value)
    assert "\n" not in message
    assert e.value.field == str(tmp_path / "hosts.toml")
    return e.value.why


HOST = '[[host]]\nname = "dut"\naddress = "192.0.2.10"\nkey = "~/.ssh/id_ed25519"\n'


def with_host(**keys) -> str:
    """One host `dut` (a key, the default known_hosts) with keys added or replaced."""
    fields = {"name": '"dut"', "address": '"192.0.2.10"', "key": '"~/.ssh/id_ed25519"'}
    fields.update(keys)
    return "[[host]]\n" + "".join(f"{k} = {v}\n" for k, v in fields.items() if v is not None)


def wires(*ends: tuple[str, str]) -> str:
    return "".join(f'[[wire]]\na = "{a}"\nb = "{b}"\n' for a, b in ends)


# -- a good file ---------------------------------------------------------------


def test_the_example_loads(home, tmp_path):
    inv = load(write(tmp_path, inventory.EXAMPLE), {})
    dut = inv.host("dut")
    assert dut == Host("dut", "192.0.2.10", 22, "root", home / ".ssh" / "id_ed25519", False,
                       home / ".ssh" / "known_hosts", False, Path("/opt/cnfperf"))
    assert inv.wires == (Wire(End("local", "enp3s0f0"), End("dut", "enp3s0f0")),)
    assert inv.names == ("local", "dut")


def test_a_full_file_round_trips(home, tmp_path):
    (tmp_path / "keys").mkdir()
    key = tmp_path / "keys" / "gen"
    key.write_text("")
    key.chmod(0o600)
    text = (HOST + 'port = 2222\nuser = "bench"\ncnfperf = "/srv/cnfperf"\n'
            '[[host]]\nname = "gen-2"\naddress = "gen2.lab.example"\nkey = "keys/gen"\n'
            'known_hosts = "keys/known"\ntrust_new = true\n'
            '[[host]]\nname = "v6"\naddress = "2001:db8::7"\nssh_agent = true\n'
            + wires(("local:enp3s0f0", "dut:eth1"), ("dut:0000:03:00.1", "gen-2:0000:81:00.0"),
                    ("gen-2:ens1f1", "dut:ens1f1"), ("local:eth2", "local:eth3")))
    inv = load(write(tmp_path, text), AGENT)
    dut, gen, v6 = inv.hosts.values()
    assert (dut.port, dut.user, dut.cnfperf) == (2222, "bench", Path("/srv/cnfperf"))
    assert gen.key == key and gen.known_hosts == tmp_path / "keys" / "known"
    assert gen.trust_new and not gen.ssh_agent
    assert v6.ssh_agent and v6.key is None and v6.cnfperf == inventory.CHECKOUT
    assert v6.known_hosts == home / ".ssh" / "known_hosts"
    assert dut.stored() == {"name": "dut", "address": "192.0.2.10", "port": 2222,
                            "user": "bench"}
    assert inv.names == ("local", "dut", "gen-2", "v6")
    assert [str(w) for w in inv.wires] == [
        "local:enp3s0f0 - dut:eth1", "dut:0000:03:00.1 - gen-2:0000:81:00.0",
        "gen-2:ens1f1 - dut:ens1f1", "local:eth2 - local:eth3"]


def test_the_default_checkout_is_this_one():
    assert (inventory.CHECKOUT / "cnfperf" / "remote" / "inventory.py").is_file()


def test_an_empty_inventory_has_only_local(tmp_path):
    inv = load(write(tmp_path, ""), {})
    assert inv.hosts == {} and inv.wires == () and inv.names == ("local",)


# -- the model -----------------------------------------------------------------


def test_an_end_says_host_and_port():
    assert str(End("dut", "eth1")) == "dut:eth1"
    assert str(End("dut", pci="0000:03:00.0")) == "dut:0000:03:00.0"
    assert End("dut", pci="0000:03:00.0").dpdk and not End("dut", "eth1").dpdk


def test_a_wire_finds_its_end_on_a_host():
    wire = Wire(End("local", "eth0"), End("dut", "eth1"))
    assert (wire.end_on("dut"), wire.other("dut")) == (wire.b, wire.a)
    assert (wire.end_on("local"), wire.other("local")) == (wire.a, wire.b)
    with pytest.raises(KeyError):
        wire.end_on("gen")
    with pytest.raises(KeyError):
        wire.other("gen")
    loop = Wire(End("local", "eth0"), End("local", "eth1"))
    assert (loop.end_on("local"), loop.other("local")) == (loop.a, loop.b)


def test_wires_between_are_oriented_and_in_file_order(home, tmp_path):
    text = with_host() + wires(("dut:eth1", "local:eth0"), ("local:eth2", "local:eth3"),
                               ("local:eth1", "dut:eth2"))
    inv = load(write(tmp_path, text), {})
    assert inv.wires_between("local", "dut") == [(End("local", "eth0"), End("dut", "eth1")),
                                                 (End("local", "eth1"), End("dut", "eth2"))]
    assert inv.wires_between("dut", "local") == [(End("dut", "eth1"), End("local", "eth0")),
                                                 (End("dut", "eth2"), End("local", "eth1"))]
    assert inv.wires_between("local", "local") == [(End("local", "eth2"), End("local", "eth3"))]
    assert inv.wires_between("dut", "dut") == []


def test_an_unknown_host_is_refused_naming_the_known_ones(home, tmp_path):
    inv = load(write(tmp_path, with_host()), {})
    with pytest.raises(UserError, match=r"'gen': no such host in the inventory \(its hosts: dut\)"):
        inv.host("gen")
    with pytest.raises(UserError, match="'local': is this machine"):
        inv.host("local")
    with pytest.raises(UserError) as e:
        inv.host("gen", "dut_host")
    assert e.value.field == "dut_host"


def test_hosts_used_leaves_out_local_and_repeats(home, tmp_path):
    inv = load(write(tmp_path, with_host()), {})
    assert inv.hosts_used(["local", "dut", "dut", "local"]) == (inv.host("dut"),)
    assert inv.hosts_used(["local"]) == ()
    with pytest.raises(UserError, match="'gen'"):
        inv.hosts_used(["dut", "gen"], "tester_host")


# -- refusals ------------------------------------------------------------------


def test_a_missing_file_is_one_line(tmp_path):
    with pytest.raises(UserError) as e:
        load(tmp_path / "nope.toml")
    assert e.value.field == str(tmp_path / "nope.toml")
    assert e.value.why == "cannot read the inventory: No such file or directory"


def test_bad_toml_gives_the_parsers_message(tmp_path):
    why = refused(tmp_path, '[[host]]\nname = "dut\n')
    assert why.startswith("not TOML: ") and "line 2" in why


@pytest.mark.parametrize("text, why", [
    ('hosts = []\n', "the inventory: unknown key 'hosts'; known keys: host, wire"),
    ('[host]\nname = "dut"\n', "host: expected [[host]] tables"),
    (with_host(adress='"x"'), "host 'dut': unknown key 'adress'; known keys: name, address, "
                             "port, user, key, ssh_agent, known_hosts, trust_new, cnfperf"),
    (wires(("local:eth0", "local:eth1")) + 'c = "local:eth2"\n',
     "wire 1: unknown key 'c'; known keys: a, b"),
])
def test_an_unknown_key_is_named_with_the_allowed_ones(home, tmp_path, text, why):
    assert refused(tmp_path, text) == why


@pytest.mark.parametrize("key", ["password", "passphrase", "pass", "key_passphrase",
                                 "sudo-password", "my-ssh-passwd", "Password"])
def test_passwords_are_not_taken(home, tmp_path, key):
    text = with_host(**{f'"{key}"': '"hunter2"'})
    assert refused(tmp_path, text) == \
        f"host 'dut': {key!r}: passwords are not taken: use a key or the SSH agent"
    assert "hunter2" not in refused(tmp_path, text)
    assert "passwords are not taken" in refused(tmp_path, f'{key} = "x"\n')


@pytest.mark.parametrize("missing, entry", [("name", "host 1"), ("address", "host 'dut'")])
def test_a_required_key_is_named(home, tmp_path, missing, entry):
    assert refused(tmp_path, with_host(**{missing: None})) == f"{entry}: missing key {missing!r}"


def test_a_host_named_twice(home, tmp_path):
    assert refused(tmp_path, with_host() + with_host(address='"192.0.2.11"')) == \
        "host 'dut' is named twice"


@pytest.mark.parametrize("name, why", [
    ('"local"', "host 1: name 'local' is reserved: it is this machine, which needs no [[host]]"),
    ('"Dut"', "host 1: name 'Dut': expected [a-z][a-z0-9_-]{0,31}"),
    ('"1dut"', "host 1: name '1dut': expected [a-z][a-z0-9_-]{0,31}"),
    ('"' + "d" * 33 + '"', "expected [a-z]"),
    ("7", "host 1: name: expected a string, got 7"),
])
def test_a_bad_host_name(home, tmp_path, name, why):
    assert why in refused(tmp_path, with_host(name=name))


def test_host_names_of_one_to_32_characters(home, tmp_path):
    text = with_host(name='"d"') + with_host(name='"' + "d" * 32 + '"')
    assert load(write(tmp_path, text), {}).names == ("local", "d", "d" * 32)


@pytest.mark.parametrize("port, why", [
    ("0", "port 0: expected 1-65535"), ("65536", "port 65536: expected 1-65535"),
    ('"22"', "port: expected an integer, got '22'"), ("true", "port: expected an integer"),
])
def test_a_bad_port(home, tmp_path, port, why):
    assert refused(tmp_path, with_host(port=port)).startswith(f"host 'dut': {why}")


@pytest.mark.parametrize("address", ['"[2001:db8::1]"', '"root@dut"', '"dut:22"', '""',
                                     '"-dut.lab"', '"a b"'])
def test_a_bad_address(home, tmp_path, address):
    assert refused(tmp_path, with_host(address=address)).startswith(
        f"host 'dut': address {tomllib.loads('x=' + address)['x']!r}: expected a DNS name")


def test_a_bad_user(home, tmp_path):
    assert refused(tmp_path, with_host(user='"ro ot"')) == \
        "host 'dut': user 'ro ot' is not a user name"


def test_both_or_neither_of_key_and_agent(home, tmp_path):
    assert refused(tmp_path, with_host(ssh_agent="true")) == \
        "host 'dut': both key and ssh_agent: choose one"
    assert refused(tmp_path, with_host(key=None)) == \
        "host 'dut': neither key nor ssh_agent = true: give one"
    assert refused(tmp_path, with_host(key=None, ssh_agent="false")) == \
        "host 'dut': neither key nor ssh_agent = true: give one"


def test_the_ssh_agent_needs_ssh_auth_sock(home, tmp_path):
    text = with_host(key=None, ssh_agent="true")
    why = refused(tmp_path, text, environ={})
    assert why.startswith("host 'dut': ssh_agent = true but SSH_AUTH_SOCK is not set")
    assert load(write(tmp_path, text), AGENT).host("dut").ssh_agent


@pytest.mark.parametrize("mode", [0o600, 0o400])
def test_a_private_key_is_taken(home, tmp_path, mode):
    (home / ".ssh" / "id_ed25519").chmod(mode)
    assert load(write(tmp_path, with_host()), {}).host("dut").key == home / ".ssh" / "id_ed25519"


@pytest.mark.parametrize("mode, how", [(0o640, "readable"), (0o644, "readable"),
                                       (0o620, "writable"), (0o666, "readable and writable"),
                                       (0o700, None), (0o710, "executable")])
def test_a_key_others_may_read_is_refused(home, tmp_path, mode, how):
    (home / ".ssh" / "id_ed25519").chmod(mode)
    if how is None:
        load(write(tmp_path, with_host()), {})
        return
    assert refused(tmp_path, with_host()) == (
        f"host 'dut': key ~/.ssh/id_ed25519 is {how} by others than its owner "
        f"(mode {mode:04o}): chmod 600 it")


def test_a_key_that_is_missing_or_no_file(home, tmp_path):
    assert refused(tmp_path, with_host(key='"keys/nope"')) == \
        "host 'dut': key keys/nope: No such file or directory"
    (tmp_path / "keys").mkdir()
    assert refused(tmp_path, with_host(key='"keys"')) == \
        "host 'dut': key keys is not a regular file"


def test_the_key_path_is_relative_to_the_inventory(home, tmp_path, monkeypatch):
    (tmp_path / "k").write_text("")
    (tmp_path / "k").chmod(0o600)
    monkeypatch.chdir(home)
    assert load(write(tmp_path, with_host(key='"k"')), {}).host("dut").key == tmp_path / "k"


def test_known_hosts_must_exist_unless_trust_new(home, tmp_path):
    (home / ".ssh" / "known_hosts").unlink()
    assert refused(tmp_path, with_host()).startswith(
        "host 'dut': known_hosts ~/.ssh/known_hosts does not exist")
    assert refused(tmp_path, with_host(known_hosts='"kh"')).startswith(
        "host 'dut': known_hosts kh does not exist")
    host = load(write(tmp_path, with_host(trust_new="true")), {}).host("dut")
    assert host.trust_new and host.known_hosts == home / ".ssh" / "known_hosts"
    (tmp_path / "kh").mkdir()
    assert refused(tmp_path, with_host(known_hosts='"kh"', trust_new="true")) == \
        "host 'dut': known_hosts kh is not a regular file"


@pytest.mark.parametrize("path", ['"opt/cnfperf"', '"~/cnfperf"', '""'])
def test_a_relative_cnfperf_path(home, tmp_path, path):
    assert refused(tmp_path, with_host(cnfperf=path)).startswith(
        f"host 'dut': cnfperf {tomllib.loads('x=' + path)['x']!r}: expected the checkout's "
        "absolute path")


def test_a_bool_key_takes_only_a_bool(home, tmp_path):
    assert refused(tmp_path, with_host(trust_new='"yes"')) == \
        "host 'dut': trust_new: expected true or false, got 'yes'"


@pytest.mark.parametrize("end", [
    "dut", "dut:", ":eth0", "dut:eth 0", "dut:eth0/1", "dut:" + "e" * 16, "dut:..",
    "dut:0000:03:00", "dut:03:00.0", "dut:0000:03:00.8", "dut:eth0:1",
])
def test_a_wire_end_that_does_not_parse(home, tmp_path, end):
    why = refused(tmp_path, with_host() + wires(("local:eth0", end)))
    assert why.startswith(f"wire 1: b: {end!r}: ")
    assert "expected host:interface" in why or "neither an interface name" in why


def test_interface_names_up_to_15_characters_and_pci_addresses(home, tmp_path):
    text = with_host() + wires(("local:" + "e" * 15, "dut:0000:AF:00.7"))
    (wire,) = load(write(tmp_path, text), {}).wires
    assert wire.a == End("local", "e" * 15)
    assert wire.b == End("dut", pci="0000:af:00.7") and wire.b.dpdk


def test_a_wire_naming_an_unknown_host(home, tmp_path):
    assert refused(tmp_path, with_host() + wires(("local:eth0", "gen:eth0"))) == \
        "wire 1: b: 'gen:eth0': no host 'gen' (known: local, dut)"


def test_a_wire_end_is_required(home, tmp_path):
    assert refused(tmp_path, '[[wire]]\na = "local:eth0"\n') == "wire 1: missing key 'b'"


@pytest.mark.parametrize("first, second, port", [
    (("local:eth0", "dut:eth1"), ("local:eth1", "dut:eth1"), "dut:eth1"),
    (("local:eth0", "dut:eth1"), ("local:eth0", "dut:eth2"), "local:eth0"),
    (("local:eth0", "dut:0000:03:00.0"), ("dut:0000:03:00.0", "local:eth1"), "dut:0000:03:00.0"),
    (("local:eth0", "dut:0000:af:00.0"), ("dut:0000:AF:00.0", "local:eth1"), "dut:0000:af:00.0"),
])
def test_a_port_on_two_wires(home, tmp_path, first, second, port):
    assert refused(tmp_path, with_host() + wires(first, second)) == \
        f"wire 2: port {port} is already on wire 1"


def test_a_wire_from_a_port_to_itself(home, tmp_path):
    assert refused(tmp_path, with_host() + wires(("dut:eth1", "dut:eth1"))) == \
        "wire 1: both ends are dut:eth1: a wire joins two ports"


# -- docs ----------------------------------------------------------------------


def test_the_docs_show_the_example():
    assert inventory.EXAMPLE in (REPO / "docs" / "hosts.md").read_text()


@pytest.mark.parametrize("text, dut, says", [
    (with_host(), "nowhere", "'nowhere'"),
    (with_host() + with_host(address='"192.0.2.11"'), "dut", "named twice"),
], ids=["an unknown dut host", "a host named twice"])
def test_a_bad_inventory_given_to_a_run_exits_2_before_anything_exists(
        home, tmp_path, monkeypatch, capsys, text, dut, says):
    """`cnfperf run --hosts`: one line, exit 2, no results (what needs a host to
    answer, an unreachable one or a wire's end it lacks: tests/e2e/remote)."""
    from cnfperf.cli import main

    results = tmp_path / "results"
    monkeypatch.setenv("CNFPERF_RESULTS", str(results))
    monkeypatch.setenv("SSH_AUTH_SOCK", AGENT["SSH_AUTH_SOCK"])
    code = main(["run", "--hosts", str(write(tmp_path, text)), "--dut-host", dut,
                 "--switch", "bridge", "--api", "raw", "--tester", "single", "--duration", "1"])
    err = capsys.readouterr().err
    assert code == 2, err
    [line] = err.strip().splitlines()
    assert line.startswith("cnfperf: error: ") and says in line, line
    assert not results.exists()
