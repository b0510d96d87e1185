"""`cnfperf cluster`: the test cluster (cluster/node.py) for a user, kept
until Ctrl-C (or SIGTERM, SIGHUP), then taken down whole: the process that
keeps it is its owner (node.KEEPER), its journal written before anything
exists. A cluster killed outright is leftovers for `cnfperf cleanup` or the
next `cnfperf cluster`, which removes them before it starts.

Hosts of an inventory join it as nodes of their own (members()): each
host's agent (run/agent.py, over SSH) keeps its node (joined()) as long as
its session lasts, and undoes it when the session ends, however it ends."""
from __future__ import annotations

import contextlib
import socket
from typing import Callable, Iterable, Iterator

from cnfperf.cluster import node
from cnfperf.host.journal import Journal
from cnfperf.remote.hosts import Hosts
from cnfperf.remote.inventory import Inventory
from cnfperf.run.cleanup import cluster_leftovers
from cnfperf.run.teardown import until_signal


@contextlib.contextmanager
def _owned(say: Callable[[str], None]) -> Iterator[Journal]:
    """This host's test cluster or node (one thing to a host), owned by this
    process (node.KEEPER) and journaled, until the block ends; a killed
    one's leftovers removed first."""
    for line in cluster_leftovers():
        say(f"removed a killed cluster's {line}")
    with contextlib.ExitStack() as stack:
        stack.enter_context(node.KEEPER.owned())
        journal = Journal(node.JOURNAL)
        # kept where a step of the teardown failed (what it made is still in it):
        # cleanup's to finish
        stack.callback(lambda: journal.close(remove=not journal.live()))
        yield journal


@contextlib.contextmanager
def kept(say: Callable[[str], None] = lambda _line: None, hugepages_mb: int = 0
         ) -> Iterator[node.Cluster]:
    """The test cluster, started here (node.started), until the block ends."""
    with _owned(say) as journal, node.started(journal, say, hugepages_mb=hugepages_mb) as made:
        yield made


@contextlib.contextmanager
def joined(member: node.Member, say: Callable[[str], None] = lambda _line: None
           ) -> Iterator[None]:
    """This host a node of another host's test cluster (node.joined) until
    the block ends."""
    with _owned(say) as journal, node.joined(journal, member, say):
        yield


@contextlib.contextmanager
def members(cluster: node.Cluster, inventory: Inventory, names: Iterable[str],
            say: Callable[[str], None] = lambda _line: None, hugepages_mb: int = 0
            ) -> Iterator[dict[str, str]]:
    """The inventory's hosts `names` joined to `cluster` as nodes named
    like them (each offering `hugepages_mb` to pods), each kept by its agent
    (run/agent.py op_join) until the block ends; yields their nodes'
    addresses by name."""
    hosts = Hosts(inventory)
    try:
        hosts.open(names)
        joined_at: dict[str, str] = {}
        for name, agent in hosts.agents.items():
            address = socket.gethostbyname(inventory.host(name).address)
            # the API server as that host reaches this one
            server = f"https://{node.node_address(address)}:{node.API_PORT}"
            say(f"host {name} joins as node {name} ({address}), its API server {server}")
            member = node.member(cluster, name, address, server, hugepages_mb)
            agent.call("join", node=member.node, address=member.address,
                       server=member.server, pems=member.pems,
                       hugepages_mb=member.hugepages_mb)
            joined_at[name] = address
        yield joined_at
    finally:
        for line in hosts.close():
            say(line)


def serve(say: Callable[[str], None], up: Callable[[node.Cluster, dict[str, str]], None],
          inventory: Inventory | None = None, hugepages_mb: int = 0) -> int:
    """Starts the test cluster (the inventory's hosts joined as nodes, each
    node offering `hugepages_mb` to pods), calls `up` with it and the joined
    nodes' addresses, and keeps it until a signal; returns that signal's number."""
    def start(stack: contextlib.ExitStack) -> None:
        made = stack.enter_context(kept(say, hugepages_mb))
        joined_at = stack.enter_context(members(made, inventory, inventory.hosts, say,
                                                hugepages_mb)) \
            if inventory is not None else {}
        up(made, joined_at)
    return until_signal("the test cluster", start, say,
                        "stopping: its nodes, pods, daemons and files go")
