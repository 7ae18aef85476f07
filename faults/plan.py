"""Fault plans: a list of timed, named fault events, and how each one acts on the cluster.

A plan entry is a table (TOML ``[[faults.plan]]``, also what the trace header records)::

    at_s = 5.0            when it starts (virtual seconds)
    fault = "crash"       one of FAULT_KINDS
    target = "broker-1"   a node, a list of nodes, or "leader:<topic>-<p>" (resolved when
                          the fault starts), "controller", "random-broker" is never stored:
                          nemeses resolve randomness when they generate the plan. In a
                          list, each element may be "leader:<topic>-<p>" or
                          "follower:<topic>-<p>/<k>": the k-th (mod their count) replica
                          of the partition other than its current leader, in assignment
                          order (both resolved when the fault starts; none while the
                          partition has no leader); "coordinator:<group>": the group's
                          coordinator, the leader of its __consumer_offsets partition
    duration_s = 3.0      > 0: the fault reverts by itself (restart, resume, heal)
    extra_ms / rate       for "delay" / "drop"
    source / fetcher_id   for "stall_fetcher": the leader broker(s) whose fetcher threads
                          stall (a node, a list, or "leader:<topic>-<p>"; every leader when
                          not given) and the thread's fetcher id (-1, the default: all)
    replicas = [4, 5, 6]  for "reassign": the target replica list (broker ids, the first
                          one the preferred leader)
    throttle = 1000000    for "reassign": ``--throttle`` in bytes/s (0: none): the moving
                          replicas' traffic outside the ISR is limited until the move ends
    partitions = 6        for "add_partitions": the topic's new partition count
    topic_partition       for "corrupt_disk": the partition ("orders-0") whose log on the
                          target broker is damaged
    offset = 41           for "corrupt_disk": the record damaged (-1, the default: the last
                          record of that replica's log when the fault starts)

Kinds (after Jepsen's nemeses):

* ``crash``: process kill (the page cache survives); ``power_loss``: kill + page-cache
  loss; ``shutdown``: a clean stop (logs flushed, checkpoints written, the clean-shutdown
  marker left, so the restart skips log recovery and, KAFKA-15586, is not an unclean
  shutdown; leadership is not moved away first);
* ``controlled_shutdown``: an operator's SIGTERM with ``controlled.shutdown.enable``: the
  broker has the controller move its leaderships and drop it from the ISRs, then stops
  cleanly; ``duration_s`` counts from when it stopped;
* ``pause``: stop-the-world;
* ``isolate``: cut the target nodes from every other node, both ways; ``partition``: the
  target nodes form one side, every other node the other; ``cut``: one direction only,
  ``target = [src, dst]``. A cut is silent, as iptables DROP is: TCP retransmits what it
  holds, and delivers it at the first retransmission after the heal;
  ``partition_reject``: the sides of ``partition``, but every frame across is answered
  with a TCP reset (iptables REJECT ``--reject-with tcp-reset``): requests fail within a
  round trip;
* ``delay``: extra one-way delay on every link of the target; ``drop``: packet loss at a
  rate on every link of the target (each lost segment is retransmitted: frames arrive
  late, never lost);
* ``stall_fetcher``: replica fetcher threads of the target broker stop working (a thread
  stuck on a lock, a slow disk, a long GC pause of one thread): every partition they carry
  stops fetching, so the leader drops from the ISR those that are being written to;
* ``corrupt_disk``: one record batch (an isrlab record) in the target broker's log of
  ``topic_partition`` is damaged on disk, as a bad sector or a bit flip on a disk or
  controller without end-to-end checks would (corruption on the wire is TCP's: the
  network retransmits it). Kafka finds it by the batch's CRC, and only where it checks
  one: a leader serves the damaged batch as it is; a follower refuses to append a fetch
  answer holding it and fetches the same offset again after ``replica.fetch.backoff.ms``,
  for ever (it falls out of the ISR by the lag rules; nothing repairs it); recovery after
  an unclean shutdown cuts the log at it when it lies in a segment being recovered (the
  one holding the recovery point, or a later one); a consumer (``check.crcs``) stops at
  it, and reads nothing more until the partition leaves it or its leader changes.
  Instant: traced as ``start`` with the offset damaged, or ``skipped`` with the reason (no
  such record, no log, no leader);
* ``preferred_election`` (an operation, not a fault): ``kafka-leader-election
  --election-type preferred`` for the partitions named in ``target`` (``"orders-0"``, a list,
  or ``"all"``): each one's first assigned replica takes over if it is in the ISR;
* ``reassign`` (an operation): ``kafka-reassign-partitions --execute`` moving the partitions
  named in ``target`` to the broker ids in ``replicas`` (KIP-455: the new replicas join
  through the OSR; the old ones leave once every new one is in the ISR); with
  ``duration_s`` > 0 the reassignment is cancelled then if it has not completed;
  ``cancel_reassign``: ``kafka-reassign-partitions --cancel`` for the named partitions;
* ``add_broker`` (an operation): a spare broker (``cluster.spare.brokers``) starts and
  registers with a new broker id; it hosts nothing until a reassignment moves replicas to
  it; ``decommission``: every partition with a replica on the target broker is reassigned
  to the registered broker that hosts the fewest replicas, and once the broker hosts none
  it stops cleanly, is unregistered from the controller and never comes back;
* ``create_topic`` (an operation): ``kafka-topics --create`` for the topic named in
  ``target``, a ``[[topics]]`` entry with ``create_at_start = false`` (its producers block
  and its consumers are assigned nothing until then); ``add_partitions``: ``kafka-topics
  --alter --partitions N`` for the topic named in ``target`` (``partitions = N``, the new
  count): keyed records map to other partitions from when each producer's metadata shows
  the new count, and consumer groups rebalance when theirs does (``metadata.max.age.ms``);
* ``isolate_controller`` (a controller quorum, ``cluster.controller_quorum``): cut one
  controller node — ``target = "controller"``, the active controller when the fault starts,
  or a voter ``controller-300N`` — from the other voters, both ways (``scope = "voters"``,
  the default: brokers still reach it and it them), or from every other node (``scope =
  "all"``). Silent, as ``isolate``: TCP holds what it cannot deliver until the heal. The
  active controller cut from the voters keeps serving the brokers while a majority elects
  another leader; it resigns once no majority has fetched from it for 1.5 x
  ``quorum.fetch.timeout.ms``, and never with ``bugs = ["KAFKA-15489"]``;
* ``lose_quorum``: a majority of the voters down (``how = "crash"``, the default: process
  kills; the quorum-state file and the metadata log survive) or cut from every other voter
  (``how = "isolate"``) for the fault's duration, then back. ``target``: the voters (at
  least a majority), or none: the voters other than the active controller in id order, then
  the active one, as many as a majority needs (with three voters: the two followers, so
  the leader stays up alone). Nothing commits meanwhile (no metadata change takes effect;
  the partitions' data keeps flowing) and the quorum recovers when they return;
* ``restart``, ``resume``, ``heal`` (remove every partition, delay and drop).

Every start and stop is traced as a ``fault`` event, so a plan can be read back from a
trace and replayed or shrunk; an entry timed after the workload phase (a shortened
``duration_s``) never acts and is traced with phase ``skipped`` when the heal begins (one
timed after the whole run is refused at load).
"""

from __future__ import annotations

from typing import Any, Protocol

FAULT_KINDS = ("crash", "power_loss", "shutdown", "pause", "isolate", "partition", "cut",
               "partition_reject",
               "delay", "drop", "restart", "resume", "heal", "stall_fetcher",
               "preferred_election", "controlled_shutdown", "reassign", "cancel_reassign",
               "add_broker", "decommission", "create_topic", "add_partitions",
               "corrupt_disk", "isolate_controller", "lose_quorum")
#: faults on the controller quorum's voters: a scenario with ``cluster.controller_quorum``
QUORUM_FAULTS = ("isolate_controller", "lose_quorum")
#: plan steps whose target names partitions ("orders-0"), not nodes
PARTITION_STEPS = ("preferred_election", "reassign", "cancel_reassign")
#: plan steps whose target names a topic
TOPIC_STEPS = ("create_topic", "add_partitions")
LOSSY = ("power_loss",)
NEMESES = ("kill", "kill_leader", "power_loss", "power_loss_leader", "pause", "partition",
           "isolate", "isolate_leader", "bridge", "delay", "drop", "kill_controller",
           "pause_controller", "delay_controller", "cut", "cut_leader", "deafen",
           "power_outage", "split", "stall_fetcher", "preferred_election",
           "controlled_shutdown", "reassign", "add_broker", "decommission", "add_partitions",
           "partition_reject", "corrupt_disk", "isolate_controller", "lose_quorum")
#: nemesis kinds of the controller quorum (``cluster.controller_quorum``)
QUORUM_NEMESES = ("isolate_controller", "lose_quorum")


class World(Protocol):
    """What a fault may do to the simulated world (implemented by emulator.cluster)."""

    node_names: list[str]

    @property
    def assignment(self) -> dict[tuple[str, int], tuple[int, ...]]: ...

    def resolve_target(self, target: Any) -> list[str]: ...
    def controller_voters(self) -> list[str]: ...
    def coordinator_of(self, group: str) -> str: ...
    def crash(self, node: str, power_loss: bool) -> None: ...
    def shutdown(self, node: str) -> None: ...
    def restart(self, node: str) -> None: ...
    def pause(self, node: str) -> None: ...
    def resume(self, node: str) -> None: ...
    def cut(self, src: str, dst: str) -> None: ...
    def heal(self, src: str, dst: str) -> None: ...
    def reject(self, src: str, dst: str) -> None: ...
    def unreject(self, src: str, dst: str) -> None: ...
    def heal_all(self) -> None: ...
    def set_extra_delay(self, src: str, dst: str, extra_ms: float) -> None: ...
    def set_link_drop(self, src: str, dst: str, rate: float) -> None: ...
    def stall_fetcher(self, node: str, sources: list[str] | None, fetcher: int,
                      duration_s: float) -> None: ...
    def elect_preferred(self, partitions: list[str]) -> None: ...
    def reassign(self, partitions: list[str], replicas: list[int], throttle: int = 0
                 ) -> None: ...
    def add_broker(self, node: str) -> None: ...
    def decommission(self, node: str) -> None: ...
    def create_topic(self, topic: str) -> None: ...
    def add_partitions(self, topic: str, count: int) -> None: ...
    def controlled_shutdown(self, node: str, down_s: float) -> None: ...
    def corrupt_disk(self, node: str, topic: str, partition: int, offset: int
                     ) -> tuple[int, str]: ...
    def trace_fault(self, fault: str, phase: str, target: list[str], **extra: Any) -> None: ...
    def after(self, delay_s: float, fn: Any) -> None: ...


def _links(world: World, nodes: list[str]) -> list[tuple[str, str]]:
    side = set(nodes)
    out = []
    for a in nodes:
        for b in world.node_names:
            if b not in side:
                out.append((a, b))
                out.append((b, a))
    return out


def _follower(world: World, spec: str) -> list[str]:
    """``follower:<topic>-<p>[/<k>]``: the k-th replica (0 when not given) of the partition
    that is not its current leader (assignment order, k taken modulo their count); none
    without a leader."""
    tp, slash, k = spec[len("follower:"):].partition("/")
    k = k if slash else "0"
    topic, _, p = tp.rpartition("-")
    leader = world.resolve_target(f"leader:{tp}")
    replicas = world.assignment.get((topic, int(p)), ())
    others = [f"broker-{b}" for b in replicas if f"broker-{b}" not in leader]
    if not leader or not others:
        return []
    return [others[int(k) % len(others)]]


def resolve(world: World, target: Any) -> list[str]:
    """The nodes a plan entry's target names when the fault starts."""
    if not target:
        return []
    nodes: list[str] = []
    for t in target if isinstance(target, list) else [target]:
        t = str(t)
        if t.startswith("follower:"):
            nodes += _follower(world, t)
        elif t.startswith("leader:") or t == "controller":
            # "controller": the active one when the controllers are a quorum
            nodes += world.resolve_target(t)
        elif t.startswith("coordinator:"):
            nodes += world.resolve_target(world.coordinator_of(t[len("coordinator:"):]))
        else:
            nodes.append(t)
    return nodes


def start_fault(world: World, f: dict[str, Any]) -> None:
    kind = f["fault"]
    if kind == "preferred_election":   # names partitions, not nodes
        target = f.get("target", "")
        names = [str(t) for t in (target if isinstance(target, list) else [target])]
        names = [] if "all" in names or names == [""] else names
        world.trace_fault(kind, "start", names or ["all"])
        world.elect_preferred(names)
        return
    if kind in ("reassign", "cancel_reassign"):
        target = f.get("target", "")
        names = [str(t) for t in (target if isinstance(target, list) else [target])]
        replicas = [int(b) for b in f.get("replicas", [])] if kind == "reassign" else []
        dur = float(f.get("duration_s", 0.0))
        extra: dict[str, Any] = {"replicas": replicas} if kind == "reassign" else {}
        throttle = int(f.get("throttle", 0)) if kind == "reassign" else 0
        if throttle > 0:
            extra["throttle"] = throttle
        world.trace_fault(kind, "start", names, duration_s=dur, **extra)
        world.reassign(names, replicas, throttle)
        if kind == "reassign" and dur > 0:
            def cancel() -> None:   # --cancel, if it is still running then
                world.trace_fault(kind, "stop", names)
                world.reassign(names, [])
            world.after(dur, cancel)
        return
    if kind in TOPIC_STEPS:
        topic = str(f.get("target", ""))
        if kind == "create_topic":
            world.trace_fault(kind, "start", [topic])
            world.create_topic(topic)
        else:
            # the new count as ``count``: a trace's ``partitions`` is a list (assignments)
            world.trace_fault(kind, "start", [topic], count=int(f.get("partitions", 0)))
            world.add_partitions(topic, int(f.get("partitions", 0)))
        return
    if kind in QUORUM_FAULTS:
        _quorum_fault(world, f)
        return
    nodes = resolve(world, f.get("target", ""))
    if kind == "corrupt_disk":
        _corrupt_disk(world, f, nodes)
        return
    dur = float(f.get("duration_s", 0.0))
    world.trace_fault(kind, "start", nodes, duration_s=dur)
    stop: Any = None
    if kind in ("crash", "power_loss", "shutdown"):
        for n in nodes:
            if kind == "shutdown":
                world.shutdown(n)
            else:
                world.crash(n, power_loss=(kind == "power_loss"))
        def stop() -> None:
            for n in nodes:
                world.restart(n)
    elif kind == "controlled_shutdown":
        for n in nodes:   # it restarts by itself, duration_s after it stopped
            world.controlled_shutdown(n, dur)
    elif kind == "pause":
        for n in nodes:
            world.pause(n)
        def stop() -> None:
            for n in nodes:
                world.resume(n)
    elif kind in ("isolate", "partition"):
        links = _links(world, nodes)
        for a, b in links:
            world.cut(a, b)
        def stop() -> None:
            for a, b in links:
                world.heal(a, b)
    elif kind == "partition_reject":
        rejected = _links(world, nodes)
        for a, b in rejected:
            world.reject(a, b)
        def stop() -> None:
            for a, b in rejected:
                world.unreject(a, b)
    elif kind == "cut":
        pairs = [(nodes[0], nodes[1])] if len(nodes) == 2 else []
        for a, b in pairs:
            world.cut(a, b)
        def stop() -> None:
            for a, b in pairs:
                world.heal(a, b)
    elif kind in ("delay", "drop"):
        links = _links(world, nodes)
        for a, b in links:
            if kind == "delay":
                world.set_extra_delay(a, b, float(f.get("extra_ms", 0.0)))
            else:
                world.set_link_drop(a, b, float(f.get("rate", 0.0)))
        def stop() -> None:
            for a, b in links:
                if kind == "delay":
                    world.set_extra_delay(a, b, 0.0)
                else:
                    world.set_link_drop(a, b, 0.0)
    elif kind == "stall_fetcher":
        sources = resolve(world, f.get("source", "")) or None
        fetcher = int(f.get("fetcher_id", -1))
        for n in nodes:   # without a duration: until the heal
            world.stall_fetcher(n, sources, fetcher, dur if dur > 0 else float("inf"))
        def stop() -> None:
            for n in nodes:
                world.stall_fetcher(n, sources, fetcher, 0.0)
    elif kind in ("add_broker", "decommission", "restart", "resume"):
        act = {"add_broker": world.add_broker, "decommission": world.decommission,
               "restart": world.restart, "resume": world.resume}[kind]
        for n in nodes:
            act(n)
    elif kind == "heal":
        world.heal_all()
    if stop is not None and dur > 0:
        def finish() -> None:
            world.trace_fault(kind, "stop", nodes)
            stop()
        world.after(dur, finish)


def _corrupt_disk(world: World, f: dict[str, Any], nodes: list[str]) -> None:
    """Damage one record of ``topic_partition`` on each target broker's disk, traced per
    broker: ``start`` with the offset damaged, or ``skipped`` with why nothing was."""
    tp = str(f.get("topic_partition", ""))
    topic, _, p = tp.rpartition("-")
    wanted = int(f.get("offset", -1))
    if not nodes:
        world.trace_fault("corrupt_disk", "skipped", [], topic_partition=tp, offset=wanted,
                          reason=f"{f.get('target')!s} names no broker now")
        return
    for n in nodes:
        offset, why = world.corrupt_disk(n, topic, int(p), wanted)
        if offset >= 0:
            world.trace_fault("corrupt_disk", "start", [n], topic_partition=tp, offset=offset)
        else:
            world.trace_fault("corrupt_disk", "skipped", [n], topic_partition=tp,
                              offset=wanted, reason=why)


def _voter_links(voters: list[str], nodes: list[str]) -> list[tuple[str, str]]:
    """Both directions of every link between a node of ``nodes`` and another voter."""
    out = []
    for a in nodes:
        for b in voters:
            if b != a and not (b in nodes and b < a):   # each pair once
                out += [(a, b), (b, a)]
    return out


def majority_to_lose(world: World) -> list[str]:
    """``lose_quorum``'s default target: the voters other than the active controller (id
    order), then the active one, as many as make a majority."""
    voters = world.controller_voters()
    active = world.resolve_target("controller")
    order = [v for v in voters if v not in active] + [v for v in voters if v in active]
    return order[:len(voters) // 2 + 1]


def _quorum_fault(world: World, f: dict[str, Any]) -> None:
    """``isolate_controller`` and ``lose_quorum`` (see the module note), traced with the
    voters they hit (none: no active controller to isolate now, traced as started on no
    node) and their ``scope`` / ``how``."""
    kind = f["fault"]
    dur = float(f.get("duration_s", 0.0))
    voters = world.controller_voters()
    links: list[tuple[str, str]] = []
    crashed: list[str] = []
    if kind == "isolate_controller":
        nodes = resolve(world, f.get("target", "") or "controller")[:1]
        scope = str(f.get("scope", "voters"))
        links = _links(world, nodes) if scope == "all" else _voter_links(voters, nodes)
        world.trace_fault(kind, "start", nodes, duration_s=dur, scope=scope)
    else:
        nodes = resolve(world, f.get("target", "")) or majority_to_lose(world)
        how = str(f.get("how", "crash"))
        world.trace_fault(kind, "start", nodes, duration_s=dur, how=how)
        if how == "isolate":
            links = _voter_links(voters, nodes)
        else:
            crashed = nodes
    for a, b in links:
        world.cut(a, b)
    for n in crashed:
        world.crash(n, power_loss=False)
    if dur <= 0:
        return   # until the heal

    def finish() -> None:
        world.trace_fault(kind, "stop", nodes)
        for a, b in links:
            world.heal(a, b)
        for n in crashed:
            world.restart(n)
    world.after(dur, finish)
