"""A pair's path as a graph of network functions (`graph`), not a chain.

A chain is the one-line form (`nfs = 3`): sender → each NF in at its port a,
out at b → receiver. A graph names its NFs and links any two ports:

    graph = '''
    sender - in.a
    in.b - top.a
    in.c - bottom.a cost 2
    top.b - out.a
    bottom.b - out.b
    out.c - receiver
    '''

Links are separated by new lines or `;`; each joins two ends: `sender`,
`receiver` or an NF's port `NAME.PORT` (ports lettered a, b, c… in the NF's
own order, none skipped), with a `cost` (1 unless given) that routing NFs
weigh paths by. The NFs are the names, in the order they first appear; each
is placed as a chain's NF of that index (plan.py), its ports those letters.

Which path a frame takes is the NFs' decision, not cnfperf's: a routing NF
(nf = router) routes to each end by the cheapest path, and keeps the loop-free
alternates as backup routes (routes(): a higher metric, taken when the
primary's link loses its carrier). Every port is linked once, the sender and
the receiver once each, every NF reachable from the sender and the receiver
too: what parse() refuses otherwise, naming the link.
"""
from __future__ import annotations

import functools
import heapq
import re
from dataclasses import dataclass
from functools import cached_property

from cnfperf.fields import MAX_NFS

SENDER, RECEIVER = "sender", "receiver"
ENDS = (SENDER, RECEIVER)
PORTS = "abcdefgh"       # an NF's ports, in its order: the engine's slot 0, 1, …
MAX_COST = 65535
_NAME = re.compile(r"[a-z][a-z0-9_]{0,15}$")
_LINK = re.compile(r"(\S+)\s+-\s+(\S+)(?:\s+cost\s+(\d+))?$")


@dataclass(frozen=True)
class End:
    node: str          # an NF's name, or sender / receiver
    port: str = ""     # its port's letter; "" for the tester's ends

    @property
    def slot(self) -> int:
        return PORTS.index(self.port) if self.port else 0

    def __str__(self) -> str:
        return f"{self.node}.{self.port}" if self.port else self.node


@dataclass(frozen=True)
class Edge:
    a: End
    b: End
    cost: int = 1

    def __str__(self) -> str:
        return f"{self.a} - {self.b}" + (f" cost {self.cost}" if self.cost != 1 else "")


@dataclass(frozen=True)
class Route:
    """A routing NF's route to one of the pair's ends: out of its port `slot`,
    `metric` the path's cost that way (the cheapest is the primary)."""
    end: str
    slot: int
    metric: int


@dataclass(frozen=True)
class Graph:
    edges: tuple[Edge, ...]

    @cached_property
    def nfs(self) -> tuple[str, ...]:
        """The NFs' names, in the order they first appear (their index)."""
        names = [e.node for edge in self.edges for e in (edge.a, edge.b) if e.node not in ENDS]
        return tuple(dict.fromkeys(names))

    def ports(self, nf: str) -> int:
        """How many ports an NF has."""
        return sum(e.node == nf for edge in self.edges for e in (edge.a, edge.b))

    def __str__(self) -> str:
        """The canonical text: what a point stores and its key is hashed from."""
        return "; ".join(map(str, self.edges))

    def neighbours(self, node: str) -> list[tuple[End, End, int]]:
        """(its end, the other end, cost) of every link of a node."""
        out = []
        for edge in self.edges:
            if edge.a.node == node:
                out.append((edge.a, edge.b, edge.cost))
            if edge.b.node == node:
                out.append((edge.b, edge.a, edge.cost))
        return out

    def distances(self, source: str) -> dict[str, int]:
        """The cheapest cost from `source` to every node it reaches, not
        through the tester's ends (they forward nothing)."""
        best = {source: 0}
        todo = [(0, source)]
        while todo:
            d, node = heapq.heappop(todo)
            if d > best[node] or (node in ENDS and node != source):
                continue
            for _, far, cost in self.neighbours(node):
                if d + cost >= best.get(far.node, 1 << 60):
                    continue
                best[far.node] = d + cost
                heapq.heappush(todo, (d + cost, far.node))
        return best

    def routes(self, nf: str) -> list[Route]:
        """An NF's routes to each end: out of every port whose neighbour
        reaches the end without coming back through it (dist(N, end) < dist(N,
        nf) + dist(nf, end): a loop-free alternate, RFC 5286), the metric the
        cost that way; the cheapest first, ties to the earlier port."""
        out = []
        mine = self.distances(nf)
        for end in ENDS:
            found = []
            for here, far, cost in self.neighbours(nf):
                if far.node == end:
                    found.append(Route(end, here.slot, cost))
                    continue
                theirs = self.distances(far.node)
                if end in theirs and theirs[end] < theirs.get(nf, 1 << 60) + mine.get(end, 1 << 60):
                    found.append(Route(end, here.slot, cost + theirs[end]))
            out += sorted(found, key=lambda r: (r.metric, r.slot))
        return out


@functools.cache   # a point's graph is asked for by every NF, fault and check of it
def parse(text: str) -> Graph:
    """The graph a `graph` value describes; ValueError saying what is wrong."""
    items = [item.strip() for line in text.splitlines() for item in line.split(";")]
    edges = []
    for item in filter(None, items):
        found = _LINK.match(item)
        if not found:
            raise ValueError(f"{item!r}: not a link: expected END - END [cost N], an end "
                             f"being sender, receiver or NAME.PORT (in.a)")
        a, b = _end(found[1], item), _end(found[2], item)
        cost = int(found[3] or 1)
        if not 1 <= cost <= MAX_COST:
            raise ValueError(f"{item!r}: cost from 1 to {MAX_COST}")
        if a.node == b.node:
            raise ValueError(f"{item!r}: links a node to itself")
        if b.node == SENDER or a.node == RECEIVER:   # frames flow sender → receiver
            a, b = b, a
        edges.append(Edge(a, b, cost))
    if not edges:
        raise ValueError("no links: one per line (or separated by ;), e.g. "
                         "'sender - r1.a; r1.b - receiver'")
    graph = Graph(tuple(edges))
    _check(graph)
    return graph


def _end(word: str, item: str) -> End:
    if word in ENDS:
        return End(word)
    name, dot, port = word.partition(".")
    if not dot or not _NAME.match(name) or len(port) != 1 or port not in PORTS:
        raise ValueError(f"{item!r}: {word!r} is not sender, receiver, nor NAME.PORT (a name "
                         f"of lower-case letters, digits and _, a port letter {PORTS[0]} to "
                         f"{PORTS[-1]})")
    return End(name, port)


def _check(graph: Graph) -> None:
    seen: dict[End, Edge] = {}
    for edge in graph.edges:
        for end in (edge.a, edge.b):
            if end in seen:
                raise ValueError(f"{end} is linked twice ({seen[end]}; {edge}): "
                                 "every port is on one link")
            seen[end] = edge
    for end in ENDS:
        if End(end) not in seen:
            raise ValueError(f"the {end} is on no link ({end} - NAME.PORT)")
    if End(SENDER) == seen[End(RECEIVER)].a:
        raise ValueError("the sender and the receiver are linked directly: a graph has "
                         "network functions (without them: nfs = 0)")
    if len(graph.nfs) > MAX_NFS:
        raise ValueError(f"{len(graph.nfs)} network functions: at most {MAX_NFS}")
    for nf in graph.nfs:
        letters = sorted(e.port for e in seen if e.node == nf)
        if letters != list(PORTS[:len(letters)]):
            missing = next(p for p in PORTS if p not in letters)
            raise ValueError(f"{nf}'s ports are {', '.join(letters)}: lettered from a "
                             f"without a gap ({nf}.{missing} is on no link)")
        if len(letters) < 2:
            raise ValueError(f"{nf} has one port ({nf}.a): a network function in a graph "
                             "forwards between two ports at least")
    reached = graph.distances(SENDER)
    for node in (*graph.nfs, RECEIVER):
        if node not in reached:
            raise ValueError(f"no path from the sender reaches {node}")
    back = graph.distances(RECEIVER)
    for node in graph.nfs:
        if node not in back:
            raise ValueError(f"no path from {node} reaches the receiver")
