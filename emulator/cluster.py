"""Cluster assembly and one run: scenario + seed -> trace.

A run has three phases, each traced as a ``phase`` event:

1. ``workload`` (``duration_s``): producers produce, consumers consume, the fault plan
   (scripted, or generated from the seed by a nemesis) is applied;
2. ``heal``: every fault stops — partitions heal, paused nodes resume, crashed nodes
   restart — and the cluster must converge within ``heal_s`` (TigerBeetle's liveness
   mode, FoundationDB's quiet-database check): every partition has a leader, ISR = AR,
   HW = LEO on every replica, no producer has batches left to deliver, every consumer
   group has read up to the HW. It is checked every second; the run ends when two
   consecutive checks find the cluster converged, or at the bound;
3. ``final``: a ``convergence`` event per partition and the ``final_log`` of every replica.

The run is a function of (scenario, seed, code version): one :class:`RngTree` seeds the
network, the nemesis and each client by name.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import random
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import trio
import trio.testing

from actors.admin import Admin
from actors.broker import Broker
from actors.consumer import Consumer, ConsumerConfig
from actors.controller import Controller, ControllerStore, PartitionRecord
from actors.coordinator import OFFSETS_TOPIC, GroupCoordinator, partition_for
from actors.core import Machine
from actors.eras import QUORUM_BUGS, rules_for
from actors.fetcher import REPLICA_MANAGER, FetcherConfig, ReplicaFetcherThread
from actors.log import BrokerDisk, NoDisk, PartitionLog
from actors.messages import (
    AlterPartitionReassignments,
    ControlledShutdown,
    CreatePartitions,
    CreateTopics,
    ElectLeaders,
    FetcherStall,
    ReplicationThrottle,
    UnregisterBroker,
)
from actors.nodes import CONTROLLER_ID_BASE, controller_node
from actors.producer import Producer, ProducerConfig
from actors.quorum_controller import (
    ControllerDisk,
    MetadataObserver,
    QuorumController,
    QuorumView,
)
from actors.raft.config import raft_rules_for
from actors.replica import Replica, ReplicaConfig
from actors.replica_manager import ReplicaManager
from emulator.choice import Driver, Oracle, ScriptedOracle, Window
from emulator.digest import History, cluster_digest
from emulator.network import DelayDist, Network
from emulator.rng import RngTree
from emulator.scenario import consumer_node, producer_node
from emulator.scheduler import Node, Scheduler
from emulator.tcp import tcp_config
from faults.nemesis import generate
from faults.plan import start_fault
from traces.writer import TraceWriter

US = 1_000_000
FINAL_LOG_CHUNK = 5000
#: the cyclic collector's thresholds during a run (see :func:`_young_gc_only`)
#: the admin client's ``default.api.timeout.ms`` and ``retry.backoff.ms`` (``_admin``)
ADMIN_TIMEOUT_MS = 60_000
ADMIN_RETRY_MS = 100
GC_YOUNG_THRESHOLD = 10_000
GC_FULL_EVERY = 100


@dataclass
class RunResult:
    trace: str | None
    digest: str
    events: int
    status: str
    sim_seconds: float
    wall_seconds: float
    delivered: int              # inbox deliveries: network frames and timer messages
    error: str | None = None
    frames: int = 0             # of the deliveries, network frames
    #: the signal that stopped the run (status ``aborted``): "SIGINT" or "SIGTERM"
    interrupted_by: str | None = None


class Cluster:
    """The simulated world: nodes, their disks, the network, and the fault hooks."""

    def __init__(self, sc: dict[str, Any], seed: int, writer: TraceWriter, *,
                 clock: str = "virtual", trace_messages: bool = False,
                 oracle: Oracle | None = None) -> None:
        self.sc = sc
        self.seed = seed
        self.rng = RngTree(seed)
        self.rules = rules_for(sc["protocol"], tuple(sc["bugs"]), tuple(sc["fixes"]))
        net = sc["network"]
        self.network = Network(self.rng.child("network"), DelayDist(**net["delay"]),
                               drop_rate=net["drop_rate"], corrupt_rate=net["corrupt_rate"],
                               tcp=tcp_config(net, sc["protocol"]))
        self.sched = Scheduler(self.network, writer, clock=clock,
                               trace_messages=trace_messages)
        self.writer = writer
        cl = sc["cluster"]
        self.broker_ids = tuple(range(1, cl["brokers"] + 1))
        #: spare brokers (``cluster.spare.brokers``): nodes that an add_broker step starts
        self.spare_ids = tuple(range(cl["brokers"] + 1, cl["brokers"] + cl["spare.brokers"] + 1))
        self.disks = {b: BrokerDisk(writeback_ms=cl["vm.dirty_writeback_centisecs"] * 10,
                                    expire_ms=cl["vm.dirty_expire_centisecs"] * 10)
                      for b in (*self.broker_ids, *self.spare_ids)}
        #: nodes that are not part of the cluster: spares not added yet, decommissioned
        #: brokers; never started nor restarted (the heal leaves them alone)
        self.absent: set[str] = {f"broker-{b}" for b in self.spare_ids}
        #: reassignment throttles in force: partition -> (bytes/s, leader-throttled
        #: brokers, follower-throttled brokers); and what each broker was last sent
        self.throttles: dict[tuple[str, int], tuple[int, tuple[int, ...], tuple[int, ...]]] = {}
        self._throttle_sent: dict[int, tuple[int, set[tuple[str, int]], int,
                                             set[tuple[str, int]]]] = {}
        self.store = ControllerStore()
        #: the replica lists the cluster was created with (reassignments change the
        #: controller's, :attr:`assignment`)
        self.initial_assignment: dict[tuple[str, int], tuple[int, ...]] = {}
        for t in sc["topics"]:
            if not t["create_at_start"]:
                continue   # a create_topic step creates it
            rf = t["replication.factor"]
            for p in range(t["partitions"]):
                # Kafka's round-robin replica assignment (no racks), starting at p
                replicas = tuple(self.broker_ids[(p + i) % len(self.broker_ids)]
                                 for i in range(rf))
                self.initial_assignment[(t["name"], p)] = replicas
                self.store.partitions[(t["name"], p)] = PartitionRecord(
                    t["name"], p, replicas, t["min.insync.replicas"],
                    t["unclean.leader.election.enable"])
        self.topic_cfg = {t["name"]: t for t in sc["topics"]}
        self._create_offsets_topic()
        #: the partitions every broker has a replica machine for: those of the controller,
        #: and those a create_topic / add_partitions step asked for (idle until created)
        self.partition_names: set[tuple[str, int]] = set(self.store.partitions)
        #: the controller quorum (``cluster.controller_quorum``; none: the single controller
        #: node "controller"): voter ids, their nodes and disks; ``store`` is then the
        #: committed metadata as the controllers replay it (:class:`QuorumView`)
        self.voters = tuple(CONTROLLER_ID_BASE + i
                            for i in range(cl.get("controller_quorum", 0)))
        self.controller_nodes = [controller_node(v) for v in self.voters]
        self.controller_disks = {v: ControllerDisk() for v in self.voters}
        self.node_names: list[str] = (self.controller_nodes or ["controller"]) + [
            f"broker-{b}" for b in (*self.broker_ids, *self.spare_ids)]
        self._build_nodes()
        self.plan: list[dict[str, Any]] = list(sc["faults"]["plan"])
        self.plan += generate(sc, self.rng.child("nemesis"), swarm=sc["faults"]["swarm"])
        self.plan.sort(key=lambda f: float(f["at_s"]))
        self.phase = "workload"
        # choice points (emulator.choice): an explorer's oracle, or the schedule the
        # scenario carries (a witness of isrlab explore)
        explore = sc.get("explore")
        if oracle is None and explore is not None and "choices" in explore:
            oracle = ScriptedOracle(explore["choices"])
        if oracle is not None:
            if explore is None:
                raise ValueError("choice points need the scenario's [explore] table")
            history = History()
            writer.tap = history
            self.sched.chooser = Driver(self, Window.of(explore), oracle,
                                        lambda: cluster_digest(self.sched, self.network,
                                                               self.phase, history))

    # -- assembly ----------------------------------------------------------------------------
    def _create_offsets_topic(self) -> None:
        """``__consumer_offsets``: Kafka's internal topic (``offsets.topic.num.partitions``,
        ``offsets.topic.replication.factor``; compacted, min ISR 1, unclean election off),
        created with the cluster. Only the partitions that the scenario's groups map to
        exist: the others would be idle and change nothing (docs/fidelity.md)."""
        cl = self.sc["cluster"]
        n = cl["offsets.topic.num.partitions"]
        rf = cl["offsets.topic.replication.factor"]
        used = sorted({partition_for(c["group"], n) for c in self.sc["consumers"]})
        if not used:
            return
        self.topic_cfg[OFFSETS_TOPIC] = {
            "name": OFFSETS_TOPIC, "partitions": n, "replication.factor": rf,
            "min.insync.replicas": 1, "unclean.leader.election.enable": False,
            "segment.bytes": 104857600, "segment.ms": 604800000, "retention.ms": -1,
            "retention.bytes": -1}
        for p in used:
            replicas = tuple(self.broker_ids[(p + i) % len(self.broker_ids)] for i in range(rf))
            self.initial_assignment[(OFFSETS_TOPIC, p)] = replicas
            self.store.partitions[(OFFSETS_TOPIC, p)] = PartitionRecord(
                OFFSETS_TOPIC, p, replicas, 1, False)

    @property
    def assignment(self) -> dict[tuple[str, int], tuple[int, ...]]:
        """Each partition's replica list now (the controller's: with a reassignment in
        progress, its target replicas followed by the removing ones)."""
        return {tp: p.replicas for tp, p in self.store.partitions.items()}

    def coordinator_of(self, group: str) -> str:
        """``leader:__consumer_offsets-<p>`` of the group's partition (a fault target)."""
        n = self.sc["cluster"]["offsets.topic.num.partitions"]
        return f"leader:{OFFSETS_TOPIC}-{partition_for(group, n)}"

    def _replica_cfg(self, topic: dict[str, Any]) -> ReplicaConfig:
        cl = self.sc["cluster"]
        return ReplicaConfig(
            replica_lag_time_max_ms=cl["replica.lag.time.max.ms"],
            replica_lag_max_messages=cl["replica.lag.max.messages"],
            replica_fetch_wait_max_ms=cl["replica.fetch.wait.max.ms"],
            replica_fetch_min_bytes=cl["replica.fetch.min.bytes"],
            replica_fetch_max_records=cl["replica.fetch.max.records"],
            replica_fetch_backoff_ms=cl["replica.fetch.backoff.ms"],
            replica_socket_timeout_ms=cl["replica.socket.timeout.ms"],
            hw_checkpoint_interval_ms=cl["replica.high.watermark.checkpoint.interval.ms"],
            log_flush_interval_messages=cl["log.flush.interval.messages"],
            log_flush_interval_ms=cl["log.flush.interval.ms"],
            retention_check_interval_ms=cl["log.retention.check.interval.ms"],
            min_insync_replicas=topic["min.insync.replicas"],
            segment_bytes=topic["segment.bytes"], segment_ms=topic["segment.ms"],
            retention_ms=topic["retention.ms"], retention_bytes=topic["retention.bytes"],
            invariants=self.sc["invariants"])

    def _build_nodes(self) -> None:
        sc = self.sc
        cl = sc["cluster"]
        rules = self.rules

        def make_controller(store: ControllerStore) -> Controller:
            return Controller(
                store, rules, brokers=self.broker_ids,
                session_timeout_ms=cl["broker.session.timeout.ms"], invariants=sc["invariants"],
                auto_leader_rebalance=cl["auto.leader.rebalance.enable"],
                imbalance_check_interval_ms=cl["leader.imbalance.check.interval.seconds"] * 1000,
                imbalance_per_broker_pct=cl["leader.imbalance.per.broker.percentage"])

        if self.voters:
            self._build_quorum(make_controller)
        else:
            def controller_factory(node: Node) -> list[Machine]:
                return [make_controller(self.store)]
            self.sched.add_node(Node("controller", self.store, controller_factory))

        every = (*self.broker_ids, *self.spare_ids)
        for b in every:
            def broker_factory(node: Node, b: int = b) -> list[Machine]:
                # A broker hosts the partitions whose logs are on its disk: at first start
                # those of the initial assignment; later, what reassignments created and
                # did not delete. Every other partition has an idle replica machine, which
                # a reassignment adding this broker turns into a replica.
                disk = self.disks[b]
                if node.incarnation == 1:
                    for tp, reps in sorted(self.initial_assignment.items()):
                        if b in reps:
                            disk.log(*tp)
                hosted = sorted(disk.logs)
                clean = disk.clean_shutdown
                observer = self._metadata_observer(node, b) if self.voters else None
                machines: list[Machine] = [Broker(
                    node.name, b, disk, incarnation=node.incarnation, hosted=hosted,
                    heartbeat_interval_ms=cl["broker.heartbeat.interval.ms"],
                    heartbeat_timeout_ms=cl["broker.session.timeout.ms"] // 2,
                    controllers=tuple(self.controller_nodes), observer=observer)]
                if observer is not None:
                    machines.append(observer)
                replicas = [Replica(node.name, b, disk.logs.get(tp) or PartitionLog(*tp), rules,
                                    self._replica_cfg(self.topic_cfg[tp[0]]),
                                    clean_start=clean or node.incarnation == 1,
                                    hosted=tp in disk.logs)
                            for tp in sorted(self.partition_names)]
                coordinator = GroupCoordinator(
                    node.name, b, node.incarnation,
                    num_partitions=cl["offsets.topic.num.partitions"],
                    commit_timeout_ms=cl["offsets.commit.timeout.ms"])
                manager = ReplicaManager(node.name, b, replicas, every, FetcherConfig(
                    num_replica_fetchers=cl["num.replica.fetchers"],
                    replica_fetch_wait_max_ms=cl["replica.fetch.wait.max.ms"],
                    replica_fetch_min_bytes=cl["replica.fetch.min.bytes"],
                    replica_socket_timeout_ms=cl["replica.socket.timeout.ms"],
                    replica_fetch_backoff_ms=cl["replica.fetch.backoff.ms"]), coordinator,
                    disk)
                # dynamic configs live in the metadata: a restarted broker keeps its throttle
                (manager.leader_quota.rate, manager.leader_quota.throttled,
                 manager.follower_quota.rate,
                 manager.follower_quota.throttled) = self._throttle_of(b)
                machines += manager.machines()
                disk.clean_shutdown = False   # running: an unclean stop from here on
                return machines
            self.sched.add_node(Node(f"broker-{b}", self.disks[b], broker_factory))

        stop_ms = int(sc["duration_s"] * 1000)
        for i, p in enumerate(sc["producers"]):
            t = self.topic_cfg[p["topic"]]
            pcfg = ProducerConfig(
                topic=p["topic"], partitions=t["partitions"] if t["create_at_start"] else 0,
                acks=p["acks"], rate=p["rate"], metadata_max_age_ms=p["metadata.max.age.ms"],
                keys=p["keys"], partitioner=p["partitioner"], stop_ms=stop_ms,
                enable_idempotence=p["enable.idempotence"], retries=p["retries"],
                max_in_flight=p["max.in.flight.requests.per.connection"],
                linger_ms=p["linger.ms"], batch_size=p["batch.size"],
                retry_backoff_ms=p["retry.backoff.ms"],
                reconnect_backoff_ms=p["reconnect.backoff.ms"],
                reconnect_backoff_max_ms=p["reconnect.backoff.max.ms"],
                request_timeout_ms=p["request.timeout.ms"],
                delivery_timeout_ms=p["delivery.timeout.ms"])
            name = producer_node(i)

            def producer_factory(node: Node, i: int = i, pcfg: ProducerConfig = pcfg
                                 ) -> list[Machine]:
                return [Producer(node.name, i, pcfg,
                                 self.rng.child(f"{node.name}/{node.incarnation}"),
                                 brokers=self.broker_ids,
                                 connection_rng=self._connection_rng(node))]
            self.sched.add_node(Node(name, NoDisk(), producer_factory))
            self.node_names.append(name)

        if sc.get("admin"):
            actions = list(sc["admin"])

            def admin_factory(node: Node) -> list[Machine]:
                return [Admin(node.name, actions, brokers=self.broker_ids,
                              rng=self._connection_rng(node))]
            self.sched.add_node(Node("admin", NoDisk(), admin_factory))
            self.node_names.append("admin")

        self.consumers: list[str] = []
        for c in sc["consumers"]:
            t = self.topic_cfg[c["topic"]]
            for m in range(c["members"]):
                ccfg = ConsumerConfig(
                    group=c["group"], topic=c["topic"],
                    partitions=t["partitions"] if t["create_at_start"] else 0, member=m,
                    metadata_max_age_ms=c["metadata.max.age.ms"],
                    reconnect_backoff_ms=c["reconnect.backoff.ms"],
                    reconnect_backoff_max_ms=c["reconnect.backoff.max.ms"],
                    members=c["members"], assignor=c["partition.assignment.strategy"],
                    auto_offset_reset=c["auto.offset.reset"],
                    auto_commit_interval_ms=c["auto.commit.interval.ms"],
                    session_timeout_ms=c["session.timeout.ms"],
                    heartbeat_interval_ms=c["heartbeat.interval.ms"],
                    fetch_max_wait_ms=c["fetch.max.wait.ms"],
                    max_poll_records=c["max.poll.records"],
                    offsets_topic_partitions=cl["offsets.topic.num.partitions"])
                name = consumer_node(c["group"], m)

                def consumer_factory(node: Node, ccfg: ConsumerConfig = ccfg
                                     ) -> list[Machine]:
                    return [Consumer(node.name, ccfg, brokers=self.broker_ids,
                                     incarnation=node.incarnation,
                                     connection_rng=self._connection_rng(node))]
                self.sched.add_node(Node(name, NoDisk(), consumer_factory))
                self.node_names.append(name)
                self.consumers.append(name)

    def _build_quorum(self, make_controller: Callable[[ControllerStore], Controller]) -> None:
        """One :class:`QuorumController` node per voter: every one starts from the
        cluster's bootstrap metadata (the initial partitions, as a bootstrap checkpoint
        gives them) and replays the committed log over it."""
        base = copy.deepcopy(self.store)
        self.quorum_view = QuorumView(self.store)
        raft_rules = raft_rules_for(self.sc["protocol"], tuple(
            b for b in self.sc["bugs"] if b in QUORUM_BUGS))
        self._metadata_base, self._raft_rules = base, raft_rules
        for v in self.voters:
            def factory(node: Node, v: int = v) -> list[Machine]:
                return [QuorumController(
                    node.name, v, self.voters, self.controller_disks[v], base,
                    self.quorum_view, make_controller,
                    self.rng.child(f"{node.name}/{node.incarnation}/raft"), raft_rules)]
            self.sched.add_node(Node(controller_node(v), self.controller_disks[v], factory))
        self.sched.route = self._route_to_controller

    def _metadata_observer(self, node: Node, b: int) -> MetadataObserver:
        """Broker ``b``'s Raft observer of the metadata log: from the bootstrap metadata,
        its log in memory (refetched from offset 0 after a restart)."""
        return MetadataObserver(node.name, b, self.voters, self._metadata_base,
                                self.rng.child(f"{node.name}/{node.incarnation}/raft"),
                                self._raft_rules)

    def _route_to_controller(self, m: Machine, name: str) -> str:
        """A frame a broker's actor sends to "controller" goes to the controller its
        broker believes active (Kafka's ``BrokerToControllerChannelManager``)."""
        node = self.sched.nodes.get(m.node)
        broker = node.machines.get("broker") if node is not None else None
        if isinstance(broker, Broker):
            return broker.controller_node
        return self.active_controller() or self.controller_nodes[0]

    def active_controller(self) -> str:
        """The node of the controller serving as active now ("controller" without a
        quorum; with one: the active controller, else the Raft leader, else "")."""
        if not self.voters:
            return "controller"
        leader = ""
        for name in self.controller_nodes:
            n = self.sched.nodes[name]
            m = n.machines.get("controller") if n.state != "down" else None
            if isinstance(m, QuorumController):
                if m.active:
                    return name
                if not leader and m.client is not None and m.client.quorum.is_leader():
                    leader = name
        return leader

    def _controller_address(self) -> tuple[str, str]:
        return (self.active_controller() or self.controller_nodes[0], "controller")

    def _connection_rng(self, node: Node) -> random.Random:
        """A client's reconnect-backoff jitter: its own stream, so that a disconnect does not
        shift the producer's key draws."""
        return self.rng.child(f"{node.name}/{node.incarnation}/connections")

    # -- the World protocol (faults.plan) ----------------------------------------------------------
    def start_fault(self, f: dict[str, Any]) -> None:
        """Start one fault now (``faults.plan.start_fault``): the choice points' way in."""
        start_fault(self, f)

    def resolve_target(self, target: Any) -> list[str]:
        if isinstance(target, list):
            return [str(t) for t in target]
        if not target:
            return []
        if target == "controller" and self.voters:
            active = self.active_controller()
            return [active] if active else []
        if isinstance(target, str) and target.startswith("leader:"):
            topic, _, p = target[7:].rpartition("-")
            rec = self.store.partitions.get((topic, int(p)))
            return [f"broker-{rec.leader}"] if rec is not None and rec.leader >= 0 else []
        return [str(target)]

    def controller_voters(self) -> list[str]:
        """The controller quorum's voter nodes (none without a quorum)."""
        return list(self.controller_nodes)

    def crash(self, node: str, power_loss: bool) -> None:
        if node in self.sched.nodes:
            self.sched.crash_node(node, power_loss=power_loss)

    def shutdown(self, node: str) -> None:
        """A clean stop: flush every log, write the checkpoints, leave the marker."""
        n = self.sched.nodes.get(node)
        if n is None or n.state == "down":
            return
        if node.startswith("broker-"):
            disk = self.disks[int(node[7:])]
            for m in n.machines.values():
                if isinstance(m, Replica):
                    m.log.flush(m.now_ms)
                    m.log.hw_checkpoint = m.hw
                    m.log.log_start_checkpoint = m.log.log_start_offset
            self.sched.crash_node(node, power_loss=False, kind="clean_shutdown")
            disk.clean_shutdown = True
        else:
            self.sched.crash_node(node, power_loss=False, kind="clean_shutdown")

    def restart(self, node: str) -> None:
        if node in self.sched.nodes and node not in self.absent:
            self.sched.restart_node(node)

    def add_broker(self, node: str) -> None:
        """A spare broker joins: its process starts and registers with its broker id. It
        hosts nothing until a reassignment moves replicas to it."""
        if node not in self.absent or self.sched.nodes[node].incarnation > 0:
            return   # not a spare, or one added (and maybe decommissioned) before
        self.absent.discard(node)
        self.sched.emit(node, "sim", "node_start")
        self.sched.start_node(node)

    def decommission(self, node: str) -> None:
        """Decommission a broker as an operator does: ``kafka-reassign-partitions`` moves
        each of its replicas to the registered broker that hosts the fewest (then the
        lowest id) and is not already a replica; once it hosts nothing (polled every
        100 ms, through the heal too) it stops cleanly, is unregistered from the controller
        and never comes back. When some replica has nowhere to go (every registered,
        unfenced broker left already holds one of its partition), the decommission is
        traced as ``rejected`` with those partitions and nothing moves, as
        ``kafka-reassign-partitions`` refuses a plan with a replication factor above the
        brokers available: never an operation that waits for ever."""
        if not node.startswith("broker-") or node in self.absent:
            return
        b = int(node[7:])
        st = self.store
        load = {x: 0 for x in sorted(st.brokers)
                if x != b and not st.brokers[x].fenced and f"broker-{x}" not in self.absent}
        for rec in st.partitions.values():
            for r in rec.assignment.target:
                if r in load:
                    load[r] += 1
        moves = []
        stuck = []
        for tp in sorted(st.partitions):
            target = st.partitions[tp].assignment.target
            if b not in target:
                continue
            spare = sorted((n, x) for x, n in load.items() if x not in target)
            if not spare:
                stuck.append(f"{tp[0]}-{tp[1]}")
                continue
            dest = spare[0][1]
            load[dest] += 1
            moves.append((tp[0], tp[1], tuple(dest if r == b else r for r in target)))
        if stuck:
            # nowhere to move some replica (fewer registered, unfenced brokers left than its
            # replication factor): kafka-reassign-partitions refuses the whole plan
            # (InvalidReplicationFactorException), so nothing moves and the broker stays
            self.sched.emit("sim", "nemesis", "decommission", broker=b, phase="rejected",
                            partitions=stuck, available=sorted(load),
                            error="INVALID_REPLICATION_FACTOR")
            return
        self.sched.emit("sim", "nemesis", "decommission", broker=b, phase="start",
                        moves=[f"{t}-{p}:{','.join(map(str, r))}" for t, p, r in moves])
        if moves:
            self.sched.inject(self._controller_address(),
                              AlterPartitionReassignments(tuple(moves), 0))

        def poll() -> None:
            if any(b in rec.replicas for rec in st.partitions.values()):
                self.sched.at(self.sched.now + US // 10, poll)
                return
            if self.sched.nodes[node].state != "down":
                self.shutdown(node)
            self.absent.add(node)
            self.sched.inject(self._controller_address(), UnregisterBroker(b))
            self.sched.emit("sim", "nemesis", "decommission", broker=b, phase="done")
        self.sched.at(self.sched.now + US // 10, poll)

    def controlled_shutdown(self, node: str, down_s: float) -> None:
        """Stop broker ``node`` as an operator's SIGTERM does with
        ``controlled.shutdown.enable``: the broker first has the controller move its
        leaderships and take it out of the ISRs, then stops cleanly (checked every 10 ms);
        it restarts ``down_s`` after it stopped (never, with 0). Without
        ``controlled.shutdown.enable``: a clean stop at once."""
        n = self.sched.nodes.get(node)
        if n is None or n.state == "down" or not node.startswith("broker-"):
            return
        cl = self.sc["cluster"]
        incarnation = n.incarnation

        def stop() -> None:
            self.shutdown(node)
            if self.phase != "workload":
                self.restart(node)   # it finished stopping after the heal began: back now
            elif down_s > 0:
                self.after(down_s, lambda: self.restart(node))

        if not cl["controlled.shutdown.enable"]:
            stop()
            return
        self.sched.inject((node, "broker"), ControlledShutdown(
            cl["controlled.shutdown.max.retries"], cl["controlled.shutdown.retry.backoff.ms"]))

        def poll() -> None:
            m = n.machines.get("broker") if n.state != "down" else None
            if n.incarnation != incarnation or not isinstance(m, Broker):
                return
            if m.shutdown_state == "ready":
                stop()
            else:
                self.sched.at(self.sched.now + US // 100, poll)
        self.sched.at(self.sched.now + US // 100, poll)

    def pause(self, node: str) -> None:
        if node in self.sched.nodes:
            self.sched.pause_node(node)

    def resume(self, node: str) -> None:
        if node in self.sched.nodes:
            self.sched.resume_node(node)

    def cut(self, src: str, dst: str) -> None:
        self.network.cut(src, dst)

    def heal(self, src: str, dst: str) -> None:
        self.network.heal(src, dst)

    def reject(self, src: str, dst: str) -> None:
        self.network.reject(src, dst)

    def unreject(self, src: str, dst: str) -> None:
        self.network.unreject(src, dst)

    def heal_all(self) -> None:
        self.network.heal_all()

    def set_extra_delay(self, src: str, dst: str, extra_ms: float) -> None:
        self.network.set_extra_delay(src, dst, extra_ms)

    def set_link_drop(self, src: str, dst: str, rate: float) -> None:
        self.network.set_link_drop(src, dst, rate)

    def stall_fetcher(self, node: str, sources: list[str] | None, fetcher: int,
                      duration_s: float) -> None:
        """Stall (``duration_s`` > 0; 0 ends it) the fetcher threads of broker ``node``
        that fetch from ``sources`` (every leader when None) with id ``fetcher`` (-1: all).
        A stall without an end lasts until the heal."""
        n = self.sched.nodes.get(node)
        if n is None or n.state == "down":
            return
        ms = (0 if duration_s <= 0 else 10**12 if duration_s == float("inf")
              else max(1, int(duration_s * 1000)))
        for name, m in sorted(n.machines.items()):
            if (isinstance(m, ReplicaFetcherThread)
                    and (sources is None or f"broker-{m.leader}" in sources)
                    and fetcher in (-1, m.fetcher)):
                self.sched.inject((node, name), FetcherStall(ms))

    def corrupt_disk(self, node: str, topic: str, partition: int, offset: int
                     ) -> tuple[int, str]:
        """Damage the record at ``offset`` (-1: the last) of ``topic-partition`` on broker
        ``node``'s disk, whether its process is up or not: (the offset damaged, "") or
        (-1, why nothing was). The running replica shares the log with the disk, so its
        next read serves the damage and its next recovery meets it."""
        b = int(node[7:]) if node.startswith("broker-") and node[7:].isdigit() else -1
        log = self.disks[b].logs.get((topic, partition)) if b in self.disks else None
        if log is None:
            return -1, f"{node} hosts no log of {topic}-{partition}"
        damaged = log.corrupt(offset)
        if damaged is None:
            return -1, (f"{node}'s log of {topic}-{partition} has no record at offset "
                        f"{offset}" if offset >= 0 else f"{node}'s log of {topic}-{partition} "
                        f"is empty")
        return damaged, ""

    def elect_preferred(self, partitions: list[str]) -> None:
        """``kafka-leader-election --election-type preferred`` for ``partitions`` (names;
        none: every partition), delivered to the controller (``_admin``)."""
        parts = tuple(sorted((t, int(p)) for t, _, p in (x.rpartition("-") for x in partitions)))
        self._admin(ElectLeaders("preferred", parts, 0), lambda: self.sched.emit(
            "sim", "nemesis", "elect_leaders", election_type="preferred", trigger="request",
            results=[f"{t}-{p}:TIMEOUT" for t, p in parts] or ["*:TIMEOUT"]))

    def reassign(self, partitions: list[str], replicas: list[int], throttle: int = 0) -> None:
        """``kafka-reassign-partitions``: move ``partitions`` (names) to ``replicas`` (broker
        ids; none: ``--cancel``), one AlterPartitionReassignments to the controller. With
        ``throttle`` (bytes/s, ``--throttle``): the existing replicas are leader-throttled
        and the adding ones follower-throttled at that rate on every broker involved, until
        the move is over (``--verify``, checked every second, removes it)."""
        target = tuple(replicas)
        parts = tuple(sorted((t, int(p), target)
                             for t, _, p in (x.rpartition("-") for x in partitions)))
        if throttle > 0 and target:
            for t, p, _ in parts:
                rec = self.store.partitions.get((t, p))
                if rec is not None:
                    self.throttles[(t, p)] = (throttle, rec.replicas,
                                              tuple(b for b in target if b not in rec.replicas))
            self._push_throttles()
            self.sched.at(self.sched.now + US, self._verify_throttles)
        self._admin(AlterPartitionReassignments(parts, 0), lambda: self.sched.emit(
            "sim", "nemesis", "alter_reassignments",
            results=[f"{t}-{p}:TIMEOUT" for t, p, _ in parts],
            targets=[f"{t}-{p}:{','.join(map(str, r)) or 'cancel'}" for t, p, r in parts]))

    def _admin(self, msg: ElectLeaders | AlterPartitionReassignments,
               timed_out: Callable[[], None]) -> None:
        """An admin request to the active controller (``_when_controller``)."""
        self._when_controller(lambda active: self.sched.inject((active, "controller"), msg),
                              timed_out)

    def _when_controller(self, send: Callable[[str], None], timed_out: Callable[[], None],
                         waited_ms: int = 0) -> None:
        """``send(active)`` to the active controller now, or, while there is none (the
        controller down, or a quorum between leaders), as the admin client retries: every
        100 ms (``retry.backoff.ms``) for up to ``default.api.timeout.ms`` (60 s), then it
        gives up and ``timed_out`` traces it (Kafka's ``KafkaAdminClient`` retries a call
        that found no controller until its deadline)."""
        active = self.active_controller()
        if not active or self.sched.nodes[active].state == "down":
            if waited_ms >= ADMIN_TIMEOUT_MS:
                timed_out()
                return
            self.sched.at(self.sched.now + ADMIN_RETRY_MS * 1000, lambda: self._when_controller(
                send, timed_out, waited_ms + ADMIN_RETRY_MS))
            return
        send(active)

    def create_topic(self, topic: str) -> None:
        """``kafka-topics --create`` for a ``[[topics]]`` entry with ``create_at_start =
        false``: CreateTopics to the controller, which places its partitions."""
        t = self.topic_cfg[topic]
        self._to_controller(topic, t["partitions"], CreateTopics(
            topic, t["partitions"], t["replication.factor"], t["min.insync.replicas"],
            t["unclean.leader.election.enable"]))

    def add_partitions(self, topic: str, count: int) -> None:
        """``kafka-topics --alter --partitions count``: CreatePartitions to the controller
        (which refuses anything but an increase)."""
        self._to_controller(topic, count, CreatePartitions(topic, count))

    def _to_controller(self, topic: str, count: int, msg: CreateTopics | CreatePartitions
                       ) -> None:
        """Every running broker gets an idle replica machine for each partition the request
        may create (as a broker answers for any partition), then the request goes to the
        controller (``_when_controller``: retried while there is none, traced on giving
        up)."""
        self._when_controller(
            lambda active: self._create_partitions(topic, count, msg, active),
            lambda: self.sched.emit("sim", "nemesis", "create_partitions", topic=topic,
                                    request=type(msg).__name__, old=-1, count=count,
                                    error="TIMEOUT", replicas=[]))

    def _create_partitions(self, topic: str, count: int, msg: CreateTopics | CreatePartitions,
                           active: str) -> None:
        new = sorted((topic, p) for p in range(count) if (topic, p) not in self.partition_names)
        self.partition_names.update(new)
        for b in (*self.broker_ids, *self.spare_ids):
            node = self.sched.nodes[f"broker-{b}"]
            manager = node.machines.get(REPLICA_MANAGER)
            if not isinstance(manager, ReplicaManager):
                continue   # down: its next start builds them
            for tp in new:
                r = Replica(node.name, b, PartitionLog(*tp), self.rules,
                            self._replica_cfg(self.topic_cfg[tp[0]]), clean_start=True,
                            hosted=False)
                manager.add_replica(r)
                self.sched.add_machine(node.name, r, REPLICA_MANAGER)
        self.sched.inject((active, "controller"), msg)

    def _throttle_of(self, b: int) -> tuple[int, set[tuple[str, int]], int,
                                            set[tuple[str, int]]]:
        """Broker ``b``'s throttle: leader rate and partitions, follower rate and
        partitions (rates: the largest of the throttles that name it; -1: none)."""
        lead = {tp for tp, (_, ls, _) in self.throttles.items() if b in ls}
        follow = {tp for tp, (_, _, fs) in self.throttles.items() if b in fs}
        rate = max((r for tp, (r, ls, fs) in self.throttles.items() if b in ls or b in fs),
                   default=-1)
        return rate, lead, rate, follow

    def _push_throttles(self) -> None:
        """Send every broker whose throttle changed its new one (a dynamic config change)."""
        for b in (*self.broker_ids, *self.spare_ids):
            now = self._throttle_of(b)
            if now == self._throttle_sent.get(b, (-1, set(), -1, set())):
                continue
            self._throttle_sent[b] = now
            node = f"broker-{b}"
            if self.sched.nodes[node].state != "down":
                self.sched.inject((node, REPLICA_MANAGER), ReplicationThrottle(
                    now[0], now[2], tuple(sorted(now[1])), tuple(sorted(now[3]))))
            self.sched.emit("sim", "nemesis", "replication_throttle", broker=b, rate=now[0],
                            leader=[f"{t}-{p}" for t, p in sorted(now[1])],
                            follower=[f"{t}-{p}" for t, p in sorted(now[3])])

    def _verify_throttles(self) -> None:
        """``--verify``: the throttle of a move that is over is removed."""
        done = [tp for tp in self.throttles
                if not self.store.partitions[tp].assignment.reassigning]
        for tp in done:
            del self.throttles[tp]
        if done:
            self._push_throttles()
        if self.throttles:
            self.sched.at(self.sched.now + US, self._verify_throttles)

    def trace_fault(self, fault: str, phase: str, target: list[str], **extra: Any) -> None:
        self.sched.emit("sim", "nemesis", "fault", fault=fault, phase=phase, target=target,
                        **extra)

    def after(self, delay_s: float, fn: Callable[[], None]) -> None:
        at = self.sched.now + int(delay_s * US)
        heal_at = int(self.sc["duration_s"] * US)

        def guarded() -> None:
            if self.phase == "workload":
                fn()
        self.sched.at(min(at, heal_at), guarded)

    # -- phases -------------------------------------------------------------------------------
    def boot(self) -> None:
        for name in self.sched.nodes:
            if name not in self.absent:
                self.sched.start_node(name)
        self.sched.emit("sim", "sim", "phase", phase="workload")
        for f in self.plan:
            self.sched.at(int(float(f["at_s"]) * US), self._fault_starter(f))
        self.sched.at(int(self.sc["duration_s"] * US), self._heal)

    def _fault_starter(self, f: dict[str, Any]) -> Callable[[], None]:
        def start() -> None:
            if self.phase == "workload":
                start_fault(self, f)
        return start

    def _heal(self) -> None:
        self.phase = "heal"
        self.sched.emit("sim", "sim", "phase", phase="heal")
        # scripted faults timed after the workload phase (a shortened duration_s) never act:
        # said in the trace, not skipped silently
        end = float(self.sc["duration_s"])
        for f in self.plan:
            if float(f["at_s"]) >= end:
                target = f.get("target", "")
                self.trace_fault(str(f["fault"]), "skipped",
                                 [str(t) for t in target] if isinstance(target, list)
                                 else [str(target)], at_s=float(f["at_s"]),
                                 reason="after the workload phase")
        self.network.heal_all()
        for name, node in sorted(self.sched.nodes.items()):
            if name.startswith("broker-"):
                self.stall_fetcher(name, None, -1, 0.0)
            if node.state == "paused":
                self.sched.resume_node(name)
            elif node.state == "down" and name not in self.absent:
                self.sched.restart_node(name)
        self._heal_deadline = self.sched.now + int(self.sc["heal_s"] * US)
        self.sched.at(self.sched.now + US, self._check_convergence)

    def _replicas(self) -> list[tuple[tuple[str, int], int, Replica | None]]:
        """Every (partition, broker) of the current replica lists, with the broker's
        replica when it is up and hosts the partition."""
        out = []
        for tp, reps in sorted(self.assignment.items()):
            for b in reps:
                node = self.sched.nodes[f"broker-{b}"]
                m = node.machines.get(f"{tp[0]}-{tp[1]}")
                out.append((tp, b, m if isinstance(m, Replica) and m.hosted else None))
        return out

    def convergence(self) -> dict[tuple[str, int], str]:
        """Per partition: "" when converged, else what is still missing."""
        problems: dict[tuple[str, int], str] = {}
        by_tp: dict[tuple[str, int], list[tuple[int, Replica | None]]] = {}
        for tp, b, m in self._replicas():
            by_tp.setdefault(tp, []).append((b, m))
        for tp, reps in by_tp.items():
            rec = self.store.partitions[tp]
            why = ""
            if rec.leader < 0:
                why = "no leader"
            elif set(rec.isr) != set(rec.replicas):
                why = f"ISR {sorted(rec.isr)} != AR {sorted(rec.replicas)}"
            else:
                leos = {m.leo for _, m in reps if m is not None}
                hws = {m.hw for _, m in reps if m is not None}
                if any(m is None for _, m in reps):
                    why = "a replica is down"
                elif len(leos) != 1 or leos != hws:
                    why = f"HW {sorted(hws)} / LEO {sorted(leos)} differ"
                else:
                    hw = next(iter(hws))
                    for cname in self.consumers:
                        node = self.sched.nodes[cname]
                        c = node.machines.get("consumer")
                        if (isinstance(c, Consumer) and c.cfg.topic == tp[0]
                                and tp[1] in c.assigned and c.position.get(tp[1], -1) < hw):
                            why = f"{cname} at {c.position.get(tp[1], -1)} < HW {hw}"
                            if c.stuck is not None:   # check.crcs: the member reads no more
                                why += (f", stuck on a damaged record batch of partition "
                                        f"{c.stuck.partition} at offset {c.stuck.offset}")
                            break
            problems[tp] = why
        for name in sorted(self.sched.nodes):
            prod = self.sched.nodes[name].machines.get("producer")
            if isinstance(prod, Producer) and (prod.inflight or any(prod.queues.values())):
                # records still being retried: the cluster is not quiet yet
                pending = len(prod.inflight) + sum(len(q) for q in prod.queues.values())
                topic = prod.cfg.topic
                for tp in problems:
                    if tp[0] == topic and not problems[tp]:
                        problems[tp] = f"{name} still has {pending} batches to deliver"
        return problems

    def _check_convergence(self, confirming: bool = False) -> None:
        """Converged = two consecutive checks a second apart find nothing missing (a
        quiet database, not a lucky instant between two appends)."""
        problems = self.convergence()
        done = all(not v for v in problems.values())
        if (done and confirming) or self.sched.now >= self._heal_deadline:
            self._final()
        else:
            self.sched.at(self.sched.now + US, lambda: self._check_convergence(done))

    def _final(self) -> None:
        self.phase = "final"
        self.sched.emit("sim", "sim", "phase", phase="final")
        problems = self.convergence()
        for (topic, p), why in sorted(problems.items()):
            self.sched.emit("sim", "sim", "convergence", topic=topic, partition=p,
                            converged=not why, detail=why)
        for (topic, p), b, m in self._replicas():
            disk = self.disks[b]
            # a replica a reassignment added while its broker was down has no log yet
            log = disk.logs.get((topic, p)) or PartitionLog(topic, p)
            hw = m.hw if m is not None else log.hw_checkpoint
            epoch = m.leader_epoch if m is not None else log.epochs.latest_epoch()
            recs = [[r[0], r[1], r[2]] for r in log.records]
            for i in range(0, max(1, len(recs)), FINAL_LOG_CHUNK):
                self.sched.emit(f"broker-{b}", f"{topic}-{p}", "final_log", topic=topic,
                                partition=p, replica=b, log_start_offset=log.log_start_offset,
                                hw=hw, leo=log.log_end_offset, leader_epoch=epoch,
                                up=m is not None, records=recs[i:i + FINAL_LOG_CHUNK])
        self.sched.stop()


def run(sc: dict[str, Any], seed: int, out: str | None, *, clock: str = "virtual",
        writer: TraceWriter | None = None, trace_messages: bool = False,
        oracle: Oracle | None = None) -> RunResult:
    """Run a resolved scenario with ``seed``; always leaves a trace ending in run_end.
    ``trace_messages`` adds a line per message sent and received (emulator.msgtrace)."""
    wall0 = time.perf_counter()
    w = writer or TraceWriter(out)
    cluster = Cluster(sc, seed, w, clock=clock, trace_messages=trace_messages, oracle=oracle)
    w.start(seed=seed, scenario=sc, fault_plan=cluster.plan, protocol=sc["protocol"],
            **({"trace_messages": True} if trace_messages else {}))
    status, error = "ok", None
    extra: dict[str, Any] = {}
    stopped_by = "SIGINT"   # a KeyboardInterrupt not raised by watch_signals: Ctrl-C

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            async def watch_signals() -> None:
                nonlocal stopped_by
                with trio.open_signal_receiver(signal.SIGTERM) as sigs:
                    async for _ in sigs:
                        stopped_by = "SIGTERM"
                        raise KeyboardInterrupt
            try:
                nursery.start_soon(watch_signals)
            except (ValueError, RuntimeError):   # not the main thread: no signal handling
                pass
            await cluster.sched.run(cluster.boot)
            nursery.cancel_scope.cancel()

    try:
        with _young_gc_only():
            trio.run(main, clock=trio.testing.MockClock() if clock == "virtual" else None)
    except BaseException as raised:   # an actor raised: the trace must still end properly
        leaves = _leaves(raised)
        exc = leaves[0]
        if isinstance(exc, KeyboardInterrupt):
            if exc.args == ("SIGTERM",):   # cli.args.sigterm_interrupts, outside Trio
                stopped_by = "SIGTERM"
            status = "aborted"
            extra = {"error_type": "KeyboardInterrupt", "error_message": "interrupted"}
        else:
            status = "error"
            message = str(exc) + (f" (and {len(leaves) - 1} more raised at the same instant)"
                                  if len(leaves) > 1 else "")
            error = f"{type(exc).__name__}: {message}"
            extra = {"error_type": type(exc).__name__, "error_message": message}
    digest = w.close(status, **extra)
    return RunResult(str(out) if out else None, digest, w.events,
                     status, cluster.sched.now / US, time.perf_counter() - wall0,
                     cluster.sched.delivered, error, cluster.sched.delivered_frames,
                     stopped_by if status == "aborted" else None)


@contextlib.contextmanager
def _young_gc_only() -> Iterator[None]:
    """Collect garbage less often during a run (restored afterwards).

    A run allocates a stream of short-lived acyclic objects (messages, effects, trace
    dicts) and keeps a growing heap of long-lived ones (the logs). With CPython's default
    thresholds (700, 10, 10) the cyclic collector ran ~2,000 young and 15 full collections
    on the 60 s reference run — the full ones traversing every record of every log — and
    found no garbage at all; that was ~12 % of the run's CPU time (bench/runtime.py).
    Reference counting frees the acyclic objects anyway; young cycles (Trio's cancelled
    scopes on a crash, tracebacks) are still collected every 10,000 allocations; a full
    collection is left for after the run.
    """
    old = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, old[1], GC_FULL_EVERY)
    try:
        yield
    finally:
        gc.set_threshold(*old)


def _leaves(exc: BaseException) -> list[BaseException]:
    """What ended a run, without Trio's nursery groups: every exception raised, an interrupt
    first, then by type name and message — several actors raising at one virtual instant
    reach the group in Trio's scheduling order, which must not decide what the trace says."""
    if isinstance(exc, BaseExceptionGroup):
        out = [leaf for sub in exc.exceptions for leaf in _leaves(sub)]
    else:
        out = [exc]
    return sorted(out, key=lambda e: (not isinstance(e, KeyboardInterrupt),
                                      type(e).__name__, str(e)))
