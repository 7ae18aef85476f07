"""Nemeses: fault plans generated from the seed, after Jepsen's nemesis kinds.

``generate(scenario, rng)`` turns ``[faults] nemesis = [...]`` into an explicit plan (the
same entries a hand-written ``[[faults.plan]]`` has), so every random run records the plan
it used and can be replayed or shrunk like a scripted one. Faults start at exponential
intervals (mean ``interval_s``) during the workload phase and last ``fault_duration_s``
(0.5x-1.5x). Targets are resolved here, from the seed, except "the current leader",
which only the running cluster knows (``leader:<topic>-<partition>``).

**Fault budget** (``budget = true``): at most ``min.insync.replicas - 1`` broker crashes
are in flight at once — a crash counts from its start until ``RECOVERY_GAP_S`` after its
restart, the time a restarted broker needs to rejoin the ISR — because every kill is an
unclean shutdown and, with ELR, removes the broker from ISR and ELR until it has caught
up. That is the most a configuration promises to survive, so a safe configuration must
show no anomaly. Without the budget anything goes.

Kinds beyond Jepsen's (appended; the draws of the older kinds are unchanged):
``pause_controller`` and ``delay_controller`` stall or slow the metadata quorum (an
AlterPartition in flight waits); with a controller quorum (``cluster.controller_quorum``)
``kill_controller`` and ``pause_controller`` target the active controller or any voter
(drawn), ``isolate_controller`` cuts one of them from the other voters or from everyone,
and ``lose_quorum`` takes down or cuts off a majority of the voters (crash or isolate,
drawn) — both need a quorum; ``cut`` cuts one direction of a random broker pair;
``cut_leader`` cuts the link from the current leader of a random partition to one of
its followers (its fetches still arrive: the leader counts them, its answers wait for the
heal; every cut is silent, as iptables DROP is, and TCP retransmits what it holds);
``partition_reject`` is ``partition`` with iptables REJECT: frames across are answered
with resets, so requests fail at once instead of waiting;
``deafen`` cuts every link from the other brokers to a random broker (one way only);
``power_outage`` takes power from every broker at once, each returning after its own delay;
``split`` is Jepsen's random halves over every node, the controller and clients included,
so a client may keep reaching a broker that the rest of the cluster no longer hears (the
other partition kinds cut a broker from clients too); ``stall_fetcher`` stops one replica
fetcher thread of a random broker (for a random leader broker and fetcher id);
``preferred_election`` runs ``kafka-leader-election --election-type preferred`` on every
partition (an operation: leadership moves back to the first assigned replicas that can
take it); ``reassign`` moves a random partition of a data topic to a random set of brokers
of its replication factor (``kafka-reassign-partitions``; an operation that adds replicas
before it removes any, so not counted by the budget), cancelled after the fault duration
one time in three where the era can cancel (KIP-455); ``add_broker`` starts the next spare
broker (``cluster.spare.brokers``), which later faults and reassignments may then pick;
``decommission`` moves a random broker's replicas away and retires it (never leaving fewer
brokers than the largest replication factor plus one; later faults no longer pick it);
``add_partitions`` gives a random data topic one or two more partitions (an operation: the
new partitions are created fully replicated, so not counted by the budget);
``corrupt_disk`` damages the last record batch of a random data-topic partition on a
random broker hosting it (in the cluster's first placement; a broker that no longer hosts
it by then is traced as skipped): a leader's damage strands its followers behind it, a
follower's waits for its next unclean restart or for it to lead (not counted by the
budget: nothing stops).

**Swarm mode** (``nemesis = ["swarm"]`` is not a kind; use ``swarm = true`` upstream): each
seed draws its own subset of the listed kinds, so rare combinations get whole runs.
"""

from __future__ import annotations

import random
from typing import Any

from actors.eras import rules_for
from emulator.scenario import client_nodes

RECOVERY_GAP_S = 10.0


def generate(sc: dict[str, Any], rng: random.Random, *, swarm: bool = False
             ) -> list[dict[str, Any]]:
    faults = sc["faults"]
    kinds = list(faults["nemesis"])
    if not kinds:
        return []
    if swarm:
        kinds = [k for k in kinds if rng.random() < 0.5] or [rng.choice(kinds)]
    brokers = [f"broker-{b}" for b in range(1, sc["cluster"]["brokers"] + 1)]
    voters = [f"controller-{3000 + i}" for i in range(sc["cluster"].get("controller_quorum", 0))]
    spares = list(range(sc["cluster"]["brokers"] + 1,
                        sc["cluster"]["brokers"] + sc["cluster"]["spare.brokers"] + 1))
    added: list[int] = []
    # topics that a create_topic step creates may not exist when a fault starts
    topics = [t for t in sc["topics"] if t["create_at_start"]]
    counts = {t["name"]: t["partitions"] for t in topics}
    min_isr = min(t["min.insync.replicas"] for t in topics)
    lossy_budget = max(0, min_isr - 1) if faults["budget"] else len(brokers)
    end = float(sc["duration_s"])
    mean = float(faults["interval_s"])
    base_dur = float(faults["fault_duration_s"])
    plan: list[dict[str, Any]] = []
    busy: list[tuple[float, float, str, bool]] = []   # (start, stop, node, lossy)
    t = rng.expovariate(1.0 / mean)
    while t < end:
        kind = rng.choice(kinds)
        dur = round(base_dur * rng.uniform(0.5, 1.5), 3)
        at = round(t, 3)
        t += rng.expovariate(1.0 / mean)
        live = [b for b in brokers if not any(s <= at < e and n == b for s, e, n, _ in busy)]
        if not live:
            continue
        node = rng.choice(live)
        entry: dict[str, Any]
        if kind in ("kill_leader", "power_loss_leader"):
            # the current leader of a random partition, resolved when the fault starts
            t0 = rng.choice(topics)
            node = f"leader:{t0['name']}-{rng.randrange(t0['partitions'])}"
            kind = "kill" if kind == "kill_leader" else "power_loss"
        if kind in ("kill", "power_loss"):
            lossy = kind == "power_loss"
            if faults["budget"]:
                # a crash must not overlap another broker crash or the time the previous
                # one needs to rejoin the ISR (every kill is an unclean shutdown: with ELR
                # the controller drops the broker from ISR and ELR until it catches up)
                near = [x for x in busy if x[0] <= at + dur and at <= x[1] + RECOVERY_GAP_S]
                if len(near) >= lossy_budget or (lossy and near):
                    continue
            entry = {"at_s": at, "fault": "power_loss" if lossy else "crash",
                     "target": node, "duration_s": dur}
            busy.append((at, at + dur, node, lossy))
        elif kind == "pause":
            entry = {"at_s": at, "fault": "pause", "target": node, "duration_s": dur}
        elif kind == "partition":
            side = sorted(rng.sample(brokers, max(1, len(brokers) // 2)))
            entry = {"at_s": at, "fault": "partition", "target": side, "duration_s": dur}
        elif kind == "partition_reject":
            side = sorted(rng.sample(brokers, max(1, len(brokers) // 2)))
            entry = {"at_s": at, "fault": "partition_reject", "target": side,
                     "duration_s": dur}
        elif kind == "isolate":
            entry = {"at_s": at, "fault": "isolate", "target": node, "duration_s": dur}
        elif kind == "isolate_leader":
            t0 = rng.choice(topics)
            p = rng.randrange(t0["partitions"])
            entry = {"at_s": at, "fault": "isolate", "target": f"leader:{t0['name']}-{p}",
                     "duration_s": dur}
        elif kind == "bridge":
            # two halves that only the bridge node connects (Jepsen's bridge)
            others = [b for b in brokers if b != node]
            rng.shuffle(others)
            half = others[: len(others) // 2]
            entry = {"at_s": at, "fault": "partition", "target": sorted(half),
                     "duration_s": dur}
        elif kind == "delay":
            entry = {"at_s": at, "fault": "delay", "target": node, "duration_s": dur,
                     "extra_ms": round(rng.uniform(50, 2000), 1)}
        elif kind == "drop":
            entry = {"at_s": at, "fault": "drop", "target": node, "duration_s": dur,
                     "rate": round(rng.uniform(0.1, 0.9), 3)}
        elif kind == "kill_controller":
            entry = {"at_s": at, "fault": "crash", "target": _controller(rng, voters),
                     "duration_s": dur}
        elif kind == "pause_controller":
            # the metadata quorum stalls: AlterPartition, heartbeats and partition states
            # wait (they are handled, in order, when it resumes)
            entry = {"at_s": at, "fault": "pause", "target": _controller(rng, voters),
                     "duration_s": dur}
        elif kind == "isolate_controller":
            # a controller node (the active one, or any voter) cut from the other voters, or
            # from everyone
            entry = {"at_s": at, "fault": "isolate_controller",
                     "target": _controller(rng, voters),
                     "scope": rng.choice(("voters", "all")), "duration_s": dur}
        elif kind == "lose_quorum":
            # a majority of the voters down or cut off: nothing commits until they return
            entry = {"at_s": at, "fault": "lose_quorum", "how": rng.choice(("crash", "isolate")),
                     "duration_s": dur}
        elif kind == "delay_controller":
            # a slow metadata quorum: every request to it and every update from it is late
            entry = {"at_s": at, "fault": "delay", "target": "controller", "duration_s": dur,
                     "extra_ms": round(rng.uniform(50, 2000), 1)}
        elif kind == "cut":
            # an asymmetric link failure: src's frames no longer reach dst, dst's reach src
            if len(brokers) < 2:
                continue
            src, dst = rng.sample(brokers, 2)
            entry = {"at_s": at, "fault": "cut", "target": [src, dst], "duration_s": dur}
        elif kind == "cut_leader":
            # the current leader's frames no longer reach one of its followers, whose
            # fetches still reach the leader (both resolved when the fault starts)
            t0 = rng.choice(topics)
            tp = f"{t0['name']}-{rng.randrange(t0['partitions'])}"
            k = rng.randrange(max(1, t0["replication.factor"] - 1))
            entry = {"at_s": at, "fault": "cut", "target": [f"leader:{tp}", f"follower:{tp}/{k}"],
                     "duration_s": dur}
        elif kind == "deafen":
            # the broker hears nothing from the other brokers (a one-way partition): its
            # fetches and answers still arrive, the answers to it and its leaders' data
            # do not; its link to the controller is intact
            for b in brokers:
                if b != node:
                    plan.append({"at_s": at, "fault": "cut", "target": [b, node],
                                 "duration_s": dur})
            continue
        elif kind == "power_outage":
            # every broker loses power at once (KIP-101's "power outage which affects both
            # of them"); each comes back after its own draw of the fault duration. Beyond
            # any fault budget; only when no broker is down already, so that each restart
            # is the one its own outage drew, and ends within the workload phase (the heal
            # would restart every broker at once)
            if faults["budget"] or len(live) < len(brokers):
                continue
            downs = [round(base_dur * rng.uniform(0.5, 1.5), 3) for _ in brokers]
            if at + max(downs) >= end:
                continue
            for b, down in zip(brokers, downs, strict=True):
                plan.append({"at_s": at, "fault": "power_loss", "target": b, "duration_s": down})
                busy.append((at, at + down, b, True))
            continue
        elif kind == "split":
            # Jepsen's random halves over every node, clients and controller included: a
            # client keeps talking to the brokers on its side (a producer can still reach a
            # leader that its followers and the controller no longer hear)
            if len(brokers) < 2:
                continue
            side_b = rng.sample(brokers, rng.randrange(1, len(brokers)))
            # (with a controller quorum each voter takes its own side)
            rest = [n for n in (*(voters or ["controller"]), *client_nodes(sc))
                    if rng.random() < 0.5]
            entry = {"at_s": at, "fault": "partition", "target": sorted([*side_b, *rest]),
                     "duration_s": dur}
        elif kind == "controlled_shutdown":
            # a rolling-restart step: counted like a kill by the budget (the broker is out
            # of the ISRs until it catches up after its restart)
            if faults["budget"]:
                near = [x for x in busy if x[0] <= at + dur and at <= x[1] + RECOVERY_GAP_S]
                if len(near) >= lossy_budget:
                    continue
            entry = {"at_s": at, "fault": "controlled_shutdown", "target": node,
                     "duration_s": dur}
            busy.append((at, at + dur, node, False))
        elif kind == "preferred_election":
            entry = {"at_s": at, "fault": "preferred_election", "target": "all"}
        elif kind == "stall_fetcher":
            others = [b for b in brokers if b != node]
            if not others:
                continue
            entry = {"at_s": at, "fault": "stall_fetcher", "target": node,
                     "source": rng.choice(others),
                     "fetcher_id": rng.randrange(sc["cluster"]["num.replica.fetchers"]),
                     "duration_s": dur}
        elif kind == "add_broker":
            # the next spare broker (cluster.spare.brokers) joins; the reassign nemesis
            # may then move replicas to it
            spare = [b for b in spares if b not in added]
            if not spare:
                continue
            added.append(spare[0])
            brokers.append(f"broker-{spare[0]}")
            entry = {"at_s": at, "fault": "add_broker", "target": f"broker-{spare[0]}"}
        elif kind == "decommission":
            # a broker leaves for good, once its replicas have moved (never below the
            # largest replication factor plus one, so they have somewhere to go; with
            # consumers, __consumer_offsets' replicas must move too)
            widest = max(t["replication.factor"] for t in topics)
            if sc["consumers"]:
                widest = max(widest, int(sc["cluster"]["offsets.topic.replication.factor"]))
            if len(brokers) <= widest + 1:
                continue
            brokers.remove(node)
            entry = {"at_s": at, "fault": "decommission", "target": node}
        elif kind == "reassign":
            t0 = rng.choice(topics)
            ids = sorted(int(b[7:]) for b in brokers)
            target = rng.sample(ids, min(len(ids), t0["replication.factor"]))
            entry = {"at_s": at, "fault": "reassign",
                     "target": f"{t0['name']}-{rng.randrange(t0['partitions'])}",
                     "replicas": target}
            if rng.random() < 1 / 3 and rules_for(sc["protocol"], ()).reassignment_cancel:
                entry["duration_s"] = dur
        elif kind == "add_partitions":
            # kafka-topics --alter: one or two more partitions for a random data topic (at
            # most four times its first count); keyed records move, groups rebalance
            t0 = rng.choice(topics)
            new = counts[t0["name"]] + rng.randint(1, 2)
            if new > 4 * t0["partitions"]:
                continue
            counts[t0["name"]] = new
            entry = {"at_s": at, "fault": "add_partitions", "target": t0["name"],
                     "partitions": new}
        elif kind == "corrupt_disk":
            # the cluster's first placement: partition p on brokers p, p+1, ... (mod n)
            t0 = rng.choice(topics)
            p = rng.randrange(t0["partitions"])
            first = sc["cluster"]["brokers"]
            hosts = [(p + i) % first + 1 for i in range(min(first, t0["replication.factor"]))]
            entry = {"at_s": at, "fault": "corrupt_disk", "target": f"broker-{rng.choice(hosts)}",
                     "topic_partition": f"{t0['name']}-{p}", "offset": -1}
        else:
            continue
        plan.append(entry)
    return plan



def _controller(rng: random.Random, voters: list[str]) -> str:
    """A controller fault's target: "controller" (the active one when the fault starts);
    with a controller quorum, that or any voter, drawn (no draw without a quorum, so the
    plans of the single-controller scenarios are unchanged)."""
    return rng.choice(["controller", *voters]) if voters else "controller"
