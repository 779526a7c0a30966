"""The fusion partitioner of TVM's FuseOps, independent of the dialect that feeds it.

A dialect turns a function into an `IndexedForwardGraph` (Relay: passes/fuse_ops.py;
Relax: irtool/analysis/relax_fusion.py);
this module decides which nodes form one fused group, as TVM's graph_partitioner.cc:

            conv2d                  The hard case is a diamond: conv2d can join the
            /  |  \\                 elementwise add only if *every* path from it gets
          op   op   op              there through fusable ops. The immediate
            \\  |  /                 post-dominator (the first node all paths reach)
          elemwise add              tells where the paths meet.

1. Post-dominator tree, in one pass over the nodes in reverse topological order: a
   node's parent is the least common ancestor (LCA) of its consumers in the tree built
   so far; the pattern of the edge to the parent combines (max) the patterns of the
   edges and tree nodes passed on the way. Nodes referenced from outside (function
   results, let values, if branches) have no parent: nothing fuses through them.
2. Union-find groups, one per node at first, merged in three phases over the nodes in
   topological order, each node towards its immediate post-dominator:
     phase 0  kOutEWiseFusable (conv2d) takes the elementwise ops after it,
              kElemWise/kBroadcast join an injective or reduction consumer;
     phase 1  kInjective and tuples join injective consumers (after phase 0, so that
              conv2d always finishes fusing first);
     phase 2  injective ops join an intermediate tuple already fused into its consumer.
   CheckPath checks every node on every path to the post-dominator against the rule
   of the phase; CommitFuse merges them all into the post-dominator's group.
   `max_fuse_depth` bounds the nodes of a group and `max_function_args` (when > 0)
   its arguments, TVM's postponed fusing included; opt level 0 fuses nothing.

Nodes are integers (their post-DFS index); paths are walked with explicit stacks, so
100k-node graphs need no recursion.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ops.registry import OpPattern

ELEMWISE, BROADCAST, INJECTIVE = OpPattern.ELEMWISE, OpPattern.BROADCAST, OpPattern.INJECTIVE
COMM_REDUCE, OUT_EWISE, TUPLE, OPAQUE = (OpPattern.COMM_REDUCE, OpPattern.OUT_ELEMWISE_FUSABLE, OpPattern.TUPLE,
                                         OpPattern.OPAQUE)
MAX_FUSED_OPS = 256  # TVM's kMaxFusedOps, the default of relay.FuseOps.max_depth


@dataclass
class IndexedForwardGraph:
    """The dataflow graph, nodes numbered in post-DFS order (operands before users).

    refs[i]            the IR node
    pattern[i]         its OpPatternKind
    extern_ref[i]      used from outside the dataflow (result, let value, branch...)
    outputs[i]         [(user, edge pattern)] in the order TVM links them
    args_num[i]        arguments the node brings to a fused function (variables and
                       projections it reads, plus dynamic dimensions): InitGroups' count
    operands[i]        the non-variable operand nodes of a call or tuple (CountArgs_)
    result_dyn_dims[i] dynamic dimensions of a call's tensor result (CountArgsLimit_)
    """

    refs: list = field(default_factory=list)
    pattern: list[int] = field(default_factory=list)
    extern_ref: list[bool] = field(default_factory=list)
    outputs: list[list[tuple[int, int]]] = field(default_factory=list)
    args_num: list[int] = field(default_factory=list)
    operands: list[tuple[int, ...]] = field(default_factory=list)
    result_dyn_dims: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.refs)


class Group:
    """A union-find node; the root of a set describes the fused group."""

    __slots__ = ("parent", "pattern", "root_ref", "anchor_ref", "num_nodes", "args_num")

    def __init__(self, pattern: int, root_ref, args_num: int) -> None:
        self.parent: Group | None = None
        self.pattern = pattern
        self.root_ref = root_ref  # the node whose value the fused function returns
        self.anchor_ref = root_ref if pattern == OUT_EWISE else None
        self.num_nodes = 1
        self.args_num = args_num

    def find_root(self) -> Group:
        root = self
        while root.parent is not None:
            root = root.parent
        node = self
        while node is not root:  # path compression
            node.parent, node = root, node.parent
        return root


@dataclass
class PostDominatorTree:
    parent: list[int]     # immediate post-dominator, -1 for none
    depth: list[int]
    pattern: list[int]    # combined pattern of the paths to the parent


def post_dominator_tree(graph: IndexedForwardGraph) -> PostDominatorTree:
    n = len(graph)
    parent, depth, pattern = [-1] * n, [0] * n, [OPAQUE] * n
    for i in range(n - 1, -1, -1):
        outputs = graph.outputs[i]
        depth[i] = 1
        if graph.extern_ref[i]:
            continue
        combined = ELEMWISE
        lca = -1
        for k, (user, edge_pattern) in enumerate(outputs):
            if k == 0:
                lca = user
            else:  # walk both up to their common ancestor, passing patterns on
                a, b = lca, user
                while a != b:
                    if a == -1 or b == -1:
                        a = -1
                        break
                    da, db = depth[a], depth[b]
                    if da < db:
                        combined = max(combined, pattern[b])
                        b = parent[b]
                    elif db < da:
                        combined = max(combined, pattern[a])
                        a = parent[a]
                    else:
                        combined = max(combined, pattern[a], pattern[b])
                        a, b = parent[a], parent[b]
                lca = a
            combined = max(combined, edge_pattern)
        parent[i] = lca
        depth[i] = depth[lca] + 1 if lca != -1 else 1
        pattern[i] = combined
    return PostDominatorTree(parent, depth, pattern)


def _fuse_into_elemwise_anchor(kind: int, is_sink: bool) -> bool:
    if not is_sink:  # parallel branches may be elementwise, broadcast or injective
        return kind <= INJECTIVE
    return kind <= INJECTIVE or kind in (COMM_REDUCE, OUT_EWISE)


def _at_most_broadcast(kind: int, is_sink: bool) -> bool:
    return kind <= BROADCAST


def _at_most_injective(kind: int, is_sink: bool) -> bool:
    return kind <= INJECTIVE


class GraphPartitioner:
    """TVM's GraphPartitioner: `partition(graph)` -> the group of every node."""

    def __init__(self, opt_level: int, max_fuse_depth: int = MAX_FUSED_OPS, max_function_args: int = 0) -> None:
        self.opt_level = opt_level
        self.max_fuse_depth = max_fuse_depth
        self.max_function_args = max_function_args
        self.groups: list[Group] = []
        self.postponed: dict[int, list[int]] = {}
        self.postpone_node = -1

    def partition(self, graph: IndexedForwardGraph) -> list[Group]:
        self.graph = graph
        self.groups = [Group(graph.pattern[i], graph.refs[i], graph.args_num[i]) for i in range(len(graph))]
        if self.opt_level == 0:
            return self.groups
        tree = post_dominator_tree(graph)
        for phase in range(3):
            self.run_fuse(tree, phase)
        return self.groups

    # ------------------------------------------------------------------ paths

    def check_path(self, src: int, sink: int, fcond) -> bool:
        """Every node on a path from `src` (exclusive) to `sink` passes `fcond`."""
        outputs, groups = self.graph.outputs, self.groups
        visited = set()
        stack = [user for user, _ in reversed(outputs[src])]
        while stack:
            node = stack.pop()
            if node in visited:
                continue
            visited.add(node)
            if not fcond(groups[node].find_root().pattern, node == sink):
                return False
            if node != sink:
                stack.extend(user for user, _ in reversed(outputs[node]))
        return True

    def commit_fuse(self, src: int, sink: int) -> None:
        """Merge every node on the paths from `src` to `sink` into the sink's group."""
        if self.postpone_node != -1:  # the argument count said: decide at that node
            self.postponed.setdefault(self.postpone_node, []).append(src)
            return
        outputs, groups = self.graph.outputs, self.groups
        target = groups[sink]
        visited = set()
        stack = [src]
        while stack:
            node = stack.pop()
            if node == sink or node in visited:
                continue
            visited.add(node)
            self.merge_from_to(groups[node], target)
            stack.extend(user for user, _ in reversed(outputs[node]))

    @staticmethod
    def merge_from_to(child: Group, parent: Group) -> None:
        child, parent = child.find_root(), parent.find_root()
        if child is parent:
            return
        parent.num_nodes += child.num_nodes
        parent.args_num += child.args_num
        child.parent = parent
        if child.anchor_ref is not None:
            parent.anchor_ref = child.anchor_ref
            parent.pattern = max(child.pattern, parent.pattern)

    def count_fused_nodes_with_new_child(self, child: int, dom_parent: int) -> int:
        # TVM sums each node's own group count (not its root's), then adds the target root's
        outputs, groups = self.graph.outputs, self.groups
        total = groups[dom_parent].find_root().num_nodes
        if all(user == dom_parent for user, _ in outputs[child]):  # the usual chain link
            return total + groups[child].num_nodes
        visited = set()
        stack = [child]
        while stack:
            node = stack.pop()
            if node == dom_parent or node in visited:
                continue
            visited.add(node)
            total += groups[node].num_nodes
            stack.extend(user for user, _ in outputs[node])
        return total

    # ------------------------------------------------------------------ argument limit

    def count_args(self, src: int, update_postpone: bool = True) -> int:
        groups, graph = self.groups, self.graph
        total = groups[src].args_num
        seen = {groups[src].find_root()}
        for operand in graph.operands[src]:
            group = groups[operand].find_root()
            if group in seen:
                continue
            seen.add(group)
            if group.args_num > 0:
                total += group.args_num
            elif update_postpone:
                self.postpone_node = src
            else:
                total += self.count_args(operand, update_postpone)
        return total

    def count_args_limit(self, child: int) -> int:
        graph = self.graph
        output_args = sum(1 + graph.result_dyn_dims[user] for user, _ in graph.outputs[child])
        return max(self.max_function_args - output_args, 0)

    def count_fused_args(self, child: int) -> int:
        return max((self.count_args(user) for user, _ in self.graph.outputs[child]), default=0)

    # ------------------------------------------------------------------ the phases

    def run_fuse(self, tree: PostDominatorTree, phase: int) -> None:
        groups = self.groups
        for nid in range(len(groups)):
            group = groups[nid]
            self.postpone_node = -1
            if nid in self.postponed:
                for src in self.postponed.pop(nid):
                    if self.count_args(nid, False) <= self.count_args_limit(nid):
                        sink = tree.parent[src]
                        if groups[sink].anchor_ref is None:
                            self.commit_fuse(src, sink)
            pattern = group.pattern
            if pattern == OPAQUE:
                continue
            dom_parent = tree.parent[nid]
            if dom_parent == -1:
                continue
            parent_group = groups[dom_parent]
            # TVM checks the size limits first; they only veto a fusion, so they are
            # evaluated here just before one would be committed (same result, less work)
            if phase == 2:
                # fuse injective ops into an intermediate tuple that joined its consumer
                if pattern > INJECTIVE:
                    continue
                root = parent_group.find_root()
                if root.pattern == TUPLE:
                    continue
                if parent_group.pattern == TUPLE and root.pattern <= INJECTIVE and self.within_limits(nid, dom_parent):
                    if self.check_path(nid, dom_parent, _at_most_injective):
                        self.commit_fuse(nid, dom_parent)
                continue
            if parent_group.pattern == TUPLE or group.find_root() is parent_group.find_root():
                continue  # never into a tuple (phase 2 handles tuple fields); or done already
            if pattern == OUT_EWISE:
                fcond = _at_most_broadcast if phase == 0 and tree.pattern[nid] == ELEMWISE else None
            elif pattern <= BROADCAST:
                edge = tree.pattern[nid]
                fcond = _fuse_into_elemwise_anchor if edge <= INJECTIVE or edge == COMM_REDUCE else None
            elif pattern in (INJECTIVE, TUPLE):
                fcond = _at_most_injective if phase == 1 else None
            else:  # kCommReduce: a reduction does not fuse into its consumers
                fcond = None
            if fcond is not None and self.within_limits(nid, dom_parent) and self.check_path(nid, dom_parent, fcond):
                self.commit_fuse(nid, dom_parent)

    def within_limits(self, nid: int, dom_parent: int) -> bool:
        """max_fuse_depth and max_function_args allow `nid` to join its post-dominator."""
        if self.count_fused_nodes_with_new_child(nid, dom_parent) > self.max_fuse_depth:
            return False
        if self.max_function_args > 0:
            limit = self.count_args_limit(nid)
            if limit > 0 and self.count_fused_args(nid) > limit:
                return False
        return True
